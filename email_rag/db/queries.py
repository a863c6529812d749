"""Named SQL queries, loaded from ``email_rag/sql/*.sql``.

A file holds blocks that start with ``-- name: some_name``; names are unique
across files. ``sql("some_name")`` returns the statement text. A query with list
slots (``IN ({ids})``, ``VALUES {rows}``) is expanded here and only here:
``sql("name", ids=3)`` gives three placeholders, ``sql("name", rows=(2, 5))`` two
groups of five, in the query's own placeholder style. Callers never add text to
a named query.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def parse_named_queries(text: str, origin: str = "") -> dict[str, str]:
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [ln for ln in body.strip().splitlines() if not ln.strip().startswith("--")]
        statement = "\n".join(lines).strip().rstrip(";").strip()
        if not statement:
            raise ValueError(f"query {name!r} in {origin} is empty")
        queries[name] = statement
    return queries


@lru_cache(maxsize=1)
def all_queries() -> dict[str, str]:
    queries: dict[str, str] = {}
    for path in sorted(SQL_DIR.glob("*.sql")):
        for name, statement in parse_named_queries(path.read_text(), path.name).items():
            if name in queries:
                raise ValueError(f"query name {name!r} defined twice (again in {path.name})")
            queries[name] = statement
    return queries


def sql(name: str, **slots: int | tuple[int, int]) -> str:
    try:
        statement = all_queries()[name]
    except KeyError:
        raise KeyError(f"no SQL query named {name!r} in {SQL_DIR}") from None
    if not slots:
        return statement
    mark = "?" if "?" in statement else "%s"
    fill = {}
    for slot, n in slots.items():
        if "{" + slot + "}" not in statement:
            raise KeyError(f"query {name!r} has no list slot {{{slot}}}")
        if isinstance(n, tuple):
            rows, width = n
            fill[slot] = ", ".join(["(" + ", ".join([mark] * width) + ")"] * rows)
        else:
            fill[slot] = ", ".join([mark] * n)
    return statement.format(**fill)
