"""Typed records from database rows: the conversion at the store boundary.

A record is a frozen dataclass that inherits ``FromRow``; ``Record.from_row(row)`` takes
a row as the database returns it (a mapping of column -> value) and keeps the columns the
record names (the others are ignored; a column the row lacks takes the field's default).
A record that needs a column converted (``0/1`` -> ``bool``, a status string -> its enum)
does it in ``__post_init__``. A change is ``dataclasses.replace``, never an assignment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, Self, TypeAlias

SqlValue: TypeAlias = int | float | Decimal | str | bytes | datetime | date | time | timedelta | None
"""A column value as MariaDB Connector/Python returns it, and a statement parameter."""
Row: TypeAlias = dict[str, SqlValue]
"""A row as the database returns it: column name -> value."""
Params: TypeAlias = dict[str, SqlValue]
"""The named parameters of a statement (``%(name)s``)."""


@cache
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


class FromRow:
    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        names = _names(cls)
        return cls(**{k: v for k, v in row.items() if k in names})

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> list[Self]:
        return [cls.from_row(r) for r in rows]


def set_field(record: object, name: str, value: Any) -> None:
    """In ``__post_init__`` of a frozen record: store the converted column."""
    object.__setattr__(record, name, value)
