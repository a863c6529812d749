"""Retention per mailbox: a case's mails, attachments, drafts and edits are deleted
``retention_days`` after the case closed (``MailboxConfig.retention_days``; 0 = keep).

A **case** is a thread of a mailbox (``thread_key``; a mail without one is a case of its
own). A mail is **closed** in the statuses of ``MAIL_TERMINAL`` (``no_reply``, ``sent``,
``rejected``, ``resolved``, ``history``); ``emails.closed_at`` says since when (kept by the
triggers of migration 0350; a bounce that reopens a sent mail clears it). A case is closed
when all its mails are, since its last mail closed. Never deleted: a mail of an open case,
a mail a worker holds (its entry or a draft's is ``processing``), a mail whose reply is in
flight (send attempt ``pending``, ``attempted``, ``unknown``).

``run`` is one pass over every mailbox with retention: first the mails a crashed pass
marked (``erasure_marks``, cause ``retention``), then the expired ones, ``batch`` at a time,
each batch through ``erasure.erase_batch`` (the code of ``privacy forget``) with one audit
event per batch (``retention_erased`` on the mailbox: counts and mail ids, no personal data)
written in the batch's delete transaction.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| vector or graph store down | no: the pass ends ``partial`` (audited ``retention_partial``) | yes: the batch is marked, its rows untouched | the next pass erases the marked mails first |
| killed (SIGKILL) at any point | - | yes: marks before the stores, rows in one transaction | the next pass finishes the marked mails |
| a mail's case reopened after it was marked (a bounce, a new mail in the thread) | - | the delete transaction re-checks: released, its index marked for the sync | - |
| a worker holds a mail, or its reply is in flight | - | left unmarked (counted ``busy``) | a later pass |
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.audit_event import AuditEvent, utcnow
from ..core.errors import StoreUnavailableError
from ..core.records import Job
from ..core.routing import queues
from ..core.states import Actor, JobKind
from ..db import sql
from ..db.audit import AuditEntry
from ..jobs.arming import arm_run
from ..jobs.handoff import Handoff
from ..jobs.store import NewJob
from . import erasure

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

CAUSE = "retention"
NO_LIMIT = 2**62


@dataclass
class MailboxPass:
    mailbox: str
    retention_days: int
    closed_before: str  # ISO time: cases closed before it are due
    mails: int = 0  # erased (dry run: would be erased)
    drafts: int = 0
    draft_edits: int = 0
    send_attempts: int = 0
    attachments: int = 0
    busy: int = 0  # due, but a worker holds them or a reply is in flight: a later pass
    released: int = 0  # marked by a crashed pass, their case open again: kept
    batches: int = 0


@dataclass
class RetentionResult:
    state: str  # planned | done | partial
    mailboxes: list[MailboxPass] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "error": self.error,
                "mailboxes": [asdict(m) for m in self.mailboxes]}


def _due(svc_or_cur: Any, mailbox_id: int, cutoff: datetime, after: int, upto: int,
         limit: int) -> list[int]:
    rows = svc_or_cur.fetchall(sql("retention_due"), {
        "mailbox": mailbox_id, "cutoff": cutoff, "after": after, "upto": upto, "limit": limit})
    return [int(r["id"]) for r in rows]


def _still_due(mailbox_id: int, cutoff: datetime) -> erasure.Keep:
    def keep(cur: Any, ids: list[int]) -> set[int]:
        if not ids:
            return set()
        lo, hi = min(ids), max(ids)
        return set(ids) & set(_due(cur, mailbox_id, cutoff, lo - 1, hi, hi - lo + 1))
    return keep


def run(svc: ServiceContext, *, clock: Callable[[], datetime] = utcnow, dry_run: bool = False,
        actor: str = Actor.SCHEDULER, batch: int | None = None) -> RetentionResult:
    """One pass over every mailbox whose ``retention_days`` is set (``clock``: UTC without
    tzinfo, as MariaDB stores times). ``dry_run``: count what would be erased, erase
    nothing."""
    size = batch or svc.settings.retention_batch_size
    now = clock()
    ids = {r["name"]: int(r["id"]) for r in svc.db.fetchall(sql("retention_mailboxes"))}
    result = RetentionResult("planned" if dry_run else "done")
    on = {b.name: b for b in svc.mailboxes.configs() if b.retention_days > 0}
    if not dry_run:  # retention switched off after a crashed pass began some erasures
        for name in sorted(set(ids) - set(on)):
            _release_all(svc, name, ids[name], actor)
    for box in svc.mailboxes.configs():
        if box.name not in on or box.name not in ids:
            continue
        cutoff = now - timedelta(days=box.retention_days)
        one = MailboxPass(box.name, box.retention_days, cutoff.isoformat(sep=" "))
        result.mailboxes.append(one)
        try:
            if dry_run:
                _count(svc, one, ids[box.name], cutoff, size)
            else:
                _erase(svc, one, ids[box.name], cutoff, size, actor)
        except StoreUnavailableError as e:
            result.state = "partial"
            result.error = f"a store is down: {e}"
            svc.audit.record(AuditEvent(actor, "mailbox", box.name, "retention_partial",
                                        detail={"mails": one.mails, "batches": one.batches,
                                                "error": type(e).__name__,
                                                "next": "the next retention pass"}))
            break
    return result


def _release_all(svc: ServiceContext, name: str, mailbox_id: int, actor: str) -> None:
    while ids := erasure.marked(svc, CAUSE, mailbox_id, 0, svc.settings.retention_batch_size):
        erasure.release(svc, ids)
        svc.audit.record(AuditEvent(actor, "mailbox", name, "retention_released",
                                    detail={"mails": len(ids), "email_ids": ids,
                                            "why": "retention is off for this mailbox"}))


def _count(svc: ServiceContext, one: MailboxPass, mailbox_id: int, cutoff: datetime,
           size: int) -> None:
    after = 0
    while ids := _due(svc.db, mailbox_id, cutoff, after, NO_LIMIT, size):
        after = ids[-1]
        held = erasure.busy(svc.db, ids)
        wanted = [i for i in ids if i not in held]
        one.busy += len(held)
        _add(one, erasure.row_counts(svc.db, wanted), erasure.attachment_count(svc.db, wanted))


def _add(one: MailboxPass, counts: dict[str, int], attachments: int) -> None:
    one.mails += counts.get("mails", 0)
    one.drafts += counts.get("drafts", 0)
    one.draft_edits += counts.get("draft_edits", 0)
    one.send_attempts += counts.get("send_attempts", 0)
    one.attachments += attachments


def _erase(svc: ServiceContext, one: MailboxPass, mailbox_id: int, cutoff: datetime, size: int,
           actor: str) -> None:
    keep = _still_due(mailbox_id, cutoff)

    def events(done: erasure.BatchResult) -> list[AuditEvent]:
        c = done.counts
        return [AuditEvent(actor, "mailbox", one.mailbox, "retention_erased", detail={
            "retention_days": one.retention_days, "closed_before": one.closed_before,
            "mails": len(done.erased), "attachments": c.get("attachments", 0),
            "drafts": c.get("drafts", 0), "draft_edits": c.get("draft_edits", 0),
            "send_attempts": c.get("send_attempts", 0), "jobs": c.get("jobs", 0),
            "labelled_examples": c.get("labelled_examples", 0), "busy": len(done.busy),
            "released": len(done.released), "email_ids": done.erased})]

    def one_batch(ids: list[int]) -> None:
        done = erasure.erase_batch(svc, ids, CAUSE, keep=keep, events=events)
        _add(one, done.counts, done.counts.get("attachments", 0))
        one.busy += len(done.busy)
        one.released += len(done.released)
        one.batches += 1

    after = 0  # first what a crashed pass began
    while ids := erasure.marked(svc, CAUSE, mailbox_id, after, size):
        after = ids[-1]
        one_batch(ids)
    after = 0
    while due := _due(svc.db, mailbox_id, cutoff, after, NO_LIMIT, size):
        after = due[-1]
        held = erasure.busy(svc.db, due)
        one.busy += len(held)
        if ids := [i for i in due if i not in held]:
            one_batch(ids)


def erased_in(svc: ServiceContext, email_id: int) -> list[AuditEntry]:
    """The retention events that erased mail ``email_id`` (what happened to it, after it is
    gone; its own earlier events stay under entity ``email``)."""
    return AuditEntry.from_rows(svc.db.fetchall(sql("retention_erased_in"),
                                                {"id": str(int(email_id))}))


# --- queue side: the scheduler arms a pass for the vector worker (it deletes points) ---

def schedule(services: ServiceContext) -> dict[str, Any]:
    """The periodic job: arm one pass when a mailbox has retention. Opens no store."""
    if not any(b.retention_days > 0 for b in services.mailboxes.configs(fresh=True)) and not (
            services.db.fetchone(sql("retention_any_marked"))):
        return {}
    queue = queues(services.settings)[1]
    job, armed, enqueued = arm_run(services, NewJob(JobKind.RETENTION, "pass", queue,
                                                    detail={"queue": queue}),
                                   Actor.SCHEDULER, "retention_scheduled")
    return {"job_id": job.id, "armed": armed, "enqueued": enqueued}


def run_job(services: ServiceContext, job: Job, worker: str) -> Handoff | None:
    """Handler of ``retention`` queue entries, in the worker that owns the vector store. A
    store that is down ends the pass partial (audited); the next scheduled pass finishes."""
    queue = queues(services.settings)[1]
    if job.queue != queue:
        return Handoff(queue, f"retention runs on queue {queue}")
    result = run(services, actor=f"{Actor.WORKER}:{worker}")
    log.info("retention job %s: %s", job.id, result.as_dict())
    return None
