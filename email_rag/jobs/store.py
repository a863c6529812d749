"""Queue entries: claim, finish, fail, hand off, reset, retry, resolve.

``JobStore`` reads typed records through its ``JobRows`` port (core/ports.py; MariaDB:
``jobs.rows.MariaJobRows``, in memory: tests/doubles/memory_db.py), asks the pure rules
(``jobs.rules``) and writes what they decided, with its audit events.

Failure table of one job attempt:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| duplicate RQ delivery (entry not queued/failed, or not due) | no | yes | nothing to do: claim fails, no-op |
| step raises TransientError / unexpected error | yes, 30/120/600 s | yes (failed, next_run_at) | re-dispatch when due; confirmed steps skipped |
| fourth failed attempt (max_attempts, default 4: the first and three retries) | no | yes (dead, mail failed) | admin: `failed retry` (a refused send: back to review) |
| step raises PermanentError | no | yes (dead at once, mail failed) | admin: `failed retry` after fixing the cause |
| MariaDB lost mid-job | reconnect, wait | yes (entry still processing, ours) | continue in-process once back; not counted as an attempt |
| worker killed mid-step | by cleanup | entry stays processing | cleanup (> stuck_after_seconds, no heartbeat) -> failed -> retry cycle |
| worker alive but hung in a step (socket that never answers) | by cleanup | entry stays processing; heartbeat says overdue after the step deadline | cleanup -> failed -> retry cycle on another worker; the hung worker's late checkpoint is refused (claim CAS) |
| Redis lost the RQ job | yes | yes (queued/failed row) | re-dispatch enqueues it again |

Every transition writes an audit event in the same transaction. The admin moves
(retry, resolve, back to review) are defined on the business state: the table of
refusals is in ``jobs.rules``, and docs/states.md's "Admin actions per state".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TypedDict

from ..core.errors import PermanentError, StuckJobError
from ..core.jsonvalue import JsonObject
from ..core.ports import JobRows, NewJob
from ..core.records import Job, Mail, SendAttempt
from ..core.retry import RetryDecision, RetryPolicy
from ..core.rows import Row
from ..core.states import Actor, JobKind, JobState, MailStatus
from ..core.timing import ALIVE
from ..db import Database, slot_params, sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy
from ..db.connection import Cursor
from ..db.stores import Stores
from . import rules
from .rows import MariaJobRows, create_jobs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobListing:
    """One line of ``jobs list``: the entry and its mail's status and subject."""

    job: Job
    mail_status: str | None = None
    subject: str | None = None

    def as_row(self) -> Row:
        return {**asdict(self.job), "mail_status": self.mail_status, "subject": self.subject}


class Resolved(TypedDict):
    """What an admin resolve did (``--json`` and the web's message show it)."""

    email_id: int
    resolved_jobs: list[int]  # the entries closed with the note
    mail_status: MailStatus


