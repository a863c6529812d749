"""A person's action's transaction, repeated when MariaDB rolled it back as busy.

What staff and admins do - approve, reject, regenerate, a reply by hand, a forward, an
admin's send decision, an admin's retry and resolve, a classification correction, an
assignment, a snooze - each writes in one transaction that starts by locking the rows it
reads. Two of them on neighbouring rows (or a worker's checkpoint on the same mail) can
deadlock (1213) or wait past InnoDB's lock wait timeout (1205); MariaDB then rolled the
whole transaction back, so nothing of it was written and running it again is the same
action. It runs again here, at once, up to ``BUSY_TRIES`` times
(``db.connection.repeat_when_busy``), and staff see the action's own result instead of
"Deadlock found when trying to get lock". Each repeat is audited (``action_repeated``: which action, which try, the MariaDB error number) in the
transaction that commits; when every try was busy the error reaches the caller (the web's
503 "temporarily unavailable", nothing changed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from ..core.errors import DatabaseBusyError
from ..core.rows import Params
from .audit import AuditEvent, write_events
from .connection import Database, repeat_when_busy
from .queries import sql

log = logging.getLogger(__name__)
T = TypeVar("T")


def repeated_when_busy(action: str, by: str, entity_type: str, entity_id: int | str,
                       run: Callable[[list[AuditEvent]], T]) -> T:
    """``run(repeats)``: the action's one transaction, which writes ``repeats`` (the audit
    events of the tries before it, empty on the first) with its own events."""
    repeats: list[AuditEvent] = []

    def audited(attempt: int, e: DatabaseBusyError) -> None:
        repeats.append(AuditEvent(by, entity_type, str(entity_id), "action_repeated",
                                  detail={"action": action, "try": attempt, "errno": e.context.get("errno")}))

    return repeat_when_busy(lambda: run(list(repeats)), f"{action} of {entity_type} {entity_id}",
                            audited, logger=log)


def written_when_busy(db: Database, action: str, by: str, entity_type: str,
                      entity_id: int | str, query: str, params: Params) -> None:
    """A one-statement write (the named ``query``) of a person's action, repeated like the
    others; its repeats are audited in the transaction that writes it."""
    def run(repeats: list[AuditEvent]) -> None:
        with db.transaction() as cur:
            cur.execute(sql(query), params)
            write_events(cur, repeats)

    repeated_when_busy(action, by, entity_type, entity_id, run)
