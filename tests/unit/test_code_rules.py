"""Rules of the codebase that a reviewer should not have to check by hand.

- SQL lives in email_rag/sql/*.sql: Python outside email_rag/db/ holds no SQL text
  (string literals and f-strings alike), and no named query is extended by the
  caller (``sql(...) + ...``, ``sql(...).format``): list slots are expanded by
  ``sql(name, ids=n)`` inside email_rag/db/.
- The chaos counter-check's switch (``settings.safeguards``) is read where the
  services are built (email_rag/wiring/services.py) and by the harness that sets it, never in
  a domain module.
- Every named query uses one placeholder style, named pyformat (``%(mailbox_id)s``):
  no ``?``, no bare ``%s``; list slots expand in the same style (``%(ids_0)s``).
- Every named query that writes a status column is conditional on the current
  status (``... AND status = %(from)s``, ``state IN (...)``, ``IF(state IN ...)``):
  a late writer cannot overwrite a newer status (issue 13, defect 4). Only the
  chaos counter-check's naive queries are exempt, by name.
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


DOMAIN_ALLOWED = {
    Path("email_rag/wiring/services.py"),  # builds the services: chooses the variant once
    Path("email_rag/core/settings.py"),  # defines the switch
}


def test_no_domain_module_reads_the_safeguards_switch():
    found = []
    for rel, src in python_files(outside_db=False):
        if rel in DOMAIN_ALLOWED or rel.parts[:2] in {("email_rag", "chaos"), ("email_rag", "cli")}:
            continue  # the chaos harness and its command set the switch for the runs they start
        if rel.parts[0] == "bench":
            continue
        for n, line in enumerate(src.splitlines(), 1):
            if re.search(r"\.safeguards\b|\bsafeguards\s*=", line.split("#")[0]):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "choose the variant where the services are built:\n" + "\n".join(found)


NAIVE_QUERIES = {"jobs_claim_naive", "sends_insert_naive"}  # the counter-check's, on purpose
WRITES_STATUS = re.compile(r"(?<![a-z_])(status|state)\s*=\s*(%\(|'|IF\()", re.IGNORECASE)


def _split_where(query: str) -> tuple[str, str]:
    parts = re.split(r"\bWHERE\b", query, maxsplit=1, flags=re.IGNORECASE)
    return parts[0], parts[1] if len(parts) > 1 else ""


def test_every_status_write_in_sql_is_conditional_on_the_current_status():
    from email_rag.db.queries import all_queries

    unconditional = []
    for name, query in all_queries().items():
        if name in NAIVE_QUERIES or name.startswith("bench_") or not re.search(
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
    from email_rag.db.queries import all_queries, sql

    found = {}
    for name, query in all_queries().items():
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
    from email_rag.db.queries import all_queries

    code = "\n".join(p.read_text() for d in [*PYTHON_DIRS, "tests"] if (ROOT / d).exists()
                     for p in (ROOT / d).rglob("*.py") if p.name != "test_code_rules.py")
    assert unused_queries(sorted(all_queries()), code) == []


def test_the_linter_passes():
    """GIVEN the project's ruff rules (pyproject.toml) THEN the whole tree passes them: an unused
    import or a shadowed name is a finding here, not in a reviewer's eye."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
