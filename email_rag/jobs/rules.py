"""JobStore's decisions as pure functions over typed records: records and ``now`` in, a
decision or a ``TransitionRefused`` (the one "not allowed in this state" family) out.

No cursor and no SQL here: ``JobStore`` (email_rag/jobs/store.py) reads the records
through its ``JobRows`` port, asks these rules, and writes what they decided. The same
rules answer the failure console's "may I offer this action?" (``retry_refusal``,
``resolve_refusal``), so the console never offers what the store then refuses.

| admin action | refused when | message says |
|---|---|---|
| retry | mail resolved/sent/rejected/no_reply | it is final |
| retry | send outcome unknown | decide it with `sends resolve` |
| retry | entry queued/running, or done with nothing failed | nothing to retry |
| retry of a refused send (5xx) | - | back to review: draft pending, refusal shown |
| resolve | mail final, send unknown, entry running | why, and what to do |
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..core.errors import TransitionRefused
from ..core.records import Job, Mail, SendAttempt
from ..core.retry import RetryDecision
from ..core.states import MAIL_TERMINAL, JobKind, JobState, MailStatus, SendStatus, Step

OPEN_MAIL = (MailStatus.FAILED, MailStatus.MANUAL)  # mails that wait for a human
# entries an admin's resolve closes (jobs_open_of_mail_for_update), or finds running
OPEN_JOB_STATES = (JobState.DEAD, JobState.FAILED, JobState.QUEUED, JobState.PROCESSING)
CLAIMABLE = (JobState.QUEUED, JobState.FAILED)
CLOSABLE = (JobState.DEAD, JobState.FAILED, JobState.QUEUED)


@dataclass(frozen=True)
class Refusal:
    """Why an admin action is not allowed on a mail's business state."""

    record: str  # the record whose state refuses: "email", "job", "send_attempt"
    current: str  # that record's state
    why: str


# --- the worker's moves ---

def claimable(job: Job, queue: str | None, now: datetime) -> bool:
    """A delivery may take the entry: it waits (queued, or failed with its retry due) and
    belongs to the delivery's queue (``queue`` None: run in-process, any queue)."""
    due = job.next_run_at is None or job.next_run_at <= now
    return job.state in CLAIMABLE and due and (queue is None or job.queue == queue)


def mine(job: Job, worker: str) -> bool:
    """The entry is processing under this worker's claim (its finish, fail or hand-off
    counts; a late worker's does not)."""
    return job.state == JobState.PROCESSING and job.worker == worker


def after_failure(decision: RetryDecision) -> JobState:
    """Failed with a retry time, or dead."""
    return JobState.FAILED if decision.retry else JobState.DEAD


def is_stuck(job: Job, older_than_s: float, now: datetime) -> bool:
    return (job.state == JobState.PROCESSING and job.started_at is not None
            and job.started_at < now - timedelta(seconds=older_than_s))


def mail_fails(mail: Mail | None) -> bool:
    """The mail of a dead entry becomes failed, unless it already rests somewhere final."""
    return mail is not None and mail.status not in MAIL_TERMINAL \
        and mail.status != MailStatus.FAILED


# --- admin: retry ---

def unknown_send_refusal(attempt_id: int) -> Refusal:
    return Refusal("send_attempt", SendStatus.UNKNOWN,
                   "whether the reply left is unknown; decide it with `email-rag sends "
                   f"resolve {attempt_id} --mark-sent|--resend|--give-up` (web: the send "
                   "decision), never by a job retry")


def retry_refusal(mail_status: str | None, job_state: str, unknown_send: int | None,
                  send_refused: bool = False, job_kind: str | None = None) -> Refusal | None:
    """The rule of an admin retry of an entry, None when allowed: what ``JobStore.retry``
    enforces and what the failure console offers. ``unknown_send``: the id of a send
    attempt of the mail whose outcome is unknown; ``send_refused``: the entry's send was
    refused by the relay (the retry returns the draft to review). A history mail is final,
    but its index entry only indexes it: that one may run again."""
    history_index = job_kind == JobKind.INDEX_HISTORY and mail_status == MailStatus.HISTORY
    if mail_status in MAIL_TERMINAL and not history_index:
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


