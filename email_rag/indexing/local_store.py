"""The one-owner rule of a local Qdrant folder, for the processes that need it.

Only one process can open a local Qdrant folder. The owner is the worker
started with ``--with-vectors``: it takes the folder at start (``take``) and
keeps it while it runs, so nothing can slip in between its jobs. Everything
else either never opens it (the other workers, the scheduler) or opens it
only when it is free (``email-rag search`` / ``reindex``, ``try_open``) and
otherwise routes the work to the owner through the vector queue.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..core.errors import StoreLockedError, StoreUnavailableError

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)


def is_local(settings: Any) -> bool:
    return not settings.qdrant_url


def take(services: ServiceContext, wait_seconds: float | None = None,
         sleep: Any = time.sleep) -> None:
    """Open the local store now, waiting up to ``wait_seconds`` for another holder to let go.

    Raises ``StoreLockedError`` (a clear message naming the holder) after the wait.

    A store that is *unavailable* (its storage cannot be read right now, e.g. locked by an
    outage) is not another owner: the worker starts anyway, with an ALARM line. Its index
    steps try the store again (``store_tries``) and leave mails partially_indexed while it
    stays down; the periodic sync fills the gap. Exiting instead would stall every mail
    that needs the vector queue for as long as the outage lasts.
    """
    wait = services.settings.vector_lock_wait_seconds if wait_seconds is None else wait_seconds
    started = time.monotonic()
    warned = False
    while True:
        try:
            services.vectors.open()
            if warned:
                log.info("local vector store %s taken after %.1f s", services.settings.qdrant_path,
                         time.monotonic() - started)
            return
        except StoreLockedError as e:
            waited = time.monotonic() - started
            if waited >= wait:
                raise StoreLockedError(
                    f"{e.message} Waited {waited:.1f} s; this worker does not start. Stop the "
                    "other holder, or run this worker without --with-vectors "
                    "(exactly one worker may own a local Qdrant folder).") from e
            if not warned:
                log.warning("%s Waiting up to %.0f s for it.", e.message, wait)
                warned = True
            sleep(min(0.5, max(0.01, wait - waited)))
        except StoreUnavailableError as e:
            log.error("ALARM vector store unavailable at start: %s. This worker runs anyway; "
                      "index steps try it again and leave mails partially_indexed while it "
                      "stays down (the periodic sync repairs them).", e)
            return


def try_open(services: ServiceContext) -> bool:
    """Open the store in this process if it is free. False: another process holds it."""
    try:
        services.vectors.open()
        return True
    except StoreLockedError:
        return False
