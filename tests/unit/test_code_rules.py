"""Rules of the codebase that a reviewer should not have to check by hand.

- SQL lives in email_rag/db/sql/*.sql: Python outside email_rag/db/ holds no SQL text
  (string literals and f-strings alike), and no named query is extended by the
  caller (``sql(...) + ...``, ``sql(...).format``): list slots are expanded by
  ``sql(name, ids=n)`` inside email_rag/db/.
- The chaos counter-check (the naive column) is harness code: no module outside
  the harness (harness/email_rag_harness/) names it (``naive``, ``safeguards``,
  ``hardened``) in code, and no product SQL file holds a naive query.
- Every named query uses one placeholder style, named pyformat (``%(mailbox_id)s``):
  no ``?``, no bare ``%s``; list slots expand in the same style (``%(ids_0)s``).
- Every named query that writes a status column is conditional on the current
  status (``... AND status = %(from)s``, ``state IN (...)``, ``IF(state IN ...)``):
  a late writer cannot overwrite a newer status (issue 13, defect 4). The chaos
  harness's own queries (harness/email_rag_harness/chaos/naive.sql) are not the product's.
- The package's folders are its layers (``LAYERS``, lowest first): a module imports
  from its own first-level group or a lower one, never a higher one; no two groups
  import each other and no cycle runs through several. Imports inside functions
  count, and so do ``if TYPE_CHECKING:`` blocks: an annotation that names a higher
  layer is a dependency on it too (a lower layer declares the port it needs).
  Modules live in a layer: none at the package's top besides ``__init__``/``__main__``.
- No product function is longer than ``LONGEST_FUNCTION`` lines (from its ``def`` to its
  last line): a longer one reads better as a sequence of named steps.
- The test harness (chaos run, doubles, demo, benchmarks) is a distribution of its own,
  harness/ (package ``email_rag_harness``): email_rag never imports it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIRS = ["email_rag", "harness/email_rag_harness"]
HARNESS = Path("harness")
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
    assert found == [], "SQL belongs in email_rag/db/sql/*.sql:\n" + "\n".join(found)


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


COUNTER_CHECK = re.compile(r"naive|safeguards|hardened", re.IGNORECASE)
COUNTER_CHECK_ALLOWED = {
    # the retired variable's name, so that a leftover one is reported (settings.RETIRED)
    (Path("email_rag/core/settings.py"), "EMAIL_RAG_SAFEGUARDS"),
}
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
    """The counter-check's variants are harness classes (harness/email_rag_harness/chaos/naive.py) that the
    harness injects; a deployment has nothing to switch and the product no naive branch."""
    found = []
    for rel, src in python_files(outside_db=False):
        if rel.is_relative_to(HARNESS):
            continue
        found += [f"{rel}:{n}: {word}" for n, word in counter_check_names(src)
                  if (rel, word) not in COUNTER_CHECK_ALLOWED]
    assert found == [], "the counter-check belongs to harness/email_rag_harness/chaos/:\n" + "\n".join(found)


def test_no_product_sql_file_holds_a_naive_query():
    from email_rag.db.queries import SQL_DIR

    found = [f"{p.name}:{n}: {line.strip()}" for p in sorted(SQL_DIR.glob("*.sql"))
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if COUNTER_CHECK.search(line)]
    assert found == [], "the counter-check's queries belong to harness/email_rag_harness/chaos/naive.sql"


def every_query() -> dict[str, str]:
    """Every named query: the product's and the harness's (loaded on import)."""
    import email_rag_harness  # noqa: F401 - registers the harness's sql/*.sql
    import email_rag_harness.chaos.naive  # noqa: F401 - registers the harness's naive.sql

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
        if not re.search(r"\bUPDATE\b", query, re.IGNORECASE):
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


# The layers of email_rag, lowest first. A group imports only itself and groups before it.
LAYERS = [
    "core",  # states, records, errors, retry policy, settings, timing, routing, ports: no I/O
    "mail",  # reading mail: headers, MIME, addresses, attachments (pure)
    "db",  # MariaDB: connection, named queries (sql/), migrations, audit log, status stores
    "adapters",  # one module per outside system (IMAP, SMTP, LLM, queue, vectors, graph)
    "llm",  # policy, budget, call slots, local server, prompts, what it reads of a mail, draft checks
    "jobs",  # JobStore, dispatch (the outbox), what a job handler returns
    "indexing",  # stage: chunk, embed, store, retrieve, the periodic sync
    "classification",  # values, rules, the team's history model, the LLM task, the classifier
    "knowledge",  # the team's knowledge: documents, passages, the article store, search, import
    "ingest",  # stage: poll / IDLE a mailbox, store new mail and its job in one transaction
    "pipeline",  # stage: the steps of one mail (parse, classify, index, retrieve, draft)
    "sending",  # stage: review decisions, compose, send exactly once, reconcile
    "auth",  # sign-in: accounts, logins, sessions, the first start
    "privacy",  # a person's data: export, erasure, retention, erasure requests
    "review",  # the desk's casework: queue, assignment, notes, no-reply list, console, timeline
    "wiring",  # Services: the composition root; builds adapters, stores and the stage objects
    "runtime",  # RQ task entry points, the job runner, the scheduler process, maintenance
    "ops",  # health and metrics
    "web",  # interface: the web UI
    "cli",  # interface: the command line (starts the web, worker, scheduler; hands over to
    #        the harness's programs: chaos, demo, bench, sample-mailbox)
    "__main__",  # python -m email_rag
]
# Imports from a group to a higher one that are allowed for now: (from, to) -> why.
# Empty: any back edge is a finding.
KNOWN_BACK_EDGES: dict[tuple[str, str], str] = {}


def imported_modules(source: str, module: str, is_package: bool,
                     annotations: bool = False) -> set[str]:
    """Absolute names of everything ``module`` imports, inside functions too, ``if
    TYPE_CHECKING:`` blocks only with ``annotations`` (``from a import b`` yields ``a`` and
    ``a.b``)."""
    tree = ast.parse(source)
    typing_only = set() if annotations else {
        id(n) for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for n in ast.walk(block)}
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + [node.module or ""])
                base = base.rstrip(".")
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def group_edges(package: str = "email_rag",
                annotations: bool = False) -> dict[tuple[str, str], list[str]]:
    """(group, imported group) -> the modules that import across, for the package's
    first-level groups (a sub-package, or a module at its top); with ``annotations`` the
    imports in ``if TYPE_CHECKING:`` blocks count too."""
    root = ROOT / package
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        if module == package:
            continue
        group = module.split(".")[1]
        for target in imported_modules(path.read_text(), module, is_package, annotations):
            parts = target.split(".")
            if parts[0] == package and len(parts) > 1 and parts[1] != group:
                edges.setdefault((group, parts[1]), []).append(module)
    return edges


def cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one group (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_scanner_resolves_relative_imports_and_skips_type_checking():
    src = ("from typing import TYPE_CHECKING\n"
           "from ..db import sql\n"
           "from . import sibling\n"
           "if TYPE_CHECKING:\n    from ..web.app import App\n"
           "def f():\n    from ..cli import main\n")
    found = imported_modules(src, "email_rag.jobs.store", is_package=False)
    assert {"email_rag.db", "email_rag.db.sql", "email_rag.jobs.sibling", "email_rag.cli"} <= found
    assert not any(m.startswith("email_rag.web") for m in found)


def test_the_import_scanner_sees_type_checking_imports_when_annotations_count():
    src = ("from typing import TYPE_CHECKING\n"
           "if TYPE_CHECKING:\n    from ..wiring.services import Services\n")
    found = imported_modules(src, "email_rag.review.desk", is_package=False, annotations=True)
    assert "email_rag.wiring.services.Services" in found


def test_the_cycle_finder_sees_two_way_pairs_and_longer_rings():
    assert cycles({("a", "b"), ("b", "a"), ("c", "a")}) == [["a", "b"]]
    assert cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert cycles({("a", "b"), ("b", "c")}) == []


def test_every_module_of_the_package_lives_in_a_declared_layer():
    top_modules = sorted(p.name for p in (ROOT / "email_rag").glob("*.py")
                         if p.name not in {"__init__.py", "__main__.py"})
    assert top_modules == [], "put each module in the folder of its layer"
    groups = sorted({p.name for p in (ROOT / "email_rag").iterdir()
                     if p.is_dir() and (p / "__init__.py").exists()} | {"__main__"})
    assert sorted(set(groups) - set(LAYERS)) == [], "add the new package to LAYERS"
    assert sorted(set(LAYERS) - set(groups)) == [], "a declared layer has no package"


def test_imports_point_down_the_layers():
    """GIVEN the layers in LAYERS THEN no group imports a higher one (except the listed
    KNOWN_BACK_EDGES), no two groups import each other, and no cycle joins several."""
    edges = group_edges()
    rank = {g: i for i, g in enumerate(LAYERS)}
    upward = {e: sorted(set(m)) for e, m in edges.items()
              if rank[e[0]] < rank[e[1]] and e not in KNOWN_BACK_EDGES}
    assert upward == {}, "a lower layer imports a higher one: move the code down, or pass " \
        "a callable / a port in from the higher layer:\n" + "\n".join(
            f"{a} -> {b}: {', '.join(m)}" for (a, b), m in sorted(upward.items()))
    two_way = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert two_way == []
    assert cycles(edges) == []
    stale = sorted(e for e in KNOWN_BACK_EDGES if e not in edges)
    assert stale == [], "this back edge is gone: remove it from KNOWN_BACK_EDGES"


def test_annotation_only_imports_point_down_the_layers_too():
    """GIVEN the layers in LAYERS, counting the imports in ``if TYPE_CHECKING:`` blocks THEN
    no group names a higher one even in an annotation (a lower layer that needs something of
    a higher one declares a port for it, and the higher layer passes it in), no two groups
    name each other, and no cycle joins several."""
    edges = group_edges(annotations=True)
    rank = {g: i for i, g in enumerate(LAYERS)}
    upward = {e: sorted(set(m)) for e, m in edges.items() if rank[e[0]] < rank[e[1]]}
    assert upward == {}, "an annotation names a higher layer: declare a port in the lower " \
        "one:\n" + "\n".join(f"{a} -> {b}: {', '.join(m)}" for (a, b), m in sorted(upward.items()))
    assert sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges}) == []
    assert cycles(edges) == []


def test_the_readmes_layer_map_lists_the_layers_in_order():
    """README 'Layout: the layers' says its table is LAYERS: one row per package, in order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Layout: the layers"):readme.index("## States")]
    rows = re.findall(r"^\| `(\w+)/` \|", section, flags=re.MULTILINE)
    assert rows == [g for g in LAYERS if g != "__main__"]


