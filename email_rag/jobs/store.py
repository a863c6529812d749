"""Queue entries in MariaDB: claim, finish, fail, hand off, reset, retry, resolve.

Failure table of one job attempt:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| duplicate RQ delivery (entry not queued/failed, or not due) | no | yes | nothing to do: claim fails, no-op |
| step raises TransientError / unexpected error | yes, 30/120/600 s | yes (failed, next_run_at) | re-dispatch when due; confirmed steps skipped |
| third failed attempt | no | yes (dead, mail failed) | admin: `failed retry` (a refused send: back to review) |
| step raises PermanentError | no | yes (dead at once, mail failed) | admin: `failed retry` after fixing the cause |
| MariaDB lost mid-job | reconnect, wait | yes (entry still processing, ours) | continue in-process once back; not counted as an attempt |
| worker killed mid-step | by cleanup | entry stays processing | cleanup (> stuck_after_seconds) -> failed -> retry cycle |
| Redis lost the RQ job | yes | yes (queued/failed row) | re-dispatch enqueues it again |

Every transition writes an audit event in the same transaction. The admin moves
(retry, resolve, back to review) are defined on the business state; see ``retry``
and ``resolve`` and the README's "Admin actions per state".

| admin action | refused when | message says |
|---|---|---|
| retry | mail resolved/sent/rejected/no_reply | it is final |
| retry | send outcome unknown | decide it with `sends resolve` |
| retry | entry queued/running, or done with nothing failed | nothing to retry |
| retry of a refused send (5xx) | - | back to review: draft pending, refusal shown |
| resolve | mail final, send unknown, entry running | why, and what to do |
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..core.errors import PermanentError, StuckJobError, TransitionRefused
from ..core.records import Job
from ..core.retry import RetryDecision, RetryPolicy
from ..core.routing import job_key
from ..core.states import (
    MAIL_TERMINAL,
    Actor,
    DraftStatus,
    JobKind,
    JobState,
    MailStatus,
    SendStatus,
)
from ..db import Database, slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor
from ..db.stores import Stores

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Refusal:
    """Why an admin action is not allowed on a mail's business state."""

    record: str  # the record whose state refuses: "email", "job", "send_attempt"
    current: str  # that record's state
    why: str


OPEN_MAIL = (MailStatus.FAILED, MailStatus.MANUAL)  # mails that wait for a human
# entries an admin's resolve closes (jobs_open_of_mail_for_update), or finds running
OPEN_JOB_STATES = (JobState.DEAD, JobState.FAILED, JobState.QUEUED, JobState.PROCESSING)


def unknown_send_refusal(attempt_id: int) -> Refusal:
    return Refusal("send_attempt", SendStatus.UNKNOWN,
                   "whether the reply left is unknown; decide it with `email-rag sends "
                   f"resolve {attempt_id} --mark-sent|--resend|--give-up` (web: the send "
                   "decision), never by a job retry")


def retry_refusal(mail_status: str | None, job_state: str, unknown_send: int | None,
                  send_refused: bool = False) -> Refusal | None:
    """The rule of an admin retry of an entry, None when allowed: what ``JobStore.retry``
    enforces and what the failure console offers. ``unknown_send``: the id of a send
    attempt of the mail whose outcome is unknown; ``send_refused``: the entry's send was
    refused by the relay (the retry returns the draft to review)."""
    if mail_status in MAIL_TERMINAL:
        return Refusal("email", str(mail_status),
                       f"the mail is {mail_status}, which is final; nothing to retry")
    if unknown_send is not None:
        return unknown_send_refusal(unknown_send)
    if send_refused:
        return None
    if job_state in (JobState.QUEUED, JobState.PROCESSING):
        return Refusal("job", job_state, f"the entry is {job_state} already")
    if job_state == JobState.DONE and mail_status not in OPEN_MAIL:
        return Refusal("job", job_state, "the entry is done and its mail is "
                       f"{mail_status or 'gone'}: nothing failed")
    return None


