"""Named SQL queries, loaded from ``email_rag/db/sql/*.sql`` (package data).

A file holds blocks that start with ``-- name: some_name``; names are unique
across files. ``sql("some_name")`` returns the statement text. Every named query
uses one placeholder style, named pyformat (``%(mailbox_id)s``), and every caller
passes a dict (a list of dicts to ``executemany``).

A block that starts with ``-- fragment: some_name`` is a piece of a statement written once
for the queries of its file (e.g. the review queue's filters, shared by its page, previous
page and count): a line ``@some_name`` in a query of that file stands for it.

A query with list slots (``IN ({ids})``, ``VALUES {rows}``) is expanded here and
only here, in the same named style: ``sql("name", ids=3)`` gives
``%(ids_0)s, %(ids_1)s, %(ids_2)s``; ``sql("name", rows=(2, 5))`` two groups of
five, ``(%(rows_0_0)s, ..., %(rows_0_4)s), (%(rows_1_0)s, ...)``.
``slot_params(ids=[...], rows=[(...), ...])`` builds the matching dict, which the
caller merges with the query's other parameters. Callers never add text to a
named query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from itertools import chain
from pathlib import Path

from ..core.rows import Params, SqlValue

SQL_DIR: Traversable = resources.files(__package__) / "sql"
_NAME = re.compile(r"^--\s*(name|fragment):\s*(\w+)\s*$", re.MULTILINE)
_FRAGMENT_USE = re.compile(r"^\s*@(\w+)\s*$", re.MULTILINE)


def parse_named_queries(text: str, origin: str = "") -> dict[str, str]:
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    fragments: dict[str, str] = {}
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        lines = [ln for ln in body.strip("\n").splitlines() if not ln.strip().startswith("--")]
        statement = "\n".join(lines).rstrip().rstrip(";").rstrip()
        if not statement.strip():
            raise ValueError(f"{kind} {name!r} in {origin} is empty")
        if kind == "fragment":
            fragments[name] = statement
        else:
            queries[name] = statement.strip()

    def fragment(use: re.Match[str]) -> str:
        try:
            return fragments[use.group(1)]
        except KeyError:
            raise ValueError(f"fragment {use.group(1)!r} used in {origin} is not defined "
                             "there") from None

    return {name: _FRAGMENT_USE.sub(fragment, q) for name, q in queries.items()}


_EXTRA_FILES: list[Path] = []  # files added by add_query_file, after SQL_DIR's


def add_query_file(path: Path) -> None:
    """Load the named queries of one more file (a test harness's own) beside
    ``SQL_DIR``'s, for this process; names stay unique across all files."""
    path = Path(path).resolve()
    if path in _EXTRA_FILES:
        return
    parse_named_queries(path.read_text(), path.name)  # a broken file fails here, not later
    _EXTRA_FILES.append(path)
    all_queries.cache_clear()
    _expanded.cache_clear()


@lru_cache(maxsize=1)
def all_queries() -> dict[str, str]:
    queries: dict[str, str] = {}
    for path in [*sorted((p for p in SQL_DIR.iterdir() if p.name.endswith(".sql")),
                         key=lambda p: p.name), *_EXTRA_FILES]:
        for name, statement in parse_named_queries(path.read_text(), path.name).items():
            if name in queries:
                raise ValueError(f"query name {name!r} defined twice (again in {path.name})")
            queries[name] = statement
    return queries


def sql(name: str, **slots: int | tuple[int, int]) -> str:
    try:
        statement = all_queries()[name]
    except KeyError:
        raise KeyError(f"no SQL query named {name!r} in {SQL_DIR}"
                       + "".join(f" or {p}" for p in _EXTRA_FILES)) from None
    if not slots:
        return statement
    return _expanded(name, tuple(slots.items()))


@lru_cache(maxsize=512)
def _expanded(name: str, slots: tuple[tuple[str, int | tuple[int, int]], ...]) -> str:
    """The query with its list slots filled (cached: a batch size repeats)."""
    statement = all_queries()[name]
    fill = {}
    for slot, n in slots:
        if "{" + slot + "}" not in statement:
            raise KeyError(f"query {name!r} has no list slot {{{slot}}}")
        if isinstance(n, tuple):
            rows, width = n
            marks = [f"%({k})s" for k in _slot_keys(slot, rows, width)]
            fill[slot] = ", ".join("(" + ", ".join(marks[r * width:(r + 1) * width]) + ")"
                                   for r in range(rows))
        else:
            fill[slot] = ", ".join(f"%({k})s" for k in _slot_keys(slot, n, 0))
    return statement.format(**fill)


@lru_cache(maxsize=512)
def _slot_keys(slot: str, rows: int, width: int) -> tuple[str, ...]:
    """``ids_0, ids_1, ...`` (width 0: one value per entry) or ``rows_0_0, rows_0_1, ...``."""
    if not width:
        return tuple(f"{slot}_{r}" for r in range(rows))
    return tuple(f"{slot}_{r}_{c}" for r in range(rows) for c in range(width))


def slot_params(**lists: Sequence[SqlValue] | Sequence[tuple[SqlValue, ...]]) -> Params:
    """The parameters of list slots, named as ``sql(name, slot=...)`` expands them.

    ``slot_params(ids=[7, 9])`` -> ``{"ids_0": 7, "ids_1": 9}`` (for ``sql(name, ids=2)``);
    a list of tuples fills a row slot: ``slot_params(rows=[(1, "a"), (2, "b")])`` ->
    ``{"rows_0_0": 1, "rows_0_1": "a", "rows_1_0": 2, "rows_1_1": "b"}`` (for
    ``sql(name, rows=(2, 2))``).
    """
    params: Params = {}
    for slot, values in lists.items():
        if values and isinstance(values[0], tuple):
            width = len(values[0])
            if any(len(v) != width for v in values):
                raise ValueError(f"rows of slot {slot!r} differ in width")
            params.update(zip(_slot_keys(slot, len(values), width),
                              chain.from_iterable(values), strict=True))
        else:
            params.update(zip(_slot_keys(slot, len(values), 0), values, strict=True))
    return params
