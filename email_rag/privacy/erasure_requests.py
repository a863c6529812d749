"""An erasure asked for in the web UI (admin only): ``personal_data.forget``, the code of
``email-rag privacy forget``, run where the vector store may be opened.

With a Qdrant server any process may delete points: the web process runs forget at once.
With a local Qdrant folder only the vector worker may open it, so the web process stores the
request (table ``privacy_requests``: the address, which the erasure needs, until it is done) and
arms a ``privacy_forget`` queue entry on the vector queue in one transaction; the vector
worker runs forget and deletes the request when the erasure is done.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a store is down, or a mail is being processed (forget ``partial``) | yes: ``StoreUnavailableError`` to the job runner, the entry's retry cycle | yes: ``privacy_erasures`` ``partial``, the request kept | the retry runs forget again (idempotent) |
| the worker is killed mid-erasure | the stuck-job reset | as forget's (marks, one transaction per batch) | as above |
| the same person asked for again while queued | - | the request's reason is the newest; one entry (coalesced) | - |
| Redis down when arming | - | the entry is in MariaDB | re-dispatch enqueues it |
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.actors import person
from ..core.errors import BadInputError, StoreUnavailableError
from ..core.ports import NewJob
from ..core.records import Job
from ..core.routing import queues
from ..core.states import JobKind
from ..db import sql
from ..jobs.arming import arm_run
from ..jobs.handoff import Handoff
from . import erasure, personal_data

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

RECENT = 50  # erasures listed on the admin page


@dataclass(frozen=True)
class Requested:
    address_hash: str
    queued: bool  # True: the vector worker carries it out; False: done here
    result: personal_data.ForgetResult | None = None  # when done here
    job_id: int | None = None  # when queued


def runs_here(settings: Any) -> bool:
    """Whether this process may delete vector points itself (a Qdrant server); with a local
    Qdrant folder only the vector worker may."""
    return bool(settings.qdrant_url)


def plan(svc: ServiceContext, address: str) -> dict[str, int]:
    """What forget would delete in MariaDB (the vector points are counted where the vector
    store may be opened: by forget itself)."""
    return erasure.row_counts(svc.db, personal_data.mail_ids(svc, personal_data.normalise(address)))


def request(svc: ServiceContext, address: str, reason: str, by: str) -> Requested:
    """Erase ``address`` now (a Qdrant server) or queue it for the vector worker."""
    addr = personal_data.normalise(address)
    digest = personal_data.address_hash(addr)
    reason = " ".join((reason or "").split())[:500]
    if not reason:
        raise BadInputError("give the reason for the erasure: it is kept")
    if runs_here(svc.settings):
        return Requested(digest, False, personal_data.forget(svc, addr, reason, by))
    queue = queues(svc.settings)[1]
    job, _, _ = arm_run(
        svc, NewJob(JobKind.PRIVACY_FORGET, digest, queue, detail={"queue": queue}),
        person(by), "privacy_forget_queued",
        also=lambda cur: cur.execute(sql("privacy_request_put"), {
            "hash": digest, "address": addr, "reason": reason, "by": person(by)}))
    return Requested(digest, True, job_id=job.id)


def recent(svc: ServiceContext, limit: int = RECENT) -> list[dict[str, Any]]:
    """The latest erasures, queued ones included (named by hash only)."""
    return svc.db.fetchall(sql("privacy_erasures_recent"), {"limit": limit})


def run_job(services: ServiceContext, job: Job, worker: str) -> Handoff | None:
    """Handler of ``privacy_forget`` entries, in the worker that owns the vector store."""
    queue = queues(services.settings)[1]
    if job.queue != queue:
        return Handoff(queue, f"privacy_forget runs on queue {queue}")
    digest = job.job_key.split(":", 1)[1]
    found = services.db.fetchone(sql("privacy_request_get"), {"hash": digest})
    if found is None:  # carried out already (a repeated delivery)
        return None
    r = personal_data.forget(services, str(found["address"]), str(found["reason"]),
                       str(found["requested_by"]))
    if r.state == "partial":  # the retry cycle runs it again
        raise StoreUnavailableError(f"privacy forget partial: {r.erased} mail(s) erased, "
                                    f"{r.busy} busy; {r.error}")
    services.db.execute(sql("privacy_request_done"), {"hash": digest})
    log.info("privacy_forget job %s: %d mail(s) erased, remaining %s", job.id, r.erased,
             r.remaining or "nothing")
    return None