def resolve_refusal(mail_status: str, unknown_send: bool,
                    open_jobs: Sequence[Job]) -> Refusal | None:
    """The rule of an admin resolve of a mail, None when allowed: what
    ``JobStore.resolve_mail`` enforces and what the failure console offers.
    ``open_jobs``: the mail's entries not done (state, id, kind, attempts)."""
    if mail_status in MAIL_TERMINAL:
        return Refusal("email", mail_status,
                       f"the mail is {mail_status} already, which is final")
    if unknown_send:
        return Refusal("email", mail_status,
                       "it has a send attempt with an unknown outcome: decide it (`email-rag "
                       "sends resolve`: mark sent, resend or give up) instead")
    running = [j for j in open_jobs if j.state == JobState.PROCESSING]
    if running:
        return Refusal("job", JobState.PROCESSING, "the entry is running right now; try "
                       "again when it has finished")
    if mail_status in OPEN_MAIL:
        return None
    if open_jobs:  # closing it would strand the mail: nothing would move it again
        waiting = open_jobs[0]
        return Refusal("email", mail_status,
                       f"the mail is {mail_status} and its entry {waiting.id} "
                       f"({waiting.kind}) is in its retry cycle (attempt "
                       f"{waiting.attempts}), not waiting for a human; it ends dead with "
                       "the mail failed if it keeps failing; resolve it then")
    return Refusal("email", mail_status, "nothing failed or waits for a human here")


@dataclass(frozen=True)
class JobListing:
    """One line of ``jobs list``: the entry and its mail's status and subject."""

    job: Job
    mail_status: str | None = None
    subject: str | None = None

    def as_row(self) -> dict[str, Any]:
        return {**asdict(self.job), "mail_status": self.mail_status, "subject": self.subject}


