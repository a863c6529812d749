"""Rules of the codebase that a reviewer should not have to check by hand.

- SQL lives in email_rag/sql/*.sql: Python outside email_rag/db/ holds no SQL text
  (string literals and f-strings alike), and no named query is extended by the
  caller (``sql(...) + ...``, ``sql(...).format``): list slots are expanded by
  ``sql(name, ids=n)`` inside email_rag/db/.
- The chaos counter-check (the naive column) is harness code: no module outside
  email_rag/chaos/ and email_rag/testing/ names it (``naive``, ``safeguards``,
  ``hardened``) in code, and no product SQL file holds a naive query.
- Every named query uses one placeholder style, named pyformat (``%(mailbox_id)s``):
  no ``?``, no bare ``%s``; list slots expand in the same style (``%(ids_0)s``).
- Every named query that writes a status column is conditional on the current
  status (``... AND status = %(from)s``, ``state IN (...)``, ``IF(state IN ...)``):
  a late writer cannot overwrite a newer status (issue 13, defect 4). The chaos
  harness's own queries (email_rag/chaos/naive.sql) are not the product's.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIRS = ["email_rag", "workers", "cron", "bench"]
SQL_TEXT = re.compile(
    r"\b(SELECT\b[\s\S]*?\bFROM|INSERT\s+(IGNORE\s+)?INTO|UPDATE\s+`?\w+`?\s+SET|DELETE\s+FROM"
    r"|REPLACE\s+INTO|(CREATE|DROP|ALTER)\s+(TABLE|DATABASE|INDEX))\b", re.IGNORECASE)
EXTENDED = re.compile(r"""sql\(\s*["'][a-z_0-9]+["']\s*\)\s*(\+|\.format\b|\.replace\b|%)""")


def python_files(outside_db: bool = True):
    for d in PYTHON_DIRS:
        for p in sorted((ROOT / d).rglob("*.py")):
            rel = p.relative_to(ROOT)
            if outside_db and rel.parts[:2] == ("email_rag", "db"):
                continue
            yield rel, p.read_text()


def sql_literals(source: str):
    tree = ast.parse(source)
    inside_f = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in inside_f:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values
                           if isinstance(v, ast.Constant) and isinstance(v.value, str))
        else:
            continue
        if SQL_TEXT.search(text):
            yield node.lineno, text[:60]


def test_no_sql_in_python_outside_the_db_package():
    found = [f"{rel}:{line}: {text!r}" for rel, src in python_files()
             for line, text in sql_literals(src)]
    assert found == [], "SQL belongs in email_rag/sql/*.sql:\n" + "\n".join(found)


def test_no_string_outside_the_db_package_starts_like_sql():
    """The plain grep a reviewer runs finds nothing either (IMAP command names such as
    SELECT and DELETE are passed as names, not as text that reads like SQL)."""
    found = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "email_rag").rglob("*.py")
             if "db" not in p.relative_to(ROOT / "email_rag").parts[:1]
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r'"(SELECT|UPDATE|INSERT|DELETE) ', line)]
    assert found == []


def test_the_scanner_sees_sql_in_strings_and_f_strings():
    src = 'a = "SELECT id FROM jobs"\nb = f"UPDATE jobs SET x = {1}"\nc = "selected from the list"'
    assert [line for line, _ in sql_literals(src)] == [1, 2]


def test_no_named_query_is_extended_by_its_caller():
    found = [f"{rel}:{n}" for rel, src in python_files()
             for n, line in enumerate(src.splitlines(), 1) if EXTENDED.search(line)]
    assert found == []


HARNESS_DIRS = {("email_rag", "chaos"), ("email_rag", "testing")}
COUNTER_CHECK = re.compile(r"naive|safeguards|hardened", re.IGNORECASE)
COUNTER_CHECK_ALLOWED = {
    # the retired variable's name, so that a leftover one is reported (settings.RETIRED)
    (Path("email_rag/settings.py"), "EMAIL_RAG_SAFEGUARDS"),
}
# the harness's command: it chooses which columns of the harness run (``--naive``)
HARNESS_COMMANDS = {Path("email_rag/cli/chaos.py")}
IDENTIFIER_STRING = re.compile(r"""^[a-zA-Z]*("{3}|'{3}|"|')(\w+)\1$""")


def counter_check_names(source: str) -> list[tuple[int, str]]:
    """Identifiers, and strings that are one identifier (a query, attribute or setting
    name), that name the counter-check; comments and prose in strings do not count."""
    import io
    import tokenize

    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME:
            word = tok.string
        elif tok.type == tokenize.STRING and (m := IDENTIFIER_STRING.match(tok.string)):
            word = m.group(2)
        else:
            continue
        if COUNTER_CHECK.search(word):
            found.append((tok.start[0], word))
    return found


def test_the_counter_check_scanner_sees_names_and_query_names_not_prose():
    src = ('x = svc.stores.naive\nq = sql("jobs_claim_naive")\nif settings.safeguards:\n'
           '    pass  # naive UTC\n"""A stored time (naive UTC)."""\n')
    assert counter_check_names(src) == [(1, "naive"), (2, "jobs_claim_naive"),
                                        (3, "safeguards")]


