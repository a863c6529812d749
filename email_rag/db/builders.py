"""The few statements whose column list depends on the call, built here (and only here).

Named queries (email_rag/db/sql/*.sql) cover everything with a fixed shape; a step's
checkpoint writes the mail columns its outcome names, so that one UPDATE is built
from a checked column list. Status columns are not accepted: they move only
through a store (email_rag/db/stores.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..core.rows import Params, SqlValue

_COLUMN = re.compile(r"^[a-z_][a-z0-9_]*$")
_STATUS_COLUMNS = frozenset({"status", "status_reason"})


def update_emails(email_id: int, columns: Mapping[str, SqlValue]) -> tuple[str, Params]:
    """``UPDATE emails SET <columns> WHERE id = ...`` as (statement, params), in the
    named queries' placeholder style (``%(set_subject)s``)."""
    for c in columns:
        if not _COLUMN.match(c):
            raise ValueError(f"not a column name: {c!r}")
        if c in _STATUS_COLUMNS:
            raise ValueError(f"{c} moves only through MailStore, not a step's columns")
    sets = ", ".join(f"`{c}` = %(set_{c})s" for c in columns)
    params = {f"set_{c}": v for c, v in columns.items()}
    return f"UPDATE emails SET {sets} WHERE id = %(email_id)s", {**params, "email_id": email_id}


def drop_database(name: str) -> str:
    """``DROP DATABASE IF EXISTS`` for a checked name (demo and chaos databases)."""
    if not re.match(r"^[A-Za-z0-9_]+$", name):
        raise ValueError(f"not a database name: {name!r}")
    return f"DROP DATABASE IF EXISTS `{name}`"
