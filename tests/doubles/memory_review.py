"""``StatusRows`` + ``ReviewRows`` (email_rag/core/ports.py) over dicts, and the few pieces a
review action needs around them, so the REAL stores and review code run without MariaDB.

``MemoryRows`` keeps one dict per table. A conditional UPDATE (``update``) changes the row
only when its status is the ``from`` the store sends (as the SQL does), sets the columns the
named query names, and counts a change time (``updated_at``) so the optimistic ``seen``
token moves. ``transaction()`` rolls the tables back when its block raises, like MariaDB.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from email_rag.core.records import Draft, InboundRef, Job, ReplyMail, SendAttempt
from email_rag.db.stores import Stores

TABLES = {"emails": "emails", "drafts": "drafts", "sends": "send_attempts", "jobs": "jobs"}
# named UPDATE -> {parameter: column} beyond status (what the SQL in email_rag/db/sql sets)
SETS: dict[str, dict[str, str]] = {
    "emails_move": {"reason": "status_reason"},
    "emails_move_with_instruction": {"reason": "status_reason",
                                     "instruction": "draft_instruction"},
    "drafts_approve": {"by": "approved_by", "body_final": "body_final", "edit_diff": "edit_diff"},
    "drafts_reject": {"by": "rejected_by", "reject_reason": "reject_reason"},
    "drafts_mark_stale": {"reason": "stale_reason"},
    "sends_move": {"error": "last_error", "verified_by": "verified_by",
                   "decided_by": "decided_by", "accepted_at": "accepted_at"},
    "sends_mark_attempted": {},
    "sends_rearm": {"recipients": "recipients"},
    "sends_rearm_new_id": {"recipients": "recipients", "message_id": "message_id"},
}
T0 = datetime(2026, 12, 1, 9, 0)


class MemoryRows:
    """The database of one unit test. Call it with any cursor: it is its own port."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[int, dict[str, Any]]] = {
            t: {} for t in ("emails", "drafts", "send_attempts", "jobs", "mailboxes")}
        self.labelled_examples: list[tuple[int, str]] = []  # (email_id, source)
        self.events: list[Any] = []  # audit events written (email_rag.db.audit.AuditEvent)
        self._ids = itertools.count(1)
        self._tick = itertools.count(1)

    def __call__(self, cur: Any) -> MemoryRows:  # the stores' ``rows_of`` factory
        return self

    # --- building a world ---
    def now(self) -> datetime:
        return T0 + timedelta(seconds=next(self._tick))

    def add(self, table: str, **row: Any) -> int:
        row.setdefault("id", next(self._ids))
        row.setdefault("created_at", self.now())
        row.setdefault("updated_at", row["created_at"])
        self.tables[table][row["id"]] = row
        return row["id"]

    def row(self, table: str, record_id: int) -> dict[str, Any]:
        return self.tables[table][record_id]

    @contextmanager
    def transaction(self) -> Iterator[MemoryRows]:
        saved = copy.deepcopy((self.tables, self.events))
        try:
            yield self
        except BaseException:
            self.tables, self.events = saved
            raise

    # --- StatusRows ---
    def _table(self, query: str) -> dict[int, dict[str, Any]]:
        return self.tables[TABLES[query.split("_", 1)[0]]]

    def locked(self, query: str, record_id: int) -> dict[str, Any] | None:
        row = self._table(query).get(record_id)
        return None if row is None else dict(row)

    def update(self, query: str, params: Mapping[str, Any]) -> int:
        if query == "sends_insert":  # INSERT IGNORE: one attempt per draft
            if any(s["draft_id"] == params["draft_id"]
                   for s in self.tables["send_attempts"].values()):
                return 0
            self.add("send_attempts", draft_id=params["draft_id"], status="pending", tries=0,
                     message_id=params["message_id"], recipients=params["recipients"])
            return 1
        row = self._table(query).get(params["id"])
        column = "state" if query.startswith("jobs_") else "status"
        if row is None or str(row[column]) != params["from"]:
            return 0
        row[column] = params["to"]
        for param, col in SETS.get(query, {}).items():
            row[col] = params.get(param)
        if query == "drafts_approve":
            row["approved_at"] = self.now()
        if query == "sends_mark_attempted":
            row["tries"] = row.get("tries", 0) + 1
        if query == "sends_move" and params.get("response") is not None:
            row["smtp_response"] = params["response"]
        row["updated_at"] = self.now()
        return 1

    def audit(self, events: list[Any]) -> None:
        self.events += events

    # --- ReviewRows ---
    def labelled(self, email_id: int, source: str, services: Any) -> bool:
        self.labelled_examples.append((email_id, source))
        return True

    def draft(self, draft_id: int, lock: bool = False) -> Draft | None:
        row = self.tables["drafts"].get(draft_id)
        return None if row is None else Draft.from_row(row)

    def reply_mail(self, email_id: int, lock: bool = False) -> ReplyMail | None:
        row = self.tables["emails"].get(email_id)
        return None if row is None else ReplyMail.from_row(row)

    def send_of_draft(self, draft_id: int, lock: bool = False) -> SendAttempt | None:
        found = [s for s in self.tables["send_attempts"].values() if s["draft_id"] == draft_id]
        return SendAttempt.from_row(found[0]) if found else None

    def send(self, attempt_id: int, lock: bool = False) -> SendAttempt | None:
        row = self.tables["send_attempts"].get(attempt_id)
        return None if row is None else SendAttempt.from_row(row)

    def newer_inbound(self, mail: ReplyMail, since: Any) -> InboundRef | None:
        if not mail.thread_key or since is None:
            return None
        newer = sorted(
            (m for m in self.tables["emails"].values()
             if m["mailbox_id"] == mail.mailbox_id and m.get("thread_key") == mail.thread_key
             and m["id"] != mail.id and m["created_at"] > since and not m.get("auto_reason")),
            key=lambda m: m["id"])
        return InboundRef.from_row(newer[0]) if newer else None

    def open_drafts(self, email_id: int) -> list[int]:
        return sorted(d["id"] for d in self.tables["drafts"].values()
                      if d["email_id"] == email_id
                      and d["status"] in ("pending_review", "stale"))

    def mailbox(self, mailbox_id: int) -> tuple[str, str | None] | None:
        row = self.tables["mailboxes"].get(mailbox_id)
        return None if row is None else (row["name"], row.get("address"))


