"""One in-memory database for unit tests: ``StatusRows`` + ``ReviewRows`` (what the status
stores and review decisions read and write) and ``JobRows`` (what ``JobStore`` reads and
writes), all over the SAME tables - so a review action's queued job and JobStore's
decisions about it see the same rows. The real code runs on it: ``Stores.build(rows_of=db)``
and ``JobStore.over(db, policy)``.

Rows are dicts, as MariaDB returns them; every read through a port is converted to its
typed record at that boundary (``from_row``), as the MariaDB implementations do
(``db.stores.CursorRows``, ``jobs.rows.MariaJobRows``). It keeps their contract:

- a conditional UPDATE (``update``) changes a row only when its status is the ``from`` the
  store sends, sets the columns the named query sets, and stamps ``updated_at`` so the
  optimistic ``seen`` token moves;
- the worker's moves are compare-and-set against the entry as read (False: not ours);
- status moves of ``JobRows`` go through the real stores (transition tables, audit);
- ``transaction()`` rolls every table and the audit events back when its block raises.

It does not model concurrency between connections: that is MariaDB's part, proved by the
integration tests. ``now`` is the database clock (``later`` moves it).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from email_rag.core.ports import NewJob
from email_rag.core.records import Draft, InboundRef, Job, Mail, ReplyMail, SendAttempt
from email_rag.core.routing import job_key
from email_rag.core.states import DraftStatus, JobKind, JobState, MailStatus, SendStatus
from email_rag.db.audit import AuditEvent
from email_rag.db.stores import Stores
from email_rag.jobs import rules

START = datetime(2026, 12, 1, 9, 0)
TABLES = {"emails": "emails", "drafts": "drafts", "sends": "send_attempts", "jobs": "jobs"}
# named UPDATE -> {parameter: column} beyond the status (what the SQL in email_rag/db/sql sets)
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
MOVE_QUERIES = {"requeue": "jobs_move_requeue", "close": "jobs_move_close",
                "resolve": "jobs_move_resolve"}


def _plain(value: Any) -> Any:
    """A column value as MariaDB returns it: an enum is its string."""
    return str(value) if isinstance(value, (JobState, JobKind, MailStatus, DraftStatus,
                                            SendStatus)) else value


class MemoryDatabase:
    """The database of one unit test. Call it with any cursor: it is its own port."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now
        self.tables: dict[str, dict[int, dict[str, Any]]] = {
            t: {} for t in ("emails", "drafts", "send_attempts", "jobs", "mailboxes")}
        self.steps: dict[int, set[str]] = {}  # confirmed pipeline steps by mail id
        self.events: list[AuditEvent] = []
        self.labelled_examples: list[tuple[int, str]] = []  # (email_id, source)
        self.reviews: dict[int, tuple[str, float | None]] = {}  # draft_id -> (outcome, distance)
        self.stores = Stores.build(rows_of=self)
        self._tick = itertools.count(1)

    def __call__(self, cur: Any) -> MemoryDatabase:  # the stores' ``rows_of`` factory
        return self

    # --- building a world ---
    def stamp(self) -> datetime:
        """A change time: the clock plus a tick, so every write gets a later one."""
        return self.now + timedelta(microseconds=next(self._tick))

    def later(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def add(self, table: str, **row: Any) -> int:
        rows = self.tables[table]
        row.setdefault("id", max(rows, default=0) + 1)
        row.setdefault("created_at", self.stamp())
        row.setdefault("updated_at", row["created_at"])
        rows[row["id"]] = {k: _plain(v) for k, v in row.items()}
        return row["id"]

    def row(self, table: str, record_id: int) -> dict[str, Any]:
        return self.tables[table][record_id]

    def add_mail(self, status: MailStatus = MailStatus.RECEIVED, **kw: Any) -> Mail:
        return Mail.from_row(self.row("emails", self.add("emails", status=status, **kw)))

    def add_job(self, state: JobState = JobState.QUEUED, kind: JobKind = JobKind.PROCESS_EMAIL,
                email_id: int | None = None, queue: str = "email-rag", **kw: Any) -> Job:
        job_id = max(self.tables["jobs"], default=0) + 1
        kw.setdefault("job_key", job_key(kind, kw.get("draft_id") or email_id or job_id))
        kw.setdefault("next_run_at", self.now)
        self.add("jobs", id=job_id, kind=kind, state=state, queue=queue, email_id=email_id,
                 attempts=kw.pop("attempts", 0), **kw)
        return Job.from_row(self.row("jobs", job_id))

    def add_send(self, draft_id: int, status: SendStatus, email_id: int | None = None,
                 **kw: Any) -> SendAttempt:
        """The draft's send attempt (the draft, approved, is added when missing)."""
        if draft_id not in self.tables["drafts"]:
            self.add("drafts", id=draft_id, email_id=email_id, status=DraftStatus.APPROVED,
                     version=1)
        attempt_id = self.add("send_attempts", draft_id=draft_id, status=status,
                              tries=kw.pop("tries", 0), **kw)
        return SendAttempt.from_row(self.row("send_attempts", attempt_id))

    # --- what a test reads back (typed) ---
    @property
    def jobs(self) -> dict[int, Job]:
        return {i: Job.from_row(r) for i, r in self.tables["jobs"].items()}

    @property
    def mails(self) -> dict[int, Mail]:
        return {i: Mail.from_row(r) for i, r in self.tables["emails"].items()}

    @property
    def drafts(self) -> dict[int, DraftStatus]:
        return {i: DraftStatus(r["status"]) for i, r in self.tables["drafts"].items()}

    def events_of(self, entity: str, entity_id: int) -> list[str]:
        return [e.event for e in self.events
                if e.entity_type == entity and e.entity_id == str(entity_id)]

    @contextmanager
    def transaction(self) -> Iterator[MemoryDatabase]:
        saved = copy.deepcopy((self.tables, self.steps, self.events))
        try:
            yield self
        except BaseException:
            self.tables, self.steps, self.events = saved
            raise

    def within(self, cur: Any) -> MemoryDatabase:
        return self

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
            row["approved_at"] = self.stamp()
        if query == "sends_mark_attempted":
            row["tries"] = row.get("tries", 0) + 1
        if query == "sends_move" and params.get("response") is not None:
            row["smtp_response"] = params["response"]
        if query == "jobs_move_requeue":
            row.update(attempts=0, next_run_at=self.now, worker=None, started_at=None,
                       finished_at=None, last_error=None,
                       queue=params.get("queue") or row["queue"])
        if query in ("jobs_move_close", "jobs_move_resolve"):
            row["finished_at"] = row.get("finished_at") or self.now
        if query == "jobs_move_resolve":
            row["last_error"] = f"{row.get('last_error') or ''} [resolved: {params['note']}]"
        row["updated_at"] = self.stamp()
        return 1

    def audit(self, events: list[Any]) -> None:
        self.events += events

    # --- ReviewRows ---
    def labelled(self, email_id: int, source: str) -> None:
        """Records the example; its text is not kept, so there is no vector to make."""
        self.labelled_examples.append((email_id, source))

    def reviewed(self, draft_id: int, outcome: Any, distance: float | None = None,
                 by: str = "") -> None:
        self.reviews[draft_id] = (str(outcome), distance)

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

    # --- JobRows: reads ---
    def get(self, job_id: int, lock: bool = False) -> Job | None:
        row = self.tables["jobs"].get(job_id)
        return None if row is None else Job.from_row(row)

    def by_key(self, key: str) -> Job | None:
        return next((Job.from_row(r) for r in self.tables["jobs"].values()
                     if r["job_key"] == key), None)

    def _jobs(self) -> list[Job]:
        return [Job.from_row(r) for _, r in sorted(self.tables["jobs"].items())]

    def stuck(self, older_than_s: float, limit: int) -> list[Job]:
        return [j for j in self._jobs() if rules.is_stuck(j, older_than_s, self.now)][:limit]

    def open_of_mail(self, email_id: int) -> list[Job]:
        return [j for j in self._jobs()
                if j.email_id == email_id and j.state in rules.OPEN_JOB_STATES
                and "[resolved: " not in (j.last_error or "")]

    def mail(self, email_id: int) -> Mail | None:
        row = self.tables["emails"].get(email_id)
        return None if row is None else Mail.from_row(row)

    def unknown_send(self, email_id: int) -> int | None:
        return next((s["id"] for _, s in sorted(self.tables["send_attempts"].items())
                     if s["status"] == SendStatus.UNKNOWN
                     and self.tables["drafts"].get(s["draft_id"], {}).get("email_id")
                     == email_id), None)

    def confirmed_steps(self, email_id: int) -> set[str]:
        return set(self.steps.get(email_id, set()))

    # --- JobRows: the worker's compare-and-set moves ---
    def _set_job(self, job_id: int, **changes: Any) -> None:
        row = self.tables["jobs"][job_id]
        row.update({k: _plain(v) for k, v in changes.items()}, updated_at=self.stamp())

    def _mine(self, job: Job, claimed_by: str, **changes: Any) -> bool:
        current = self.get(job.id)
        if current is None or not rules.mine(current, claimed_by):
            return False
        self._set_job(job.id, **changes)
        return True

    def claim(self, job_id: int, worker: str, queue: str | None) -> Job | None:
        job = self.get(job_id)
        if job is None or not rules.claimable(job, queue, self.now):
            return None
        self._set_job(job_id, state=JobState.PROCESSING, attempts=job.attempts + 1,
                      started_at=self.now, finished_at=None, worker=worker)
        return self.get(job_id)

    def claim_companions(self, job: Job, worker: str, limit: int) -> list[Job]:
        out = []
        for other in sorted((j for j in map(self.get, list(self.tables["jobs"])) if j),
                            key=lambda j: j.id):
            if len(out) >= limit:
                break
            if (other.id != job.id and other.kind == job.kind and other.queue == job.queue
                    and other.state == JobState.QUEUED and rules.claimable(other, None, self.now)):
                out.append(self.claim(other.id, worker, None))
        return [j for j in out if j is not None]

    def still_mine(self, job_id: int, worker: str, lock: bool = False) -> bool:
        job = self.get(job_id)
        return job is not None and rules.mine(job, worker)

    def finish(self, job: Job, worker: str) -> bool:
        return self._mine(job, worker, state=JobState.DONE, finished_at=self.now,
                          last_error=None)

    def handoff(self, job: Job, worker: str, queue: str) -> bool:
        return self._mine(job, worker, state=JobState.QUEUED, queue=queue, worker=None,
                          attempts=max(job.attempts - 1, 0), started_at=None,
                          next_run_at=self.now)

    def fail(self, job: Job, worker: str, state: JobState, error: str, delay: float) -> bool:
        return self._mine(job, worker, state=state, finished_at=self.now, last_error=error,
                          next_run_at=self.now + timedelta(seconds=delay))

    def reset_stuck(self, job: Job, state: JobState, error: str, delay: float) -> bool:
        current = self.get(job.id)
        if current is None or current.state != JobState.PROCESSING \
                or (current.worker, current.started_at) != (job.worker, job.started_at):
            return False
        self._set_job(job.id, state=state, worker=None, finished_at=self.now,
                      last_error=error, next_run_at=self.now + timedelta(seconds=delay))
        return True

    def create(self, new: Sequence[NewJob], *, actor: str, event: str) -> list[Job]:
        created: list[Job] = []
        for n in new:
            if self.by_key(n.key) is not None:
                continue  # INSERT IGNORE on the natural key
            job_id = self.add("jobs", kind=n.kind, job_key=n.key, state=JobState.QUEUED,
                              queue=n.queue, attempts=0, email_id=n.email_id,
                              draft_id=n.draft_id, next_run_at=self.now)
            created.append(Job.from_row(self.row("jobs", job_id)))
            self.events.append(AuditEvent(actor, "job", job_id, event, None, JobState.QUEUED,
                                          detail=n.detail))
        return created

    # --- JobRows: moves along the transition tables, through the real stores ---
    def move_job(self, job: Job, to: JobState, how: str, *, actor: str, event: str,
                 detail: dict[str, Any] | None = None, queue: str | None = None,
                 note: str | None = None) -> Job:
        columns: dict[str, Any] = {"queue": queue} if how == "requeue" else {}
        if how == "resolve":
            columns["note"] = note
        self.stores.jobs.move(self, job.id, to, actor=actor, event=event,
                              query=MOVE_QUERIES[how], current=job.state,
                              attempt=job.attempts if how == "requeue" else None,
                              detail=detail, **columns)
        moved = self.get(job.id)
        assert moved is not None
        return moved

    def move_mail(self, mail: Mail, to: MailStatus, *, actor: str, reason: str | None,
                  detail: dict[str, Any] | None = None, attempt: int | None = None) -> None:
        self.stores.mails.move(self, mail.id, to, actor=actor, reason=reason,
                               current=mail.status, detail=detail, attempt=attempt)

    def return_draft(self, draft_id: int, *, actor: str, reason: str,
                     detail: dict[str, Any]) -> None:
        self.stores.drafts.move(self, draft_id, DraftStatus.PENDING_REVIEW, actor=actor,
                                event="returned_to_review", reason=reason, detail=detail)

    def record(self, events: Sequence[AuditEvent]) -> None:
        self.events.extend(events)
