"""The failure console's domain: what needs a human, and the admin's retry/resolve.

The web UI and the CLI call these; the decisions themselves are defined on the
business state in ``JobStore.retry`` / ``JobStore.resolve_mail`` and the send
decision (``sending.admin.resolve_unknown``). What this module adds: one list
across mails, queue entries, index state and send attempts (the same for
`failed list` and the web console), and bulk retry that puts the entries on Redis.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| retry of an entry that is not retryable (done, running, gone, mail final, send unknown) | no | yes: refused with the reason | - |
| some entries of a bulk retry refused | - | yes: the others are queued | the result names both lists |
| Redis down after a retry | yes | yes: rows queued in MariaDB | re-dispatch enqueues them (result says enqueued=False) |
| resolve of a mail whose send outcome is unknown | no | yes: refused | decide the send attempt (mark sent / resend) |
| resolve with an empty note | no | yes: refused | give a note |
| resolve of a mail with nothing open | no | yes: refused, nothing changed | - |
| MariaDB down | yes | yes: each retry/resolve is one transaction | ask again; a repeat is refused or a no-op |
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from ..core.errors import BadInputError, PermanentError
from ..core.records import Job
from ..core.rows import FromRow
from ..core.states import JobKind, JobState, MailStatus, SendStatus
from ..db import sql
from ..jobs.dispatch import enqueue
from ..jobs.rules import OPEN_JOB_STATES, resolve_refusal, retry_refusal
from ..jobs.store import Resolved

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

# Kinds of attention, in the order the console shows them.
KINDS = ("failed", "manual", "dead", "send_unknown", "retrying", "partially_indexed")


@dataclass(frozen=True)
class AttentionItem(FromRow):
    """One mail that needs a human (a row of ``web_attention_items``: the mail, its worst
    queue entry, its latest send attempt) and what the console derives from it
    (``describe``): why it is listed and which admin actions the store would accept."""

    email_id: int
    status: str
    subject: str | None = None
    from_addr: str | None = None
    status_reason: str | None = None
    index_status: str | None = None
    index_missing: str | None = None
    received_at: datetime | None = None
    mailbox: str | None = None
    job_id: int | None = None
    job_kind: str | None = None
    job_state: str | None = None
    attempts: int | None = None
    job_error: str | None = None
    next_run_at: datetime | None = None
    job_updated_at: datetime | None = None
    send_id: int | None = None
    send_status: str | None = None
    send_tries: int | None = None
    send_error: str | None = None
    # derived by ``describe``
    kinds: list[str] = field(default_factory=list)
    last_error: str | None = None
    can_retry: bool = False
    can_resolve: bool = False
    can_decide_send: bool = False


@dataclass
class RetryResult:
    retried: list[int] = field(default_factory=list)  # queued again
    to_review: list[int] = field(default_factory=list)  # refused sends: back to staff review
    refused: dict[int, str] = field(default_factory=dict)  # job id -> why
    enqueued: bool = False


def attention_items(svc: ServiceContext, kind: str | None = None,
                    limit: int = 1000) -> list[AttentionItem]:
    """One item per mail that needs a human or is degraded, oldest first, with ``kinds``
    (why it is listed), ``last_error``, ``attempts`` and which actions apply:
    ``can_retry`` (job id), ``can_resolve``, ``can_decide_send``."""
    rows = svc.db.fetchall(sql("web_attention_items"), {"limit": limit})
    items = [describe(AttentionItem.from_row(r)) for r in rows]
    if kind:
        items = [i for i in items if kind in i.kinds]
    return items


def counts_by_kind(items: list[AttentionItem]) -> dict[str, int]:
    return {k: sum(1 for i in items if k in i.kinds) for k in KINDS}


def describe(r: AttentionItem) -> AttentionItem:
    """The item with why it is listed and the actions the store's own rules
    (``JobStore.retry`` / ``resolve_mail``) would accept, asked with its facts."""
    kinds = []
    if r.status in (MailStatus.FAILED, MailStatus.MANUAL):
        kinds.append(str(r.status))
    if r.job_state == JobState.DEAD and r.status != MailStatus.RESOLVED:
        kinds.append("dead")
    if r.send_status == SendStatus.UNKNOWN:
        kinds.append("send_unknown")
    if r.job_state == JobState.FAILED:
        kinds.append("retrying")
    if r.index_status == "partially_indexed":
        kinds.append("partially_indexed")
    send_unknown = "send_unknown" in kinds
    if send_unknown:
        last_error, attempts = r.send_error, r.send_tries
    elif r.job_state in (JobState.DEAD, JobState.FAILED):
        last_error, attempts = r.job_error or r.status_reason, r.attempts
    else:
        last_error, attempts = r.status_reason or r.job_error, r.attempts
    if not last_error and r.index_status == "partially_indexed":
        last_error = f"missing in: {r.index_missing or 'unknown store'}"
    unknown = r.send_id if send_unknown else None
    refused_send = r.job_kind == JobKind.SEND_DRAFT and r.send_status == SendStatus.FAILED
    can_retry = bool(r.job_id) and retry_refusal(r.status, r.job_state, unknown,
                                                 refused_send, r.job_kind) is None
    open_jobs = [Job(r.job_id, r.job_kind, r.job_state, "", r.attempts or 0)
                 ] if r.job_id and r.job_state in OPEN_JOB_STATES else []
    can_resolve = resolve_refusal(r.status, send_unknown, open_jobs) is None
    return replace(r, kinds=kinds, last_error=last_error, attempts=attempts,
                   can_retry=can_retry, can_resolve=can_resolve, can_decide_send=send_unknown)


def retry_jobs(svc: ServiceContext, job_ids: list[int], actor: str, note: str = "") -> RetryResult:
    """Admin retry of several entries, each decided on its business state
    (``JobStore.retry``): queued again, back to review, or refused with the reason."""
    result = RetryResult()
    for job_id in dict.fromkeys(job_ids):  # once each, in the given order
        try:
            outcome = svc.jobs.retry(job_id, actor, note)
        except PermanentError as e:
            result.refused[job_id] = str(e)
            continue
        (result.retried if outcome == "queued" else result.to_review).append(job_id)
    queued = [job for i in result.retried
              if (job := svc.jobs.get(i)) is not None and job.state == JobState.QUEUED]
    result.enqueued = enqueue(svc, queued, actor)
    return result


def resolve_mail(svc: ServiceContext, email_id: int, actor: str, note: str) -> Resolved:
    """Close a mail that needs a human by hand, with a note (``JobStore.resolve_mail``)."""
    if not (note or "").strip():
        raise BadInputError("a note is required to resolve (say what was done)")
    return svc.jobs.resolve_mail(email_id, actor, note)


class ResolvedJob(TypedDict):
    job_id: int
    email_id: int | None  # its mail, resolved with it (None: a mail-less entry)


def resolve_job(svc: ServiceContext, job_id: int, actor: str, note: str) -> ResolvedJob:
    """Close by job id: the entry's mail is resolved (an entry without a mail alone)."""
    if not (note or "").strip():
        raise BadInputError("a note is required to resolve (say what was done)")
    email_id = svc.jobs.resolve(job_id, actor, note)
    return ResolvedJob(job_id=job_id, email_id=email_id)


def review_filters(svc: ServiceContext) -> dict[str, list[str]]:
    """Mailbox names and categories for the review queue's filters."""
    return {"mailboxes": [r["name"] for r in svc.db.fetchall(sql("web_mailbox_names"))],
            "categories": [r["category"] for r in svc.db.fetchall(sql("web_categories"))]}