def test_no_product_module_names_the_counter_check():
    """The counter-check's variants are harness classes (email_rag/chaos/naive.py) that the
    harness injects; a deployment has nothing to switch and the product no naive branch."""
    found = []
    for rel, src in python_files(outside_db=False):
        if rel.parts[:2] in HARNESS_DIRS or rel in HARNESS_COMMANDS:
            continue
        found += [f"{rel}:{n}: {word}" for n, word in counter_check_names(src)
                  if (rel, word) not in COUNTER_CHECK_ALLOWED]
    assert found == [], "the counter-check belongs to email_rag/chaos/:\n" + "\n".join(found)


def test_no_product_sql_file_holds_a_naive_query():
    from email_rag.db.queries import SQL_DIR

    found = [f"{p.name}:{n}: {line.strip()}" for p in sorted(SQL_DIR.glob("*.sql"))
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if COUNTER_CHECK.search(line)]
    assert found == [], "the counter-check's queries belong to email_rag/chaos/naive.sql"


def every_query() -> dict[str, str]:
    """Every named query: the product's and the chaos harness's (loaded on import)."""
    import email_rag.chaos.naive  # noqa: F401 - registers the harness's naive.sql
    from email_rag.db.queries import all_queries

    return all_queries()


def product_queries() -> dict[str, str]:
    from email_rag.db.queries import SQL_DIR, parse_named_queries

    return {name: q for p in sorted(SQL_DIR.glob("*.sql"))
            for name, q in parse_named_queries(p.read_text(), p.name).items()}


WRITES_STATUS = re.compile(r"(?<![a-z_])(status|state)\s*=\s*(%\(|'|IF\()", re.IGNORECASE)


def _split_where(query: str) -> tuple[str, str]:
    parts = re.split(r"\bWHERE\b", query, maxsplit=1, flags=re.IGNORECASE)
    return parts[0], parts[1] if len(parts) > 1 else ""


def test_every_status_write_in_sql_is_conditional_on_the_current_status():
    unconditional = []
    for name, query in product_queries().items():
        if name.startswith("bench_") or not re.search(
                r"\bUPDATE\b", query, re.IGNORECASE):
            continue
        head, where = _split_where(query)
        assignments = re.split(r"\bUPDATE\b", head, flags=re.IGNORECASE)[-1]
        if not WRITES_STATUS.search(assignments):
            continue
        guarded = (re.search(r"(?<![a-z_])(status|state)\s*(=|IN\b|<>|<=>)", where, re.IGNORECASE)
                   or re.search(r"IF\(\s*state\s+IN", assignments, re.IGNORECASE))
        if not guarded:
            unconditional.append(name)
    assert unconditional == []


SQL_LITERAL = re.compile(r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`""")
NAMED_MARK = re.compile(r"%\(\w+\)s")


def other_placeholders(query: str) -> list[str]:
    """Placeholders in ``query`` that are not named pyformat: ``?``, ``%s``, ``%d``, ...
    (text inside SQL string literals and quoted names does not count)."""
    code = NAMED_MARK.sub("", SQL_LITERAL.sub("''", query))
    return re.findall(r"\?|%.?", code)


def test_the_placeholder_check_sees_qmark_and_bare_format_marks():
    assert other_placeholders("SELECT id FROM t WHERE a = ? AND b = %s") == ["?", "%s"]
    assert other_placeholders("SELECT id FROM t WHERE a = %(a)s AND b LIKE '%x?%'") == []
    assert other_placeholders("UPDATE t SET a = %(a)s WHERE b = %d") == ["%d"]


def test_every_named_query_uses_named_placeholders():
    from email_rag.db.queries import sql

    found = {}
    for name, query in every_query().items():
        slots = {s: 2 for s in re.findall(r"\{(\w+)\}", query)}
        if "rows" in slots:
            slots["rows"] = (2, 3)
        bad = other_placeholders(sql(name, **slots))
        if bad:
            found[name] = bad
    assert found == {}, "named queries use %(name)s placeholders only:\n" + "\n".join(
        f"{n}: {b}" for n, b in found.items())


def unused_queries(names: list[str], code: str) -> list[str]:
    """Named queries that no code names: literally (``sql("x")``) or through an f-string
    whose fixed start they begin with (``sql(f"web_metrics_{n}")``)."""
    literal = set(re.findall(r"""["']([a-z_0-9]+)["']""", code))
    prefixes = re.findall(r"""sql\(\s*f["']([a-z_0-9]+)\{""", code)
    return [n for n in names if n not in literal and not n.startswith(tuple(prefixes))]


def test_the_unused_query_check_sees_literal_and_f_string_names():
    code = 'sql("a_one")\nsql(f"metrics_{n}")\n'
    assert unused_queries(["a_one", "metrics_mails", "b_two"], code) == ["b_two"]


def test_every_named_query_is_used():
    """One way to do each thing: a named query nobody calls is a second copy waiting to be
    used by mistake (four were found: ingest_jobs_by_key, jobs_dispatchable,
    bench_sends_per_draft, web_user_by_id)."""
    code = "\n".join(p.read_text() for d in [*PYTHON_DIRS, "tests"] if (ROOT / d).exists()
                     for p in (ROOT / d).rglob("*.py") if p.name != "test_code_rules.py")
    assert unused_queries(sorted(every_query()), code) == []


def test_the_linter_passes():
    """GIVEN the project's ruff rules (pyproject.toml) THEN the whole tree passes them: an unused
    import or a shadowed name is a finding here, not in a reviewer's eye."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
