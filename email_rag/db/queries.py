"""Named SQL queries, loaded from ``email_rag/sql/*.sql``.

A file holds blocks that start with ``-- name: some_name``; names are unique
across files. ``sql("some_name")`` returns the statement text.
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


def sql(name: str) -> str:
    try:
        return all_queries()[name]
    except KeyError:
        raise KeyError(f"no SQL query named {name!r} in {SQL_DIR}") from None