@dataclass
class JobStore:
    db: Database
    policy: RetryPolicy
    stores: Stores = field(default_factory=Stores.build)
    claim_query: str = "jobs_claim"  # queued/failed, due, of the delivery's queue -> processing

    def get(self, job_id: int) -> Job | None:
        row = self.db.fetchone(sql("jobs_get"), {"id": job_id})
        return Job.from_row(row) if row else None

    def lock(self, cur: Cursor, job_id: int) -> Job:
        return Job.from_row(self.stores.jobs.lock(cur, job_id))

    def lock_key(self, cur: Cursor, key: str) -> Job:
        """The entry of a natural key, locked in the caller's transaction."""
        row = cur.fetchone(sql("jobs_by_key_for_update"), {"job_key": key})
        if row is None:
            raise PermanentError(f"no queue entry {key}")
        return Job.from_row(row)

    # --- claim / finish ---
    def claim(self, job_id: int, worker: str, queue: str | None = None) -> Job | None:
        """Atomically take the entry; None if another worker has it, it is not due, or it
        belongs to another queue than ``queue`` (the one the delivery came on)."""
        with self.db.transaction() as cur:
            if cur.execute(sql(self.claim_query),
                           {"id": job_id, "worker": worker, "queue": queue}) != 1:
                return None
            row = cur.fetchone(sql("jobs_get"), {"id": job_id})
            assert row is not None
            job = Job.from_row(row)
            write_events(cur, [AuditEvent(
                Actor.WORKER, "job", job_id, "claimed", None, JobState.PROCESSING,
                attempt=job.attempts, detail={"worker": worker, "kind": job.kind})])
        return job

    def still_mine(self, job_id: int, worker: str) -> bool:
        return self.db.fetchone(sql("jobs_still_mine"), {"id": job_id, "worker": worker}) is not None

    def finish(self, job: Job, worker: str, detail: dict[str, Any] | None = None) -> bool:
        with self.db.transaction() as cur:
            events: list[AuditEvent] = []
            done = self.finish_in(cur, job, worker, events, detail)
            write_events(cur, events)
        return done

    def finish_in(self, cur: Cursor, job: Job, worker: str, events: list[AuditEvent],
                  detail: dict[str, Any] | None = None) -> bool:
        """``finish`` inside the caller's transaction (the pipeline's last checkpoint): the
        compare-and-set UPDATE, its event appended to ``events`` (the caller writes them
        before its commit). False: the entry is no longer this worker's, nothing written."""
        done = cur.execute(sql("jobs_finish"), {"id": job.id, "worker": worker}) == 1
        if done:
            events.append(AuditEvent(
                Actor.WORKER, "job", job.id, "state_changed", JobState.PROCESSING,
                JobState.DONE, attempt=job.attempts, detail=detail))
        return done

    def handoff(self, job: Job, worker: str, queue: str, reason: str) -> bool:
        with self.db.transaction() as cur:
            events: list[AuditEvent] = []
            moved = self.handoff_in(cur, job, worker, queue, reason, events)
            write_events(cur, events)
        return moved

    def handoff_in(self, cur: Cursor, job: Job, worker: str, queue: str, reason: str,
                   events: list[AuditEvent]) -> bool:
        """``handoff`` inside the caller's transaction, like ``finish_in``; the caller
        enqueues the hand-off in Redis after its commit (``dispatch.hand_off``)."""
        moved = cur.execute(sql("jobs_handoff"),
                            {"id": job.id, "worker": worker, "queue": queue}) == 1
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
        text = f"{type(error).__name__}: {error}"[:4000]
        with self.db.transaction() as cur:
            state = JobState.FAILED if decision.retry else JobState.DEAD
            changed = cur.execute(sql("jobs_fail"), {
                "id": job.id, "worker": worker, "state": state, "error": text,
                "delay": decision.delay if decision.retry else 0})
            if changed != 1:  # no longer ours (reset by cleanup): nothing to record
                return decision
            events = [AuditEvent(
                Actor.WORKER, "job", job.id,
                "retry_scheduled" if decision.retry else "dead_letter",
                JobState.PROCESSING, state, attempt=job.attempts,
                detail={"error": text, "reason": decision.reason,
                        "retry_in_s": round(decision.delay, 3) if decision.retry else None})]
            write_events(cur, events)
            if not decision.retry:
                self._mail_failed(cur, job, decision.reason)
        if decision.retry:
            log.warning("job %s attempt %s failed, retry in %.0f s: %s",
                        job.id, job.attempts, decision.delay, text)
        else:
            log.error("ALARM dead letter: job %s (%s, email %s) after attempt %s: %s",
                      job.id, job.kind, job.email_id, job.attempts, decision.reason)
        return decision

    def _mail_failed(self, cur: Cursor, job: Job, reason: str) -> None:
        """The mail of a dead entry becomes failed (unless it already rests somewhere final)."""
        if not job.email_id:
            return
        mail = cur.fetchone(sql("emails_get_for_update"), {"id": job.email_id})
        if not mail or mail["status"] in MAIL_TERMINAL or mail["status"] == MailStatus.FAILED:
            return
        self.stores.mails.move(cur, job.email_id, MailStatus.FAILED, actor=Actor.WORKER,
                               reason=reason[:4000], attempt=job.attempts, row=mail,
                               detail={"job_id": job.id})

    # --- maintenance ---
    def reset_stuck(self, older_than_s: int, limit: int = 500,
                    alive: Callable[[list[int]], set[int]] | None = None) -> list[Job]:
        """Entries processing longer than ``older_than_s`` go back into the retry cycle;
        ``alive(ids)`` names those whose worker still beats: they are left alone."""
        reset = []
        stuck = [Job.from_row(r) for r in self.db.fetchall(
            sql("jobs_stuck"), {"seconds": older_than_s, "limit": limit})]
        beating = alive([j.id for j in stuck]) if alive is not None and stuck else set()
        for job in stuck:
            if job.id in beating:
                continue  # one short transaction per entry: no range locks held
            with self.db.transaction() as cur:
                err = StuckJobError(
                    f"processing since {job.started_at} (> {older_than_s} s) on worker "
                    f"{job.worker}; presumed dead")
                decision = self.policy.decide(job.attempts, err)
                state = JobState.FAILED if decision.retry else JobState.DEAD
                if cur.execute(sql("jobs_reset_stuck"), {
                        "id": job.id, "state": state, "error": f"StuckJobError: {err}",
                        "delay": decision.delay if decision.retry else 0,
                        "worker": job.worker, "started_at": job.started_at}) != 1:
                    continue  # finished or re-claimed since the read: not stuck after all
                write_events(cur, [AuditEvent(
                    Actor.SCHEDULER, "job", job.id, "stuck_reset", JobState.PROCESSING, state,
                    attempt=job.attempts,
                    detail={"worker": job.worker, "reason": decision.reason})])
                if not decision.retry:
                    self._mail_failed(cur, job, decision.reason)
                reset.append(replace(job, state=state))
        for job in reset:
            log.warning("reset stuck job %s (worker %s) to %s", job.id, job.worker, job.state)
        return reset

    # --- moves used by admin actions and approvals (all along JOB_MOVES) ---
    def requeue(self, cur: Cursor, job: Job, actor: str, event: str,
                queue: str | None = None, detail: dict[str, Any] | None = None) -> Job:
        """A fresh retry cycle from now (approved again, regenerate, resend, admin retry).
        A processing entry is requeued too: its worker's own finish then finds it no longer
        its own and writes nothing (used when a draft is approved again while the run that
        marked it stale is finishing; the send attempt's own moves keep the send single).
        ``job``: the entry as read (locked) in this transaction; returns it requeued."""
        self.stores.jobs.move(cur, job.id, JobState.QUEUED, actor=actor, event=event,
                              query="jobs_move_requeue", current=job.state,
                              attempt=job.attempts, detail=detail, queue=queue)
        return replace(job, state=JobState.QUEUED, attempts=0, worker=None, started_at=None,
                       finished_at=None, last_error=None, queue=queue or job.queue)

    def queue_work(self, cur: Cursor, kind: JobKind, ref: int | str, *, actor: str, event: str,
                   queue: str, email_id: int | None = None, draft_id: int | None = None,
                   detail: dict[str, Any] | None = None) -> Job:
        """The one way to ask for work on a mail or draft: its job row (natural key
        ``routing.job_key``) is created queued, or the existing one gets a fresh cycle
        (``requeue``); audited either way. Returns the entry; the caller enqueues it after
        its commit (``dispatch.enqueue``: or leaves it for re-dispatch, audited)."""
        new = NewJob(kind, ref, queue, email_id, draft_id, detail)
        for job in create_jobs(cur, [new], actor=actor, event=event):
            return job
        # a fresh cycle (also of a queued row: its attempts start again, audited)
        return self.requeue(cur, self.lock_key(cur, new.key), actor, event, queue=queue,
                            detail=detail)

    # --- admin: defined on the business state ---
    def retry(self, job_id: int, actor: str, note: str = "") -> str:
        """Admin retry. Returns ``queued`` (the entry resumes at its first unconfirmed
        step, a failed/manual mail resumes with it) or ``back_to_review`` (a send the relay
        refused: the draft is pending review again with the refusal shown). Raises
        ``TransitionRefused`` saying why when the business state does not allow it."""
        with self.db.transaction() as cur:
            job = self.lock(cur, job_id)
            mail = (cur.fetchone(sql("emails_get_for_update"), {"id": job.email_id})
                    if job.email_id else None)
            unknown = cur.fetchall(sql("web_mail_unknown_sends"),
                                   {"email_id": mail["id"]}) if mail else []
            attempt = cur.fetchone(sql("sends_by_draft_for_update"),
                                   {"draft_id": job.draft_id}) \
                if job.kind == JobKind.SEND_DRAFT and job.draft_id else None
            refused_send = bool(mail and attempt and attempt["status"] == SendStatus.FAILED)
            refusal = retry_refusal(mail["status"] if mail else None, job.state,
                                    unknown[0]["id"] if unknown else None, refused_send)
            if refusal is not None:
                ids = {"email": mail["id"] if mail else None, "job": job_id,
                       "send_attempt": unknown[0]["id"] if unknown else None}
                raise TransitionRefused(refusal.record, ids[refusal.record], refusal.current,
                                        "retry" if refusal.record != "job" else JobState.QUEUED,
                                        refusal.why)
            if refused_send:
                self._back_to_review(cur, job, mail, attempt, actor, note)
                return "back_to_review"
            open_mail = bool(mail) and mail["status"] in OPEN_MAIL
            self.requeue(cur, job, actor, "admin_retry",
                         detail={"note": note, "last_error": job.last_error})
            if open_mail:
                self.stores.mails.move(cur, mail["id"], self._resume_status(cur, job),
                                       actor=actor, row=mail, reason=None,
                                       detail={"why": "admin retry", "job_id": job_id})
        return "queued"

    def _back_to_review(self, cur: Cursor, job: Job, mail: dict[str, Any],
                        attempt: dict[str, Any], actor: str, note: str) -> None:
        """A refused send: the draft waits for staff again, the refusal is the mail's
        reason (staff fix the address and approve, or reject); the entry is closed."""
        answer = attempt["smtp_response"] or attempt["last_error"] or "refused"
        reason = (f"the relay refused the reply ({answer[:500]}); check the address, then "
                  "approve again or reject")
        detail = {"note": note, "send_attempt": attempt["id"], "job_id": job.id}
        self.stores.drafts.move(cur, int(job.draft_id or 0), DraftStatus.PENDING_REVIEW,
                                actor=actor, event="returned_to_review", reason=reason,
                                detail=detail)
        self.stores.mails.move(cur, mail["id"], MailStatus.DRAFT_READY, actor=actor, row=mail,
                               reason=reason, detail=detail)
        if job.state != JobState.DONE:
            self.stores.jobs.move(cur, job.id, JobState.DONE, actor=actor, current=job.state,
                                  event="returned_to_review", query="jobs_move_close",
                                  detail=detail)

    @staticmethod
    def _resume_status(cur: Cursor, job: Job) -> MailStatus:
        """The status a mail resumes in: approved for a send, else by its confirmed steps."""
        if job.kind == JobKind.SEND_DRAFT:
            return MailStatus.APPROVED
        steps = {r["step"] for r in cur.fetchall(sql("steps_confirmed"),
                                                  {"email_id": job.email_id})}
        return MailStatus.CLASSIFIED if "classify" in steps else MailStatus.RECEIVED

    def resolve(self, job_id: int, actor: str, note: str) -> int | None:
        """Admin: close the entry's mail by hand (see ``resolve_mail``); an entry without a
        mail is closed alone. Returns the mail id (None for a mail-less entry)."""
        job = self.get(job_id)
        if job is None:
            raise PermanentError(f"queue entry {job_id} does not exist")
        if job.email_id:
            self.resolve_mail(job.email_id, actor, note)
            return job.email_id
        with self.db.transaction() as cur:
            self._close(cur, self.lock(cur, job_id), actor, note)
        return None

    def resolve_mail(self, email_id: int, actor: str, note: str) -> dict[str, Any]:
        """Admin: close a mail that needs a human, with a note: its open entries are
        closed (dead, with the note) and a failed/manual mail becomes resolved."""
        note = (note or "").strip()
        if not note:
            raise PermanentError("a note is required to resolve (say what was done)")
        with self.db.transaction() as cur:
            mail = cur.fetchone(sql("emails_get_for_update"), {"id": email_id})
            if mail is None:
                raise PermanentError(f"mail {email_id} does not exist")
            unknown = bool(cur.fetchall(sql("web_mail_unknown_sends"), {"email_id": email_id}))
            jobs = [Job.from_row(r) for r in cur.fetchall(sql("jobs_open_of_mail_for_update"),
                                                          {"email_id": email_id})]
            refusal = resolve_refusal(mail["status"], unknown, jobs)
            if refusal is not None:
                rid = email_id if refusal.record == "email" else next(
                    j.id for j in jobs if j.state == JobState.PROCESSING)
                wanted = MailStatus.RESOLVED if refusal.record == "email" else JobState.DEAD
                raise TransitionRefused(refusal.record, rid, refusal.current, wanted, refusal.why)
            closed = [j.id for j in jobs]
            for job in jobs:
                self._close(cur, job, actor, note)
            self.stores.mails.move(cur, email_id, MailStatus.RESOLVED, actor=actor, row=mail,
                                   reason=note[:4000],
                                   detail={"why": "admin resolve", "jobs": closed})
        return {"email_id": email_id, "resolved_jobs": closed, "mail_status": MailStatus.RESOLVED}

    def _close(self, cur: Cursor, job: Job, actor: str, note: str) -> None:
        if job.state not in (JobState.DEAD, JobState.FAILED, JobState.QUEUED):
            raise TransitionRefused("job", job.id, job.state, JobState.DEAD,
                                    f"the entry is {job.state}: nothing to close")
        self.stores.jobs.move(cur, job.id, JobState.DEAD, actor=actor, current=job.state,
                              event="admin_resolved", query="jobs_move_resolve",
                              detail={"note": note}, note=note[:500])

    def list(self, states: Sequence[str] | None = None, limit: int = 100) -> list[JobListing]:
        rows = self.db.fetchall(sql("jobs_list"), {
            "states": ",".join(map(str, states or [])), "limit": limit})
        return [JobListing(Job.from_row(r), r["mail_status"], r["subject"]) for r in rows]