class MemoryJobs:
    """The part of ``JobStore`` a review action calls: ``queue_work`` (one entry per key)."""

    def __init__(self, rows: MemoryRows) -> None:
        self.rows = rows

    def queue_work(self, cur: Any, kind: Any, ref: Any, *, actor: str, event: str, queue: str,
                   email_id: int | None = None, draft_id: int | None = None,
                   detail: Any = None) -> Job:
        key = f"{kind}:{ref}"
        for job in self.rows.tables["jobs"].values():
            if job["job_key"] == key:
                job.update(state="queued", attempts=0)
                return Job.from_row(job)
        job_id = self.rows.add("jobs", kind=str(kind), job_key=key, state="queued", queue=queue,
                               attempts=0, email_id=email_id, draft_id=draft_id)
        return Job.from_row(self.rows.row("jobs", job_id))


class MemoryQueue:
    def __init__(self) -> None:
        self.put: list[tuple[str, int]] = []

    def enqueue(self, items: Any) -> int:
        self.put += list(items)
        return len(self.put)


class MemoryAudit:
    """``AuditLog.record`` into the memory database's event list."""

    def __init__(self, rows: MemoryRows) -> None:
        self.rows = rows

    def record(self, *events: Any) -> bool:
        self.rows.events += events
        return True


def _no_configured_mailbox(name: str) -> Any:
    raise KeyError(name)  # the reply leaves from the mailbox row's address


def memory_services(rows: MemoryRows | None = None, journal_dir: Any = "/nonexistent",
                    mail_sender: Any = None) -> SimpleNamespace:
    """What ``sending.review`` / ``sending.admin`` / ``SendService`` use of ``Services``,
    in memory. ``journal_dir``: the send journal's directory (a test's tmp_path)."""
    rows = rows or MemoryRows()
    return SimpleNamespace(
        db=rows, stores=Stores.build(rows_of=rows), jobs=MemoryJobs(rows), queue=MemoryQueue(),
        audit=MemoryAudit(rows), mail_sender=mail_sender, mail_sender_for=lambda _mailbox: mail_sender,
        settings=SimpleNamespace(message_id_domain="test.invalid", queue_name="default",
                                 send_journal_dir=journal_dir, reconcile_sent_folder=False,
                                 reconcile_again_after_seconds=0,
                                 mailbox=_no_configured_mailbox),
        rows=rows)


def review_world(svc: SimpleNamespace, *, draft_status: str = "pending_review",
                 mail_status: str = "draft_ready", check_flags: str | None = None,
                 reply_addr: str | None = "kunde@example.org") -> tuple[int, int]:
    """One mailbox, one mail with its reply decision, one draft: (email_id, draft_id)."""
    rows = svc.rows
    box = rows.add("mailboxes", name="support", address="support@example.com")
    email_id = rows.add("emails", status=mail_status, mailbox_id=box, subject="Rechnung 4711",
                        message_id="<m1@example.org>", thread_key="t1",
                        from_addr="kunde@example.org", reply_addr=reply_addr,
                        reply_rule="Reply-To" if reply_addr else "no-reply sender: nobody")
    draft_id = rows.add("drafts", email_id=email_id, status=draft_status, version=1,
                        body_draft="Guten Tag, anbei die Rechnung.", check_flags=check_flags)
    return email_id, draft_id
