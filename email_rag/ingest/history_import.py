"""A mailbox's history import as a job an admin watches and steers (web admin, ``email-rag
mailboxes history``, ``/metrics``).

Progress per mailbox: the history mails stored (the poll fetches them) and indexed (the
``index_history`` entries), the errors (dead entries), the rate (entries done in the last
``RATE_WINDOW_S``) and the time left at that rate.

Pause, resume, restart, each with its audit event (the admin's name) in one transaction:

| action | what changes | audit |
|---|---|---|
| pause | ``mailboxes.history_paused``; the mailbox's waiting entries are parked (due far ahead: no claim, batch or re-dispatch takes them; their state is unchanged); entries a poll creates while paused are parked in its batch transaction | ``history_paused`` (entries parked) |
| resume | the flag off; parked entries due now (re-dispatch enqueues them) | ``history_resumed`` |
| restart | every dead entry of the mailbox gets a fresh retry cycle (``JobStore.requeue``: audited per entry), then resume | ``history_restarted`` |

Failure table (situation | retry? | state known? | resume?):
  pause while an index batch runs | - | that batch finishes (at most one) | -
  pause while a poll of the mailbox runs | - | the poll's later batches park their
      entries (the flag is read in each batch transaction) | -
  MariaDB down | the caller's | nothing half-done (one transaction) | act again
  the process stops after a pause | - | the flag and the parked entries are in MariaDB | -
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.errors import PermanentError
from ..core.rows import FromRow, set_field
from ..db import Database, sql
from ..db.audit import AuditEvent, write_events
from ..jobs.store import JobStore

RATE_WINDOW_S = 600


@dataclass(frozen=True)
class ImportProgress(FromRow):
    mailbox_id: int
    mailbox: str
    total: int = 0  # history mails stored
    done: int = 0  # of them indexed (complete, partially indexed, nothing to index)
    partial: int = 0  # of them partially indexed (a store was missing; the sync fills it)
    paused: bool = False
    cutoff: datetime | None = None
    errors: int = 0  # dead index entries
    rate_per_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("mailbox_id", "total", "done", "partial", "errors"):
            set_field(self, name, int(getattr(self, name) or 0))
        set_field(self, "paused", bool(self.paused))

    @property
    def left(self) -> int:
        return self.total - self.done

    @property
    def percent(self) -> float:
        return 100.0 if not self.total else round(100.0 * self.done / self.total, 1)

    @property
    def seconds_left(self) -> float | None:
        if not self.left:
            return 0.0
        if self.paused or self.rate_per_s <= 0:
            return None
        return round(self.left / self.rate_per_s, 1)

    @property
    def state(self) -> str:
        if self.paused:
            return "paused"
        return "done" if not self.left else "running"

    def as_dict(self) -> dict[str, Any]:
        return {"mailbox": self.mailbox, "state": self.state, "total": self.total,
                "done": self.done, "left": self.left, "percent": self.percent,
                "errors": self.errors, "partial": self.partial,
                "rate_per_s": self.rate_per_s, "seconds_left": self.seconds_left,
                "cutoff": self.cutoff.isoformat() if self.cutoff else None}


def progress(db: Database) -> list[ImportProgress]:
    """Every mailbox's history import (mailboxes never polled have no row yet)."""
    rows = db.fetchall(sql("history_import_progress"))
    dead: dict[int, int] = {}
    recent: dict[int, int] = {}
    for r in db.fetchall(sql("history_import_entries"), {"window_s": RATE_WINDOW_S}):
        if r["state"] == "dead":
            dead[int(r["mailbox_id"])] = int(r["n"])
        recent[int(r["mailbox_id"])] = recent.get(int(r["mailbox_id"]), 0) + int(r["recent"])
    return [ImportProgress.from_row({
        **r, "errors": dead.get(int(r["mailbox_id"]), 0),
        "rate_per_s": round(recent.get(int(r["mailbox_id"]), 0) / RATE_WINDOW_S, 3)})
        for r in rows]


def of_mailbox(db: Database, name: str) -> ImportProgress | None:
    return next((p for p in progress(db) if p.mailbox == name), None)


def _mailbox_id(cur: Any, name: str) -> int:
    row = cur.fetchone(sql("history_import_mailbox"), {"name": name})
    if row is None:
        raise PermanentError(f"mailbox {name} has not been polled yet: its history import "
                             "starts with its first poll")
    return int(row["id"])


def pause(db: Database, name: str, actor: str) -> int:
    """Pause the mailbox's import; the number of entries parked (0 when it was paused)."""
    with db.transaction() as cur:
        mailbox_id = _mailbox_id(cur, name)
        if cur.execute(sql("history_import_pause"), {"mailbox_id": mailbox_id}) != 1:
            return 0
        parked = cur.execute(sql("history_import_park"), {"mailbox_id": mailbox_id})
        write_events(cur, [AuditEvent(actor, "mailbox", name, "history_paused", "running",
                                      "paused", detail={"entries_parked": parked})])
    return parked


def resume(db: Database, name: str, actor: str) -> int:
    """Resume it; the number of entries due again (the re-dispatch enqueues them)."""
    with db.transaction() as cur:
        mailbox_id = _mailbox_id(cur, name)
        was_paused = cur.execute(sql("history_import_resume"), {"mailbox_id": mailbox_id}) == 1
        due = cur.execute(sql("history_import_unpark"), {"mailbox_id": mailbox_id})
        if was_paused or due:
            write_events(cur, [AuditEvent(actor, "mailbox", name, "history_resumed", "paused",
                                          "running", detail={"entries_due": due})])
    return due


def restart(db: Database, jobs: JobStore, name: str, actor: str) -> int:
    """A fresh retry cycle for every dead entry of the mailbox's import, then resume; the
    number of entries restarted."""
    with db.transaction() as cur:
        mailbox_id = _mailbox_id(cur, name)
        ids = [int(r["id"]) for r in cur.fetchall(sql("history_import_dead"),
                                                  {"mailbox_id": mailbox_id})]
        for job_id in ids:
            jobs.requeue(cur, jobs.lock(cur, job_id), actor, "history_restarted")
        write_events(cur, [AuditEvent(actor, "mailbox", name, "history_restarted",
                                      detail={"entries_restarted": len(ids)})])
    resume(db, name, actor)
    return len(ids)