@dataclass
class JobStore:
    """Queue entries: read (typed, through ``rows``) -> decide (``rules``) -> write.

    ``rows``: the ``JobRows`` port; by default MariaDB (``MariaJobRows`` over ``db``);
    unit tests pass the in-memory rows (``JobStore.over``)."""

    db: Database | None
    policy: RetryPolicy
    stores: Stores = field(default_factory=Stores.build)
    claim_query: str = "jobs_claim"  # queued/failed, due, of the delivery's queue -> processing
    rows: JobRows = None  # type: ignore[assignment]  # set in __post_init__

    def __post_init__(self) -> None:
        if self.rows is None:
            assert self.db is not None, "JobStore needs a database or its rows"
            self.rows = MariaJobRows(self.db, self.stores, self.claim_query)

    @classmethod
    def over(cls, rows: JobRows, policy: RetryPolicy) -> JobStore:
        """A JobStore on other rows than MariaDB's (the in-memory double of the tests)."""
        return cls(None, policy, rows=rows)

    def get(self, job_id: int) -> Job | None:
        return self.rows.get(job_id)

    def lock(self, cur: Cursor, job_id: int) -> Job:
        job = self.rows.within(cur).get(job_id, lock=True)
        if job is None:
            raise PermanentError(f"job {job_id} does not exist")
        return job

    def lock_key(self, cur: Cursor, key: str) -> Job:
        """The entry of a natural key, locked in the caller's transaction."""
        job = self.rows.within(cur).by_key(key)
        if job is None:
            raise PermanentError(f"no queue entry {key}")
        return job

    # --- claim / finish ---
    def claim(self, job_id: int, worker: str, queue: str | None = None) -> Job | None:
        """Atomically take the entry; None if another worker has it, it is not due, or it
        belongs to another queue than ``queue`` (the one the delivery came on)."""
        with self.rows.transaction() as rows:
            job = rows.claim(job_id, worker, queue)
            if job is None:
                return None
            rows.record([AuditEvent(
                Actor.WORKER, "job", job_id, "claimed", None, JobState.PROCESSING,
                attempt=job.attempts, detail={"worker": worker, "kind": job.kind})])
        return job

    def claim_companions(self, job: Job, worker: str, limit: int) -> list[Job]:
        """Up to ``limit`` other waiting, due entries of ``job``'s kind and queue, taken
        for the same worker in one transaction (a batch job runs them with ``job``; their
        own deliveries then find them taken: no-op). Entries another worker is claiming at
        that moment are skipped, never waited for."""
        if limit <= 0:
            return []
        with self.rows.transaction() as rows:
            jobs = rows.claim_companions(job, worker, limit)
            rows.record([AuditEvent(
                Actor.WORKER, "job", j.id, "claimed", None, JobState.PROCESSING,
                attempt=j.attempts, detail={"worker": worker, "kind": j.kind,
                                            "batch_of": job.id}) for j in jobs])
        return jobs

    def still_mine(self, job_id: int, worker: str) -> bool:
        return self.rows.still_mine(job_id, worker)

    def still_mine_in(self, cur: Cursor, job: Job, worker: str) -> bool:
        """The claim fence of a checkpoint: the entry is this worker's, locked."""
        return self.rows.within(cur).still_mine(job.id, worker, lock=True)

    def finish(self, job: Job, worker: str, detail: JsonObject | None = None) -> bool:
        with self.rows.transaction() as rows:
            events: list[AuditEvent] = []
            done = self._finish(rows, job, worker, events, detail)
            rows.record(events)
        return done

    def finish_in(self, cur: Cursor, job: Job, worker: str, events: list[AuditEvent],
                  detail: JsonObject | None = None) -> bool:
        """``finish`` inside the caller's transaction (the pipeline's last checkpoint): the
        compare-and-set move, its event appended to ``events`` (the caller writes them
        before its commit). False: the entry is no longer this worker's, nothing written."""
        return self._finish(self.rows.within(cur), job, worker, events, detail)

    @staticmethod
    def _finish(rows: JobRows, job: Job, worker: str, events: list[AuditEvent],
                detail: JsonObject | None) -> bool:
        done = rows.finish(job, worker)
        if done:
            events.append(AuditEvent(
                Actor.WORKER, "job", job.id, "state_changed", JobState.PROCESSING,
                JobState.DONE, attempt=job.attempts, detail=detail))
        return done

    def handoff(self, job: Job, worker: str, queue: str, reason: str) -> bool:
        with self.rows.transaction() as rows:
            events: list[AuditEvent] = []
            moved = self._handoff(rows, job, worker, queue, reason, events)
            rows.record(events)
        return moved

    def handoff_in(self, cur: Cursor, job: Job, worker: str, queue: str, reason: str,
                   events: list[AuditEvent]) -> bool:
        """``handoff`` inside the caller's transaction, like ``finish_in``; the caller
        enqueues the hand-off in Redis after its commit (``dispatch.hand_off``)."""
        return self._handoff(self.rows.within(cur), job, worker, queue, reason, events)

    @staticmethod
    def _handoff(rows: JobRows, job: Job, worker: str, queue: str, reason: str,
                 events: list[AuditEvent]) -> bool:
        moved = rows.handoff(job, worker, queue)
        if moved:
            events.append(AuditEvent(
                Actor.WORKER, "job", job.id, "handed_off", JobState.PROCESSING,
                JobState.QUEUED, attempt=job.attempts,
                detail={"queue": queue, "reason": reason}))
        return moved

    # --- failure ---
    def fail(self, job: Job, worker: str, error: BaseException) -> RetryDecision:
        """Record a failed attempt: failed with a retry time, or dead (mail failed)."""
        decision = self.policy.decide(job.attempts, error)
        state = rules.after_failure(decision)
        text = f"{type(error).__name__}: {error}"[:4000]
        with self.rows.transaction() as rows:
            if not rows.fail(job, worker, state, text, decision.delay if decision.retry else 0):
                return decision  # no longer ours (reset by cleanup): nothing to record
            rows.record([AuditEvent(
                Actor.WORKER, "job", job.id,
                "retry_scheduled" if decision.retry else "dead_letter",
                JobState.PROCESSING, state, attempt=job.attempts,
                detail={"error": text, "reason": decision.reason,
                        "retry_in_s": round(decision.delay, 3) if decision.retry else None})])
            if not decision.retry:
                self._mail_failed(rows, job, decision.reason)
        if decision.retry:
            log.warning("job %s attempt %s failed, retry in %.0f s: %s",
                        job.id, job.attempts, decision.delay, text)
        else:
            log.error("ALARM dead letter: job %s (%s, email %s) after attempt %s: %s",
                      job.id, job.kind, job.email_id, job.attempts, decision.reason)
        return decision

    @staticmethod
    def _mail_failed(rows: JobRows, job: Job, reason: str) -> None:
        """The mail of a dead entry becomes failed (unless it already rests somewhere final)."""
        mail = rows.mail(job.email_id) if job.email_id else None
        if mail is not None and rules.mail_fails(mail):
            rows.move_mail(mail, MailStatus.FAILED, actor=Actor.WORKER, reason=reason[:4000],
                           attempt=job.attempts, detail={"job_id": job.id})

    # --- maintenance ---
    def reset_stuck(self, older_than_s: int, limit: int = 500,
                    liveness: Callable[[list[tuple[int, str]]], dict[int, str]] | None = None,
                    ) -> list[Job]:
        """Entries processing longer than ``older_than_s`` go back into the retry cycle;
        ``liveness(claims)`` judges each (entry id, worker) by its heartbeat: ``ALIVE``
        ones are left alone, the others are reset with the verdict in the audit (no beat:
        the worker is gone; overdue: alive but hung in a step past its deadline)."""
        reset = []
        stuck = self.rows.stuck(older_than_s, limit)
        verdicts = liveness([(j.id, j.worker or "") for j in stuck]) \
            if liveness is not None and stuck else {}
        for job in stuck:
            verdict = verdicts.get(job.id, "no heartbeat checked")
            if verdict == ALIVE:
                continue  # one short transaction per entry: no range locks held
            err = StuckJobError(f"processing since {job.started_at} (> {older_than_s} s) on "
                                f"worker {job.worker}: {verdict}")
            decision = self.policy.decide(job.attempts, err)
            state = rules.after_failure(decision)
            with self.rows.transaction() as rows:
                if not rows.reset_stuck(job, state, f"StuckJobError: {err}",
                                        decision.delay if decision.retry else 0):
                    continue  # finished or re-claimed since the read: not stuck after all
                rows.record([AuditEvent(
                    Actor.SCHEDULER, "job", job.id, "stuck_reset", JobState.PROCESSING, state,
                    attempt=job.attempts,
                    detail={"worker": job.worker, "reason": decision.reason,
                            "heartbeat": verdict})])
                if not decision.retry:
                    self._mail_failed(rows, job, decision.reason)
                reset.append(replace(job, state=state))
        for job in reset:
            log.warning("reset stuck job %s (worker %s) to %s", job.id, job.worker, job.state)
        return reset

    # --- moves used by admin actions and approvals (all along JOB_MOVES) ---
    def requeue(self, cur: Cursor, job: Job, actor: str, event: str,
                queue: str | None = None, detail: JsonObject | None = None) -> Job:
        """A fresh retry cycle from now (approved again, regenerate, resend, admin retry).
        A processing entry is requeued too: its worker's own finish then finds it no longer
        its own and writes nothing (used when a draft is approved again while the run that
        marked it stale is finishing; the send attempt's own moves keep the send single).
        ``job``: the entry as read (locked) in this transaction; returns it requeued."""
        return self.rows.within(cur).move_job(job, JobState.QUEUED, "requeue", actor=actor,
                                              event=event, detail=detail, queue=queue)

    def queue_work(self, cur: Cursor, kind: JobKind, ref: int | str, *, actor: str, event: str,
                   queue: str, email_id: int | None = None, draft_id: int | None = None,
                   detail: JsonObject | None = None) -> Job:
        """The one way to ask for work on a mail or draft: its job row (natural key
        ``routing.job_key``) is created queued, or the existing one gets a fresh cycle
        (``requeue``); audited either way. Returns the entry; the caller enqueues it after
        its commit (``dispatch.enqueue``: or leaves it for re-dispatch, audited)."""
        new = NewJob(kind, ref, queue, email_id, draft_id, detail)
        for job in self.rows.within(cur).create([new], actor=actor, event=event):
            return job
        # a fresh cycle (also of a queued row: its attempts start again, audited)
        return self.requeue(cur, self.lock_key(cur, new.key), actor, event, queue=queue,
                            detail=detail)

    # --- admin: defined on the business state ---
    def retry(self, job_id: int, actor: str, note: str = "") -> str:
        """Admin retry. Returns ``queued`` (the entry resumes at its first unconfirmed
        step, a failed/manual mail resumes with it) or ``back_to_review`` (a send the relay
        refused: the draft is pending review again with the refusal shown). Raises
        ``TransitionRefused`` saying why when the business state does not allow it
        (``rules.retry_plan``). A deadlock or lock wait runs it again (db/busy.py)."""
        return repeated_when_busy("admin_retry", actor, "job", job_id,
                                  lambda repeats: self._retry(job_id, actor, note, repeats))

    def _retry(self, job_id: int, actor: str, note: str, repeats: list[AuditEvent]) -> str:
        with self.rows.transaction() as rows:
            rows.record(repeats)
            job = rows.get(job_id, lock=True)
            if job is None:
                raise PermanentError(f"job {job_id} does not exist")
            mail = rows.mail(job.email_id) if job.email_id else None
            unknown = rows.unknown_send(mail.id) if mail else None
            attempt = rows.send_of_draft(job.draft_id) \
                if job.kind == JobKind.SEND_DRAFT and job.draft_id else None
            steps = rows.confirmed_steps(mail.id) if mail else set()
            plan = rules.retry_plan(job, mail, unknown, attempt, steps)
            if plan.back_to_review:
                assert mail is not None and attempt is not None
                self._back_to_review(rows, job, mail, attempt, actor, note)
                return "back_to_review"
            rows.move_job(job, JobState.QUEUED, "requeue", actor=actor, event="admin_retry",
                          detail={"note": note, "last_error": job.last_error})
            if mail is not None and plan.resume_mail is not None:
                rows.move_mail(mail, plan.resume_mail, actor=actor, reason=None,
                               detail={"why": "admin retry", "job_id": job_id})
        return "queued"

    @staticmethod
    def _back_to_review(rows: JobRows, job: Job, mail: Mail, attempt: SendAttempt,
                        actor: str, note: str) -> None:
        """A refused send: the draft waits for staff again, the refusal is the mail's
        reason (staff fix the address and approve, or reject); the entry is closed."""
        reason = rules.refusal_reason(attempt)
        detail = {"note": note, "send_attempt": attempt.id, "job_id": job.id}
        rows.return_draft(int(job.draft_id or 0), actor=actor, reason=reason, detail=detail)
        rows.move_mail(mail, MailStatus.DRAFT_READY, actor=actor, reason=reason, detail=detail)
        if job.state != JobState.DONE:
            rows.move_job(job, JobState.DONE, "close", actor=actor,
                          event="returned_to_review", detail=detail)

    def resolve(self, job_id: int, actor: str, note: str) -> int | None:
        """Admin: close the entry's mail by hand (see ``resolve_mail``); an entry without a
        mail is closed alone. Returns the mail id (None for a mail-less entry)."""
        job = self.get(job_id)
        if job is None:
            raise PermanentError(f"queue entry {job_id} does not exist")
        if job.email_id:
            self.resolve_mail(job.email_id, actor, note)
            return job.email_id
        def close(repeats: list[AuditEvent]) -> None:
            with self.rows.transaction() as rows:
                rows.record(repeats)
                locked = rows.get(job_id, lock=True)
                assert locked is not None
                self._close(rows, locked, actor, note)

        repeated_when_busy("admin_resolve", actor, "job", job_id, close)
        return None

    def resolve_mail(self, email_id: int, actor: str, note: str) -> Resolved:
        """Admin: close a mail that needs a human, with a note: its open entries are
        closed (dead, with the note) and a failed/manual mail becomes resolved
        (``rules.check_resolve``). A deadlock or lock wait runs it again (db/busy.py)."""
        note = (note or "").strip()
        if not note:
            raise PermanentError("a note is required to resolve (say what was done)")
        return repeated_when_busy("admin_resolve", actor, "email", email_id,
                                  lambda repeats: self._resolve_mail(email_id, actor, note,
                                                                     repeats))

    def _resolve_mail(self, email_id: int, actor: str, note: str,
                      repeats: list[AuditEvent]) -> Resolved:
        with self.rows.transaction() as rows:
            rows.record(repeats)
            mail = rows.mail(email_id)
            if mail is None:
                raise PermanentError(f"mail {email_id} does not exist")
            jobs = rows.open_of_mail(email_id)
            rules.check_resolve(mail, rows.unknown_send(email_id) is not None, jobs)
            for job in jobs:
                self._close(rows, job, actor, note)
            closed = [j.id for j in jobs]
            rows.move_mail(mail, MailStatus.RESOLVED, actor=actor, reason=note[:4000],
                           detail={"why": "admin resolve", "jobs": closed})
        return Resolved(email_id=email_id, resolved_jobs=closed,
                        mail_status=MailStatus.RESOLVED)

    @staticmethod
    def _close(rows: JobRows, job: Job, actor: str, note: str) -> None:
        rules.check_close(job)
        rows.move_job(job, JobState.DEAD, "resolve", actor=actor, event="admin_resolved",
                      detail={"note": note}, note=note[:500])

    def list(self, states: Sequence[str] | None = None, limit: int = 100) -> list[JobListing]:
        assert self.db is not None
        rows = self.db.fetchall(sql("jobs_list"), {
            "states": ",".join(map(str, states or [])), "limit": limit})
        return [JobListing(Job.from_row(r), r["mail_status"], r["subject"]) for r in rows]


def mark_enqueued(cur: Cursor, job_ids: Sequence[int]) -> None:
    """Stamp job rows as handed to Redis (``enqueued_at``), in the caller's transaction."""
    if job_ids:
        cur.execute(sql("ingest_mark_enqueued", ids=len(job_ids)), slot_params(ids=job_ids))


__all__ = ["JobListing", "JobStore", "NewJob", "create_jobs", "mark_enqueued"]
