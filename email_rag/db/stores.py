"""One store per record: the only code that writes a status column.

``move(cur, id, to, ...)`` runs inside the caller's transaction: it locks the row,
checks the record's transition table (email_rag/core/states.py), runs the record's
conditional UPDATE (``... WHERE id = %(id)s AND <status> = %(from)s``, from
email_rag/db/sql/) and writes the audit event - so the change and its event commit
together or not at all. A move the table does not allow raises
``TransitionRefused`` naming the record, both statuses and why; nothing is written.

``JobStore`` (email_rag/jobs/store.py) is the store of queue entries; its hot-path moves
(claim, finish, fail) are compare-and-set queries of their own.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| move allowed | - | yes: row and event committed together | - |
| move not in the table | no | yes: refused, nothing written | the message says what to do |
| row changed between the read and the lock | no | yes: refused (``changed meanwhile``) | read again |
| same status again (double click) | - | yes: no-op, no event | - |
| MariaDB lost mid-move | yes | yes: the transaction rolled back | ask again |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.errors import PermanentError, TransitionRefused
from ..core.records import Draft, Mail, SendAttempt
from ..core.states import (
    DRAFT_MOVES,
    JOB_MOVES,
    MAIL_MOVES,
    SEND_MOVES,
    DraftStatus,
    MailStatus,
    SendStatus,
)
from . import sql
from .audit import AuditEvent, write_events


@dataclass
class StatusStore:
    """Moves of one record type along its transition table."""

    record: ClassVar[str]  # audit entity type
    column: ClassVar[str] = "status"
    moves: ClassVar[Mapping[Any, frozenset[Any]]]
    lock_query: ClassVar[str]  # SELECT ... FOR UPDATE by %(id)s
    move_query: ClassVar[str]  # UPDATE ... WHERE id = %(id)s AND status = %(from)s

    def allowed(self, current: Any, wanted: Any) -> bool:
        return wanted in self.moves.get(current, frozenset())

    def why_refused(self, current: Any, wanted: Any) -> str:
        nxt = self.moves.get(current, frozenset())
        if not nxt:
            return f"{current} is final; nothing changes it"
        return f"from {current} only {', '.join(sorted(map(str, nxt)))} may follow"

    def check(self, record_id: Any, current: Any, wanted: Any) -> None:
        if current != wanted and not self.allowed(current, wanted):
            raise TransitionRefused(self.record, record_id, current, wanted,
                                    self.why_refused(current, wanted))

    def check_expected(self, record_id: Any, current: Any, wanted: Any,
                       expect: Iterable[Any] | None) -> None:
        """Refuse a move from a status the caller does not act on (``expect``), even one
        the table allows; moving to the status the row already has is never refused."""
        if expect is not None and current not in set(expect) and current != wanted:
            raise TransitionRefused(self.record, record_id, current, wanted,
                                    f"this action applies to {', '.join(map(str, expect))}")

    def lock(self, cur: Any, record_id: int) -> dict[str, Any]:
        row = cur.fetchone(sql(self.lock_query), {"id": record_id})
        if row is None:
            raise PermanentError(f"{self.record} {record_id} does not exist")
        return row

    def move(self, cur: Any, record_id: int, to: Any, *, actor: str,
             event: str = "state_changed", reason: str | None = None,
             expect: Iterable[Any] | None = None, query: str | None = None,
             attempt: int | None = None, detail: dict[str, Any] | None = None,
             row: dict[str, Any] | None = None, current: Any = None,
             events: list[AuditEvent] | None = None, **columns: Any) -> dict[str, Any]:
        """Move one row to ``to``; returns the row as it was before. ``expect``: the
        statuses this caller acts on (anything else is refused, even if the table
        allows it); ``query``: a named UPDATE that sets more columns; ``row``: the row
        already locked by the caller in this transaction; ``current``: the status the
        caller read (no lock: the conditional UPDATE refuses the move if it changed
        since); ``events``: the caller's list of this transaction's audit events, to
        write them in one round trip (the caller writes the list before its commit)."""
        if row is None and current is not None:
            row = {"id": record_id, self.column: current}
        row = row if row is not None else self.lock(cur, record_id)
        current = row[self.column]
        self.check_expected(record_id, current, to, expect)
        if current == to and query is None:
            return row  # the same status again: nothing to write
        self.check(record_id, current, to)
        params = {"id": record_id, "to": str(to), "from": str(current), "reason": reason,
                  **columns}
        if cur.execute(sql(query or self.move_query), params) != 1:
            raise TransitionRefused(self.record, record_id, current, to,
                                    "the row changed meanwhile; nothing written")
        audit = AuditEvent(actor, self.record, record_id, event, current, to, attempt=attempt,
                           detail={**({"reason": reason} if reason else {}), **(detail or {})}
                           or None)
        if events is not None:
            events.append(audit)
        else:
            write_events(cur, [audit])
        return row


class MailStore(StatusStore):
    record = "email"
    moves = MAIL_MOVES
    lock_query = "emails_get_for_update"
    move_query = "emails_move"

    def get(self, cur: Any, email_id: int) -> Mail:
        return Mail.from_row(self.lock(cur, email_id))


class DraftStore(StatusStore):
    record = "draft"
    moves = DRAFT_MOVES
    lock_query = "drafts_get_for_update"
    move_query = "drafts_move"

    def get(self, cur: Any, draft_id: int) -> Draft:
        return Draft.from_row(self.lock(cur, draft_id))

    def supersede_open(self, cur: Any, email_id: int, actor: str, reason: str) -> list[int]:
        """Every open draft (pending review or stale) of a mail becomes superseded."""
        ids = [int(r["id"]) for r in cur.fetchall(sql("drafts_open_of_mail_for_update"),
                                                   {"email_id": email_id})]
        for draft_id in ids:
            self.move(cur, draft_id, DraftStatus.SUPERSEDED, actor=actor, event="superseded",
                      reason=reason)
        return ids


class SendStore(StatusStore):
    record = "send_attempt"
    moves = SEND_MOVES
    lock_query = "sends_get_for_update"
    move_query = "sends_move"
    insert_query: ClassVar[str] = "sends_insert"  # one attempt per draft: a repeat is a no-op
    attempt_query: ClassVar[str] = "sends_mark_attempted"  # pending -> attempted, counts a try

    def get(self, cur: Any, attempt_id: int) -> SendAttempt:
        return SendAttempt.from_row(self.lock(cur, attempt_id))


class JobStates(StatusStore):
    """Queue-entry moves made by admins and approvals (``JobStore`` in email_rag/jobs/store.py
    owns the worker's compare-and-set moves: claim, finish, fail, hand-off, reset)."""

    record = "job"
    column = "state"
    moves = JOB_MOVES
    lock_query = "jobs_get_for_update"
    move_query = "jobs_move_close"


@dataclass
class Stores:
    """The stores of one process, built once by its ``Services``."""

    mails: MailStore
    drafts: DraftStore
    sends: SendStore
    jobs: JobStates

    @classmethod
    def build(cls) -> Stores:
        return cls(MailStore(), DraftStore(), SendStore(), JobStates())


__all__ = ["DraftStatus", "DraftStore", "JobStates", "MailStatus", "MailStore", "SendStatus",
           "SendStore", "StatusStore", "Stores"]