@dataclass(frozen=True)
class RetryPlan:
    back_to_review: bool  # a refused send: the draft waits for staff again, entry closed
    resume_mail: MailStatus | None = None  # the failed/manual mail resumes in this status


def send_refused(job: Job, mail: Mail | None, attempt: SendAttempt | None) -> bool:
    return (job.kind == JobKind.SEND_DRAFT and mail is not None and attempt is not None
            and attempt.status == SendStatus.FAILED)


def retry_plan(job: Job, mail: Mail | None, unknown_send: int | None,
               attempt: SendAttempt | None, confirmed_steps: Set[str]) -> RetryPlan:
    """What an admin retry does, or ``TransitionRefused`` saying why not."""
    refused_send = send_refused(job, mail, attempt)
    refusal = retry_refusal(mail.status if mail else None, job.state, unknown_send,
                            refused_send, job.kind)
    if refusal is not None:
        ids = {"email": mail.id if mail else None, "job": job.id, "send_attempt": unknown_send}
        raise TransitionRefused(refusal.record, ids[refusal.record], refusal.current,
                                "retry" if refusal.record != "job" else JobState.QUEUED,
                                refusal.why)
    if refused_send:
        return RetryPlan(back_to_review=True)
    if (job.state == JobState.DONE and job.kind == JobKind.PROCESS_EMAIL
            and {str(s) for s in Step} <= set(confirmed_steps)):
        # the entry would resume after its last step and run nothing: the mail would rest
        # in its resume status with nothing to move it
        raise TransitionRefused("job", job.id, job.state, JobState.QUEUED,
                                "every step of the entry ran and its outcome is the mail's "
                                f"status ({mail.status if mail else 'gone'}): a retry would "
                                "run nothing; resolve the mail or answer it by hand")
    if mail is not None and mail.status in OPEN_MAIL:
        return RetryPlan(False, resume_status(job, confirmed_steps))
    return RetryPlan(False)


def resume_status(job: Job, confirmed_steps: Set[str]) -> MailStatus:
    """The status a mail resumes in: approved for a send, else by its confirmed steps."""
    if job.kind == JobKind.SEND_DRAFT:
        return MailStatus.APPROVED
    return MailStatus.CLASSIFIED if "classify" in confirmed_steps else MailStatus.RECEIVED


def refusal_reason(attempt: SendAttempt) -> str:
    """The mail's reason when a refused send goes back to review."""
    answer = attempt.smtp_response or attempt.last_error or "refused"
    return (f"the relay refused the reply ({answer[:500]}); check the address, then "
            "approve again or reject")


# --- admin: resolve ---

def resolve_refusal(mail_status: str, unknown_send: bool,
                    open_jobs: Sequence[Job]) -> Refusal | None:
    """The rule of an admin resolve of a mail, None when allowed: what
    ``JobStore.resolve_mail`` enforces and what the failure console offers.
    ``open_jobs``: the mail's entries not done."""
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


def check_resolve(mail: Mail, unknown_send: bool, open_jobs: Sequence[Job]) -> None:
    """An admin resolve of the mail is allowed, or ``TransitionRefused`` says why."""
    refusal = resolve_refusal(mail.status, unknown_send, open_jobs)
    if refusal is None:
        return
    if refusal.record == "email":
        raise TransitionRefused("email", mail.id, refusal.current, MailStatus.RESOLVED,
                                refusal.why)
    running = next(j for j in open_jobs if j.state == JobState.PROCESSING)
    raise TransitionRefused("job", running.id, refusal.current, JobState.DEAD, refusal.why)


def check_close(job: Job) -> None:
    """An entry an admin closes by hand must wait (queued, failed or dead)."""
    if job.state not in CLOSABLE:
        raise TransitionRefused("job", job.id, job.state, JobState.DEAD,
                                f"the entry is {job.state}: nothing to close")
