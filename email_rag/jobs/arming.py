"""Arming a periodic run: one queue entry per natural key, coalesced with a run that is
still queued or processing, a fresh cycle for one that finished. The index sync
(``indexing.sync.arm``) and the retention pass (``privacy.retention.schedule``) arm their
runs for the vector worker this way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.ports import NewJob
from ..core.records import Job
from ..core.states import JobState
from .dispatch import enqueue
from .rows import create_jobs

if TYPE_CHECKING:
    from .context import ServiceContext

# an arming while a run is queued or processing coalesces into it; these states re-arm it
REARMED = (JobState.DONE, JobState.DEAD, JobState.FAILED)


def arm_run(services: ServiceContext, new: NewJob, actor: str, event: str,
            also: Callable[[Any], None] | None = None) -> tuple[Job, bool, bool]:
    """The entry of ``new`` (created, re-armed or joined) and whether this call armed it
    and whether Redis took it (False: left in MariaDB for re-dispatch). ``also(cur)``: the
    caller's writes, in the same transaction."""
    with services.db.transaction() as cur:
        if also is not None:
            also(cur)
        created = create_jobs(cur, [new], actor=actor, event=event)
        job = created[0] if created else services.jobs.lock_key(cur, new.key)
        armed = bool(created) or job.state in REARMED
        if not created and armed:  # a finished run: a fresh cycle, audited
            job = services.jobs.requeue(cur, job, actor, event, queue=new.queue,
                                        detail=new.detail)
    enqueued = job.state == JobState.QUEUED and enqueue(services, [job], actor)
    return job, armed, bool(enqueued)
