"""One store per record: the only code that writes a status column.

``move(cur, id, to, ...)`` runs inside the caller's transaction: it locks the row,
checks the record's transition table (email_rag/core/states.py), runs the record's
conditional UPDATE (``... WHERE id = %(id)s AND <status> = %(from)s``, from
email_rag/db/sql/) and writes the audit event - so the change and its event commit
together or not at all. A move the table does not allow raises
``TransitionRefused`` naming the record, both statuses and why; nothing is written.

``JobStore`` (email_rag/jobs/store.py) is the store of queue entries; its hot-path moves
(claim, finish, fail) are compare-and-set queries of their own.

The stores reach MariaDB only through the ports of email_rag/core/ports.py:
``StatusRows`` (lock a status, run a conditional UPDATE, write audit events) and
``ReviewRows`` (typed reads of drafts, send attempts and the mail a reply answers).
``CursorRows`` below is their MariaDB implementation on the caller's cursor; unit tests
build the stores on an in-memory one (tests/doubles/memory_review.py).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| move allowed | - | yes: row and event committed together | - |
| move not in the table | no | yes: refused, nothing written | the message says what to do |
| row changed between the read and the lock | no | yes: refused (``changed meanwhile``) | read again |
| same status again (double click) | - | yes: no-op, no event | - |
| MariaDB lost mid-move | yes | yes: the transaction rolled back | ask again |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..core.errors import PermanentError, TransitionRefused
from ..core.jsonvalue import JsonObject
from ..core.ports import StoreRows
from ..core.records import Draft, InboundRef, Mail, RecordedExample, ReplyMail, SendAttempt
from ..core.rows import Row
from ..core.states import (
    DRAFT_MOVES,
    JOB_MOVES,
    MAIL_MOVES,
    SEND_MOVES,
    DraftStatus,
    MailStatus,
    SendStatus,
)
from . import examples, figures, sql
from .audit import AuditEvent, write_events


class CursorRows:
    """``StatusRows`` and ``ReviewRows`` on a MariaDB cursor (the caller's transaction), or
    on the ``Database`` itself for reads outside a transaction."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    # --- StatusRows ---
    def locked(self, query: str, record_id: int) -> Row | None:
        return self.cur.fetchone(sql(query), {"id": record_id})

    def update(self, query: str, params: Mapping[str, Any]) -> int:
        return self.cur.execute(sql(query), dict(params))

    def audit(self, events: list[AuditEvent]) -> None:
        write_events(self.cur, events)

    # --- ReviewRows ---
    def labelled(self, email_id: int, source: str) -> RecordedExample | None:
        return examples.record(self.cur, email_id, source)

    def reviewed(self, draft_id: int, outcome: Any, distance: float | None = None,
                 by: str = "") -> None:
        figures.draft_decided(self.cur, draft_id, outcome, distance, by)

    def draft(self, draft_id: int, lock: bool = False) -> Draft | None:
        row = self.cur.fetchone(sql("drafts_get_for_update" if lock else "drafts_get"),
                                {"id": draft_id})
        return None if row is None else Draft.from_row(row)

    def reply_mail(self, email_id: int, lock: bool = False) -> ReplyMail | None:
        row = self.cur.fetchone(
            sql("drafts_reply_mail_for_update" if lock else "drafts_reply_mail"),
            {"id": email_id})
        return None if row is None else ReplyMail.from_row(row)

    def send_of_draft(self, draft_id: int, lock: bool = False) -> SendAttempt | None:
        row = self.cur.fetchone(sql("sends_by_draft_for_update" if lock else "sends_by_draft"),
                                {"draft_id": draft_id})
        return None if row is None else SendAttempt.from_row(row)

    def send(self, attempt_id: int, lock: bool = False) -> SendAttempt | None:
        row = self.cur.fetchone(sql("sends_get_for_update" if lock else "sends_get"),
                                {"id": attempt_id})
        return None if row is None else SendAttempt.from_row(row)

    def newer_inbound(self, mail: ReplyMail, since: Any) -> InboundRef | None:
        if not mail.thread_key or since is None:
            return None
        row = self.cur.fetchone(sql("drafts_newer_inbound"), {
            "mailbox_id": mail.mailbox_id, "thread_key": mail.thread_key, "email_id": mail.id,
            "since": since})
        return None if row is None else InboundRef.from_row(row)

    def open_drafts(self, email_id: int) -> list[int]:
        return [int(r["id"]) for r in self.cur.fetchall(sql("drafts_open_of_mail_for_update"),
                                                         {"email_id": email_id})]

    def mailbox(self, mailbox_id: int) -> tuple[str, str | None] | None:
        row = self.cur.fetchone(sql("sends_mailbox_of_mail"), {"id": mailbox_id})
        return None if row is None else (row["name"], row["address"])


def _status_of(row: Any, column: str) -> Any:
    """The status of a locked row the caller passes: a dict or a typed record."""
    return row[column] if isinstance(row, Mapping) else getattr(row, column)


@dataclass
class StatusStore:
    """Moves of one record type along its transition table."""

    rows_of: Callable[[Any], StoreRows] = field(default=CursorRows)  # the caller's cursor
    # -> the port the moves read and write through

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

    def lock(self, cur: Any, record_id: int) -> Row:
        row = self.rows_of(cur).locked(self.lock_query, record_id)
        if row is None:
            raise PermanentError(f"{self.record} {record_id} does not exist")
        return row

    def move(self, cur: Any, record_id: int, to: Any, *, actor: str,
             event: str = "state_changed", reason: str | None = None,
             expect: Iterable[Any] | None = None, query: str | None = None,
             attempt: int | None = None, detail: JsonObject | None = None,
             row: Any = None, current: Any = None,
             events: list[AuditEvent] | None = None, **columns: Any) -> None:
        """Move one row to ``to``. ``expect``: the statuses this caller acts on (anything
        else is refused, even if the table allows it); ``query``: a named UPDATE that sets
        more columns; ``row``: the row (a dict or a typed record) already locked by the
        caller in this transaction; ``current``: the status the caller read (no lock: the
        conditional UPDATE refuses the move if it changed since); ``events``: the caller's
        list of this transaction's audit events, to write them in one round trip (the
        caller writes the list before its commit)."""
        rows = self.rows_of(cur)
        if row is not None:
            current = _status_of(row, self.column)
        elif current is None:
            current = _status_of(self.lock(cur, record_id), self.column)
        self.check_expected(record_id, current, to, expect)
        if current == to and query is None:
            return  # the same status again: nothing to write
        self.check(record_id, current, to)
        params = {"id": record_id, "to": str(to), "from": str(current), "reason": reason,
                  **columns}
        if rows.update(query or self.move_query, params) != 1:
            raise TransitionRefused(self.record, record_id, current, to,
                                    "the row changed meanwhile; nothing written")
        audit = AuditEvent(actor, self.record, record_id, event, current, to, attempt=attempt,
                           detail={**({"reason": reason} if reason else {}), **(detail or {})}
                           or None)
        if events is not None:
            events.append(audit)
        else:
            rows.audit([audit])


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

    def locked(self, cur: Any, draft_id: int) -> Draft | None:
        """The draft, locked for this transaction (``lock_query``)."""
        row = self.rows_of(cur).locked(self.lock_query, draft_id)
        return None if row is None else Draft.from_row(row)

    def supersede_open(self, cur: Any, email_id: int, actor: str, reason: str) -> list[int]:
        """Every open draft (pending review or stale) of a mail becomes superseded."""
        ids = self.rows_of(cur).open_drafts(email_id)
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

    def create(self, cur: Any, draft_id: int, message_id: str, recipient: str) -> bool:
        """The draft's one attempt, pending (``insert_query``); False when it exists."""
        return self.rows_of(cur).update(self.insert_query, {
            "draft_id": draft_id, "message_id": message_id, "recipients": recipient}) == 1

    def locked(self, cur: Any, attempt_id: int) -> SendAttempt | None:
        """The attempt, locked for this transaction (``lock_query``)."""
        row = self.rows_of(cur).locked(self.lock_query, attempt_id)
        return None if row is None else SendAttempt.from_row(row)


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
    rows_of: Callable[[Any], StoreRows] = CursorRows  # typed reads on the caller's cursor

    @classmethod
    def build(cls, rows_of: Callable[[Any], StoreRows] = CursorRows) -> Stores:
        """``rows_of``: the cursor -> port factory (MariaDB; a memory double in unit tests)."""
        return cls(MailStore(rows_of), DraftStore(rows_of), SendStore(rows_of),
                   JobStates(rows_of), rows_of)


__all__ = ["CursorRows", "DraftStatus", "DraftStore", "JobStates", "MailStatus", "MailStore",
           "SendStatus", "SendStore", "StatusStore", "Stores"]
