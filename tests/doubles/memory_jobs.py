"""``JobRows`` in memory: the queue entries, mails, drafts and send attempts JobStore's
decisions read and write, for fast unit tests of those decisions.

It keeps the same contract as ``jobs.rows.MariaJobRows``: compare-and-set writes that
answer False when the row is not in the state read, status moves checked against the
transition tables (``TransitionRefused``) and audited, a transaction rolled back on an
error. It does not model concurrency between connections: that is MariaDB's part,
proved by the integration tests.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from email_rag.core.errors import TransitionRefused
from email_rag.core.records import Job, Mail, SendAttempt
from email_rag.core.routing import job_key
from email_rag.core.states import (
    DRAFT_MOVES,
    JOB_MOVES,
    MAIL_MOVES,
    DraftStatus,
    JobKind,
    JobState,
    MailStatus,
    SendStatus,
)
from email_rag.db.audit import AuditEvent
from email_rag.jobs import rules

START = datetime(2026, 1, 5, 9, 0, 0)


def _check(record: str, record_id: int, moves: dict, current: Any, to: Any) -> None:
    if current != to and to not in moves.get(current, frozenset()):
        raise TransitionRefused(record, record_id, current, to, "not in the transition table")


@dataclass
class MemoryJobRows:
    now: datetime = START
    jobs: dict[int, Job] = field(default_factory=dict)
    mails: dict[int, Mail] = field(default_factory=dict)
    drafts: dict[int, DraftStatus] = field(default_factory=dict)
    sends: dict[int, SendAttempt] = field(default_factory=dict)  # by draft id
    steps: dict[int, set[str]] = field(default_factory=dict)  # confirmed steps by mail id
    events: list[AuditEvent] = field(default_factory=list)

    # --- building a world ---
    def add_mail(self, status: MailStatus = MailStatus.RECEIVED, **kw: Any) -> Mail:
        mail = Mail(len(self.mails) + 1, status, **kw)
        self.mails[mail.id] = mail
        return mail

    def add_job(self, state: JobState = JobState.QUEUED, kind: JobKind = JobKind.PROCESS_EMAIL,
                email_id: int | None = None, queue: str = "email-rag", **kw: Any) -> Job:
        job_id = len(self.jobs) + 1
        job = Job(job_id, kind, state, queue, email_id=email_id,
                  job_key=job_key(kind, kw.get("draft_id") or email_id or job_id),
                  next_run_at=kw.pop("next_run_at", self.now), **kw)
        self.jobs[job.id] = job
        return job

    def add_send(self, draft_id: int, status: SendStatus, **kw: Any) -> SendAttempt:
        self.drafts.setdefault(draft_id, DraftStatus.APPROVED)
        attempt = SendAttempt(len(self.sends) + 1, draft_id, status, **kw)
        self.sends[draft_id] = attempt
        return attempt

    def later(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def events_of(self, entity: str, entity_id: int) -> list[str]:
        return [e.event for e in self.events
                if e.entity_type == entity and e.entity_id == str(entity_id)]

    # --- JobRows ---
    @contextmanager
    def transaction(self) -> Iterator[MemoryJobRows]:
        saved = copy.deepcopy((self.jobs, self.mails, self.drafts, self.sends, self.events))
        try:
            yield self
        except BaseException:
            self.jobs, self.mails, self.drafts, self.sends, self.events = saved
            raise

    def within(self, cur: Any) -> MemoryJobRows:
        return self

    def get(self, job_id: int, lock: bool = False) -> Job | None:
        return self.jobs.get(job_id)

    def by_key(self, key: str) -> Job | None:
        return next((j for j in self.jobs.values() if j.job_key == key), None)

    def stuck(self, older_than_s: float, limit: int) -> list[Job]:
        return [j for j in sorted(self.jobs.values(), key=lambda j: j.id)
                if rules.is_stuck(j, older_than_s, self.now)][:limit]

    def open_of_mail(self, email_id: int) -> list[Job]:
        return [j for j in sorted(self.jobs.values(), key=lambda j: j.id)
                if j.email_id == email_id and j.state in rules.OPEN_JOB_STATES
                and "[resolved: " not in (j.last_error or "")]

    def mail(self, email_id: int) -> Mail | None:
        return self.mails.get(email_id)

    def unknown_send(self, email_id: int) -> int | None:
        return next((a.id for a in self.sends.values()
                     if a.status == SendStatus.UNKNOWN
                     and any(j.email_id == email_id and j.draft_id == a.draft_id
                             for j in self.jobs.values())), None)

    def send_of_draft(self, draft_id: int) -> SendAttempt | None:
        return self.sends.get(draft_id)

    def confirmed_steps(self, email_id: int) -> set[str]:
        return set(self.steps.get(email_id, set()))

    def _cas(self, job: Job, claimed_by: str, **changes: Any) -> bool:
        current = self.jobs.get(job.id)
        if current is None or not rules.mine(current, claimed_by):
            return False
        self.jobs[job.id] = replace(current, **changes)
        return True

    def claim(self, job_id: int, worker: str, queue: str | None) -> Job | None:
        job = self.jobs.get(job_id)
        if job is None or not rules.claimable(job, queue, self.now):
            return None
        job = replace(job, state=JobState.PROCESSING, attempts=job.attempts + 1,
                      started_at=self.now, finished_at=None, worker=worker)
        self.jobs[job_id] = job
        return job

    def still_mine(self, job_id: int, worker: str, lock: bool = False) -> bool:
        job = self.jobs.get(job_id)
        return job is not None and rules.mine(job, worker)

    def finish(self, job: Job, worker: str) -> bool:
        return self._cas(job, worker, state=JobState.DONE, finished_at=self.now,
                         last_error=None)

    def handoff(self, job: Job, worker: str, queue: str) -> bool:
        return self._cas(job, worker, state=JobState.QUEUED, queue=queue, worker=None,
                         attempts=max(job.attempts - 1, 0), started_at=None,
                         next_run_at=self.now)

    def fail(self, job: Job, worker: str, state: JobState, error: str, delay: float) -> bool:
        return self._cas(job, worker, state=state, finished_at=self.now, last_error=error,
                         next_run_at=self.now + timedelta(seconds=delay))

    def reset_stuck(self, job: Job, state: JobState, error: str, delay: float) -> bool:
        current = self.jobs.get(job.id)
        if current is None or current.state != JobState.PROCESSING \
                or (current.worker, current.started_at) != (job.worker, job.started_at):
            return False
        self.jobs[job.id] = replace(current, state=state, worker=None, finished_at=self.now,
                                    last_error=error,
                                    next_run_at=self.now + timedelta(seconds=delay))
        return True

    def move_job(self, job: Job, to: JobState, how: str, *, actor: str, event: str,
                 detail: dict[str, Any] | None = None, queue: str | None = None,
                 note: str | None = None) -> Job:
        current = self.jobs[job.id]
        _check("job", job.id, JOB_MOVES, current.state, to)
        if current.state != job.state:
            raise TransitionRefused("job", job.id, job.state, to, "the row changed meanwhile")
        if how == "requeue":
            moved = replace(current, state=to, attempts=0, next_run_at=self.now, worker=None,
                            started_at=None, finished_at=None, last_error=None,
                            queue=queue or current.queue)
        elif how == "resolve":
            moved = replace(current, state=to, finished_at=current.finished_at or self.now,
                            last_error=f"{current.last_error or ''} [resolved: {note}]")
        else:
            moved = replace(current, state=to, finished_at=current.finished_at or self.now)
        self.jobs[job.id] = moved
        self.events.append(AuditEvent(actor, "job", job.id, event, current.state, to,
                                      attempt=job.attempts if how == "requeue" else None,
                                      detail=detail))
        return moved

    def move_mail(self, mail: Mail, to: MailStatus, *, actor: str, reason: str | None,
                  detail: dict[str, Any] | None = None, attempt: int | None = None) -> None:
        current = self.mails[mail.id]
        _check("email", mail.id, MAIL_MOVES, current.status, to)
        if current.status == to:
            return
        self.mails[mail.id] = replace(current, status=to, status_reason=reason)
        self.events.append(AuditEvent(actor, "email", mail.id, "state_changed", current.status,
                                      to, attempt=attempt,
                                      detail={**({"reason": reason} if reason else {}),
                                              **(detail or {})} or None))

    def return_draft(self, draft_id: int, *, actor: str, reason: str,
                     detail: dict[str, Any]) -> None:
        current = self.drafts[draft_id]
        _check("draft", draft_id, DRAFT_MOVES, current, DraftStatus.PENDING_REVIEW)
        self.drafts[draft_id] = DraftStatus.PENDING_REVIEW
        self.events.append(AuditEvent(actor, "draft", draft_id, "returned_to_review", current,
                                      DraftStatus.PENDING_REVIEW, detail=detail))

    def record(self, events: Sequence[AuditEvent]) -> None:
        self.events.extend(events)