def harness_imports(package: str = "email_rag") -> list[str]:
    """``module:line -> name`` for every import of the harness by the package, inside
    functions and ``if TYPE_CHECKING:`` blocks too (a relative import cannot reach it)."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno} -> {n}" for n in names
                      if n.split(".")[0] == "email_rag_harness"]
    return found


def test_the_product_never_imports_the_harness():
    """GIVEN the harness's own distribution (harness/, package email_rag_harness) THEN no
    module of email_rag imports it, inside functions and TYPE_CHECKING blocks included: the
    product's commands of the harness hand over to its programs (cli.PROGRAMS) by name."""
    assert harness_imports() == []
    assert not (ROOT / "email_rag" / "chaos").exists() and not (ROOT / "email_rag" / "testing").exists()


def test_the_harness_import_check_sees_an_import_in_a_function(tmp_path, monkeypatch):
    pkg = tmp_path / "prod"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("def f():\n    from email_rag_harness.testing import x\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (pkg / "web.py").write_text("import email_rag_harness.chaos as c\nfrom . import cli\n")
    assert harness_imports("prod") == ["prod/cli/__init__.py:2 -> email_rag_harness.testing",
                                       "prod/web.py:1 -> email_rag_harness.chaos"]


def test_the_product_sql_holds_no_harness_query():
    """GIVEN the harness's queries in harness/email_rag_harness/sql/ THEN no product SQL file
    holds a query of the benchmarks, the chaos run or the demo."""
    harness = [n for n in product_queries() if n.startswith(("bench_", "chaos_", "demo_"))]
    assert harness == []


LONGEST_FUNCTION = 80


def function_lengths(source: str, module: str) -> list[tuple[int, str]]:
    """(lines from ``def`` to the last line, qualified name) of every function of a module,
    methods and nested functions included."""
    found = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((child.end_lineno - child.lineno + 1, f"{module}.{prefix}{child.name}"))
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return found


def test_the_length_check_counts_methods_and_nested_functions():
    src = "class A:\n    def f(self):\n        def g():\n            pass\n        return g\n"
    assert sorted(function_lengths(src, "m")) == [(2, "m.A.f.g"), (4, "m.A.f")]


def test_no_product_function_is_longer_than_the_limit():
    """GIVEN the package's functions THEN none is longer than LONGEST_FUNCTION lines."""
    found = [(n, name) for p in sorted((ROOT / "email_rag").rglob("*.py"))
             for n, name in function_lengths(p.read_text(), str(p.relative_to(ROOT)))
             if n > LONGEST_FUNCTION]
    assert found == [], "split these into named steps:\n" + "\n".join(
        f"{name}: {n} lines" for n, name in sorted(found, reverse=True))
