"""Where jobs go: their natural keys and their queues, in one place.

A job row is keyed by ``kind:reference`` (``process_email:<mail id>``,
``send_draft:<draft id>``, ``index_sync:<scope>``): a second insert of the same
key is ignored, so creating a job is idempotent. Work that needs the vector
store runs on the vector queue (the one process owning a local Qdrant folder);
with a Qdrant server both queues are the same. Putting committed rows on Redis,
or leaving them for re-dispatch, is ``dispatch.enqueue`` / ``dispatch.hand_off``.
"""

from __future__ import annotations

from typing import Any

from .states import JobKind


def job_key(kind: JobKind | str, ref: int | str) -> str:
    """The natural key of a job row: one per mail, draft or sync scope."""
    return f"{JobKind(kind)}:{ref}"


def queues(settings: Any) -> tuple[str, str]:
    """(default queue, vector queue). With a Qdrant server they are the same queue."""
    vector = settings.queue_name if settings.qdrant_url else settings.vector_queue_name
    return settings.queue_name, vector