@dataclass(frozen=True)
class NewJob:
    """A queue entry to create: its natural key is ``routing.job_key(kind, ref)``."""

    kind: JobKind
    ref: int | str
    queue: str
    email_id: int | None = None
    draft_id: int | None = None
    detail: dict[str, Any] | None = None  # of its audit event

    @property
    def key(self) -> str:
        return job_key(self.kind, self.ref)


MAX_JOB_ROWS = 500  # rows per INSERT


def create_jobs(cur: Cursor, new: Sequence[NewJob], *, actor: str, event: str) -> list[Job]:
    """The one way job rows are created (``queue_work``, the poller's batch, the index
    sync's arming), in the caller's transaction: multi-row INSERT IGNORE on the natural
    key (named query ``jobs_insert``), ``MAX_JOB_ROWS`` per statement. Every created row
    gets its audit event (``event``: none -> queued, with the entry's ``detail``); an entry
    whose key exists is left as it is and not returned (the caller decides what it means:
    a fresh cycle, a coalesced run, a row kept)."""
    created: list[Job] = []
    for i in range(0, len(new), MAX_JOB_ROWS):
        chunk = new[i:i + MAX_JOB_ROWS]
        rows = cur.fetchall(sql("jobs_insert", rows=(len(chunk), 6)), slot_params(rows=[
            (str(n.kind), n.key, n.email_id, n.draft_id, n.queue, str(JobState.QUEUED))
            for n in chunk]))
        created += [Job.from_row(r) for r in rows]
    detail = {n.key: n.detail for n in new}
    write_events(cur, [AuditEvent(actor, "job", j.id, event, None, JobState.QUEUED,
                                  detail=detail[j.job_key]) for j in created])
    return created


def mark_enqueued(cur: Cursor, job_ids: Sequence[int]) -> None:
    """Stamp job rows as handed to Redis (``enqueued_at``), in the caller's transaction."""
    if job_ids:
        cur.execute(sql("ingest_mark_enqueued", ids=len(job_ids)), slot_params(ids=job_ids))
