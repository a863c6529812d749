"""The audit log: append-only, in MariaDB, never lost.

Every error, retry, fallback and state change is an ``AuditEvent``. Inside a
transaction that changes state, write the events with ``write_events(cur, ...)``
so the change and its record commit together. On its own, ``AuditLog.record``
writes them in a short transaction; if MariaDB is unreachable the events go to
a local spool file (JSON lines) and ``flush_spool`` writes them later. Each
event has a unique ``event_uid``, so a flush that is repeated after a crash
inserts nothing twice.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.audit_event import AuditEvent
from ..core.errors import DatabaseUnavailableError
from ..core.rows import FromRow, Row, set_field
from ..core.states import Actor
from .connection import Cursor, Database
from .queries import sql

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class AuditEntry(FromRow):
    """An audit event as read back from ``audit_log`` (``detail`` decoded from its JSON
    text; a value that is not JSON stays the text)."""

    id: int
    at: datetime
    actor: str
    entity_type: str
    entity_id: str
    event: str
    from_state: str | None = None
    to_state: str | None = None
    attempt: int | None = None
    detail: Any = None  # a JSON value

    def __post_init__(self) -> None:
        if isinstance(self.detail, (str, bytes)) and self.detail:
            try:
                set_field(self, "detail", json.loads(self.detail))
            except ValueError:
                pass


def write_events(cur: Cursor, events: Iterable[AuditEvent]) -> int:
    """Insert events inside the caller's transaction (one round trip)."""
    rows = [e.row() for e in events]
    return cur.executemany(sql("audit_insert"), rows) if rows else 0


class AuditLog:
    def __init__(self, db: Database, spool_path: Path) -> None:
        self.db = db
        self.spool_path = Path(spool_path)

    def record(self, *events: AuditEvent) -> bool:
        """Write events now; if MariaDB is down, spool them. True when written to MariaDB."""
        if not events:
            return True
        try:
            with self.db.transaction() as cur:
                write_events(cur, events)
            return True
        except DatabaseUnavailableError as e:
            self.spool(events, reason=str(e))
            return False

    # --- spool ---
    def spool(self, events: Iterable[AuditEvent], reason: str = "") -> None:
        events = list(events)
        self.spool_path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(e.to_json() + "\n" for e in events).encode()
        fd = os.open(self.spool_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        log.warning("MariaDB unavailable; %d audit event(s) spooled to %s (%s)",
                    len(events), self.spool_path, reason)

    def spooled_count(self) -> int:
        return sum(
            sum(1 for ln in p.read_text().splitlines() if ln.strip())
            for p in self._spool_files()
        )

    def _spool_files(self) -> list[Path]:
        d = self.spool_path.parent
        if not d.exists():
            return []
        files = sorted(d.glob(self.spool_path.name + ".flushing.*"))
        if self.spool_path.exists():
            files.append(self.spool_path)
        return files

    def flush_spool(self) -> int:
        """Write spooled events to MariaDB; returns how many lines were flushed.

        The spool is renamed to a ``.flushing.<pid>`` file under the lock, so
        appends during the flush go to a new spool. A file is deleted only after
        its events are committed; a crash leaves it to be flushed again (the
        unique event_uid makes that a no-op).
        """
        if self.spool_path.exists():
            fd = os.open(self.spool_path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if os.fstat(fd).st_size:
                    os.rename(self.spool_path,
                              f"{self.spool_path}.flushing.{os.getpid()}.{uuid.uuid4().hex[:6]}")
            finally:
                os.close(fd)
        flushed = 0
        for path in self._spool_files():
            if path == self.spool_path:
                continue
            events, bad = [], []
            for line in path.read_text().splitlines():
                if not line.strip():
                    continue
                try:
                    events.append(AuditEvent.from_json(line))
                except (ValueError, TypeError) as e:  # torn line from a crash mid-write
                    bad.append((line, str(e)))
            with self.db.transaction() as cur:
                write_events(cur, events)
                if bad:
                    write_events(cur, [AuditEvent(
                        Actor.SYSTEM, "system", "audit_spool", "spool_line_unreadable",
                        detail={"line": ln[:2000], "error": err}) for ln, err in bad])
            path.unlink()
            flushed += len(events)
        if flushed:
            log.info("flushed %d spooled audit event(s) to MariaDB", flushed)
        return flushed


def events_for(db: Database, entity_type: str, entity_id: str | int) -> list[Row]:
    return db.fetchall(sql("audit_of_entity"), {"type": entity_type, "id": str(entity_id)})
