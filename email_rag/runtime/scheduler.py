"""The APScheduler process: periodic jobs that enqueue work or run short SQL.

Nothing heavy runs here: polling is enqueued to the workers, re-dispatch and
the stuck-job reset are a few statements. A periodic job that fails is logged
and audited; the scheduler itself keeps running. SIGTERM stops it cleanly
(the running periodic job finishes).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from datetime import datetime
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.blocking import BlockingScheduler

from ..core.errors import DatabaseUnavailableError, EmailRagError
from ..core.states import Actor
from ..db.audit import AuditEvent
from ..wiring.services import Services

log = logging.getLogger(__name__)


def periodic_jobs(services: Services) -> list[tuple[str, int, Callable[[], Any]]]:
    """(id, interval seconds, function) of every periodic job."""
    from ..adapters.oauth2 import renew_idle_refresh_tokens
    from ..adapters.queue import enqueue_poll
    from ..indexing import sync as index_sync
    from ..jobs.dispatch import redispatch
    from ..privacy import retention
    from ..review import snooze
    from . import maintenance

    s = services.settings
    jobs: list[tuple[str, int, Callable[[], Any]]] = [
        # the poll itself runs in a worker; the mailbox lease keeps polls from overlapping;
        # the mailboxes are read every time (one added in the web admin is polled next)
        ("poll", s.poll_interval_seconds,
         lambda: enqueue_poll(services.queue, s.queue_name)
         if services.mailboxes.active(fresh=True) else False),
        ("redispatch", s.redispatch_interval_seconds, lambda: redispatch(services)),
        ("cleanup_stuck", s.cleanup_interval_seconds, lambda: maintenance.cleanup_stuck(services)),
        ("flush_audit_spool", s.redispatch_interval_seconds,
         lambda: maintenance.flush_audit_spool(services)),
        # arms an index_sync entry for the vector worker; never opens a store here
        ("reindex_partial", s.reindex_interval_seconds, lambda: index_sync.schedule(services)),
        # arms a retention entry for the vector worker (it deletes vector points); opens
        # no store here
        ("retention", s.retention_interval_seconds, lambda: retention.schedule(services)),
        # snoozed mails whose date passed: the queue shows them already; this writes the
        # audit event that ends each snooze (a few statements)
        ("wake_snoozed", s.redispatch_interval_seconds,
         lambda: snooze.wake_due(services, Actor.SCHEDULER)),
        ("oauth_renew_idle", s.oauth_renew_check_seconds, lambda: renew_idle_refresh_tokens(
            [services.token_source_of(m) for m in services.mailboxes.active(fresh=True)],
            s.oauth_renew_idle_days * 86400)),
    ]
    return jobs


def guarded(name: str, services: Services, fn: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        try:
            result = fn()
            if result:
                log.info("periodic job %s: %s", name, _summary(result))
        except DatabaseUnavailableError as e:
            log.error("periodic job %s: MariaDB unavailable (%s); will run again", name, e)
            services.reset()
            # MariaDB is down: the audit log spools the event and flushes it later
            services.audit.record(AuditEvent(Actor.SCHEDULER, "system", name,
                                             "periodic_job_failed",
                                             detail={"error": type(e).__name__,
                                                     "retried": "next interval"}))
        except (EmailRagError, Exception) as e:  # noqa: BLE001 - the scheduler must survive
            log.exception("periodic job %s failed", name)
            services.audit.record(AuditEvent(Actor.SCHEDULER, "system", name,
                                             "periodic_job_failed", detail={"error": str(e)}))
    return run


def _summary(result: Any) -> str:
    return str(len(result)) if isinstance(result, list) else str(result)


def build_scheduler(services: Services) -> BlockingScheduler:
    """Periodic jobs run one at a time in ONE executor thread: they share one MariaDB
    connection, which must never be used by two threads at once."""
    sched = BlockingScheduler(timezone="UTC",
                              executors={"default": ThreadPoolExecutor(max_workers=1)})
    for job_id, seconds, fn in periodic_jobs(services):
        sched.add_job(guarded(job_id, services, fn), "interval", seconds=seconds, id=job_id,
                      max_instances=1, coalesce=True, next_run_time=datetime.now().astimezone())
    return sched


def run_forever(services: Services) -> None:
    sched = build_scheduler(services)

    def stop(signum: int, _frame: Any) -> None:
        log.info("signal %s: stopping the scheduler after the running job", signum)
        sched.shutdown(wait=False)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("scheduler started: %s", ", ".join(j.id for j in sched.get_jobs()))
    sched.start()
    # the periodic job that was running finishes before the connection is closed
    sched._lookup_executor("default").shutdown(wait=True)  # noqa: SLF001
    log.info("scheduler stopped")
