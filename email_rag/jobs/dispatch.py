"""Re-dispatch (the outbox): job rows that MariaDB says are waiting but Redis lost.

MariaDB's ``jobs`` table is the truth; Redis only carries work. A job row is
``queued`` from the transaction that created it. If the hand-off to Redis
after the commit failed (Redis down), or Redis lost the job (restart without
persistence, flush), ``redispatch`` finds the row - ``queued``, or ``failed``
with its ``next_run_at`` due - asks Redis whether it still holds the job
(``JobQueue.is_pending``) and enqueues the missing ones, page by page.

Guarantee: at-least-once hand-off. A job enqueued twice (redispatch racing
the poller's own hand-off, or a worker claiming it meanwhile) is harmless:
the RQ job id is deterministic and the worker's claim in MariaDB decides.
``grace_seconds`` keeps redispatch away from rows committed a moment ago,
whose hand-off is most likely still in flight.

Failure table (situation | retry? | state known? | resume?):
  Redis still down      | raises QueueUnavailableError; next scheduler run | rows stay queued | yes
  MariaDB down          | raises DatabaseUnavailableError; next run | nothing changed | yes
  crash after enqueue, before enqueued_at is set | next run sees the job pending in Redis | yes | -
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from ..adapters.queue import JobQueue
from ..core.errors import QueueUnavailableError
from ..core.records import Job
from ..core.states import Actor, JobState
from ..core.timing import micros
from ..db import Database, sql
from ..db.audit import AuditEvent, AuditLog, write_events
from .store import mark_enqueued

log = logging.getLogger(__name__)


class QueueServices(Protocol):
    """What dispatch needs of a process's services (``Services`` provides it): the
    database that holds the job rows, its audit log, and the queue that carries them."""

    @property
    def db(self) -> Database: ...

    @property
    def audit(self) -> AuditLog: ...

    @property
    def queue(self) -> JobQueue: ...


def enqueue(services: QueueServices, jobs: Iterable[Job | None], actor: str) -> bool:
    """Put committed job rows on Redis, or leave them for re-dispatch (the one way every
    caller hands work over: approval, regenerate, no-reply, index sync, the poller).

    The rows are already ``queued`` in MariaDB (the truth); when Redis is unreachable
    nothing is lost: ``redispatch`` enqueues them later, and ``left_for_redispatch``
    audits each row. Returns True when Redis took them all.
    """
    rows = [j for j in jobs if j is not None]
    if not rows:
        return True
    try:
        services.queue.enqueue([(j.queue, j.id) for j in rows])
        return True
    except QueueUnavailableError as e:
        left_for_redispatch(services, rows, actor, str(e), "enqueue")
        return False


def hand_off(services: QueueServices, job: Job, to_queue: str, actor: str) -> bool:
    """Enqueue a hand-off of a job row already moved to ``to_queue``; or leave it for
    re-dispatch, audited like ``enqueue``."""
    try:
        services.queue.hand_off(job.id, to_queue, job.queue)
        return True
    except QueueUnavailableError as e:
        left_for_redispatch(services, [replace(job, queue=to_queue)], actor, str(e), "hand_off")
        return False


def left_for_redispatch(services: QueueServices, rows: list[Job], actor: str,
                        error: str, what: str) -> None:
    """Audit job rows that stay ``queued`` for re-dispatch because Redis did not take them:
    one ``enqueue_failed`` event per row (its queue, the mail if any, the error, what was
    tried, how it resumes), written together."""
    log.warning("%s of job(s) %s failed; the rows stay queued in MariaDB and re-dispatch "
                "enqueues them: %s", what, [j.id for j in rows], error)
    services.audit.record(*[AuditEvent(
        actor, "job", j.id, "enqueue_failed", attempt=j.attempts,
        detail={"queue": j.queue, "what": what, "error": error,
                "resume": "re-dispatch enqueues the queued row",
                **({"email_id": j.email_id} if j.email_id else {})})
        for j in rows])


def redispatch(services: QueueServices, *, batch_size: int = 500, grace_seconds: float = 5.0) -> int:
    """Enqueue due jobs that Redis no longer holds; returns how many were enqueued."""
    db, queue = services.db, services.queue
    total, after_id = 0, 0
    while True:
        rows = db.fetchall(sql("ingest_redispatch_candidates"),
                           {"queued": str(JobState.QUEUED), "failed": str(JobState.FAILED),
                            "grace_us": micros(grace_seconds), "after_id": after_id,
                            "limit": batch_size})
        if not rows:
            break
        after_id = int(rows[-1]["id"])
        missing = [r for r in rows if not queue.is_pending(int(r["id"]), r["queue"])]
        if missing:
            queue.enqueue((r["queue"], int(r["id"])) for r in missing)
            ids = [int(r["id"]) for r in missing]
            with db.transaction() as cur:
                mark_enqueued(cur, ids)
                write_events(cur, [AuditEvent(
                    Actor.SCHEDULER, "job", r["id"], "redispatched", attempt=int(r["attempts"]),
                    detail={"state": r["state"], "queue": r["queue"],
                            "reason": "job row waiting in MariaDB but missing in Redis"})
                    for r in missing])
            total += len(missing)
        if len(rows) < batch_size:
            break
    if total:
        log.info("redispatch: enqueued %d job(s) that Redis did not hold", total)
    return total
