"""``email-rag worker``: an RQ worker processing queue entries.

With a local Qdrant path exactly one process may open the store: start that
one with ``--with-vectors`` (it also takes normal work); all others without.
SIGTERM: the current job finishes (RQ warm shutdown); a second SIGTERM stops
at once and the entry is left processing, which the stuck-job reset recovers.

A Redis outage does not end the worker: RQ itself waits only inside its dequeue;
a connection error anywhere else in its loop (heartbeat, registration, after a job)
ends ``work()``. The worker then waits with capped backoff until Redis answers and
starts a fresh RQ worker (a restarted Redis is empty: the old registration is
gone); the entries stay in MariaDB and re-dispatch enqueues them again.

| situation | retry? | state known? | resume |
|---|---|---|---|
| Redis refuses / resets connections | yes, full jitter 0..0.5 s doubling to 10 s, unbounded; audited (redis_wait_started / redis_wait_ended with the duration) | yes (MariaDB) | fresh RQ worker once Redis answers |
| Redis restarted empty | - | yes | re-dispatch enqueues the open entries |
| a job was running when Redis went away | its own steps decide (checkpoints) | yes | the entry is claimed again later |

With ``--burst`` (jobs in this process) the worker is a long command: its record counts
entries, under the checkpoint of ``runtime/burst.py`` (the next burst of the same
``--name`` continues a killed one; its failure table is there).
"""

from __future__ import annotations

import logging
import os
import socket
import time

from ..core.errors import QueueUnavailableError
from ..core.retry import ExponentialBackoff
from ..core.states import Actor
from ..db.audit import AuditEvent
from ..runtime.burst import BurstRun
from ..runtime.job_runner import build_rq_worker, listen_queues, worker_settings
from .output import ExitCode, Outcome

log = logging.getLogger(__name__)


def register(sub, common) -> None:
    p = sub.add_parser("worker", parents=[common], help="run an RQ worker")
    p.add_argument("--with-vectors", action="store_true",
                   help="also own the vector queue (only ONE such worker with a local Qdrant path)")
    p.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    p.add_argument("--name", help="worker name (default: host:pid)")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    from ..core.timing import check
    from ..runtime.tasks import use_services

    check(svc.settings)  # refuse time limits that would kill or reset healthy jobs
    # before any client is built: the worker's MariaDB connections get a read timeout
    svc.settings = worker_settings(svc.settings)
    queues = listen_queues(svc.settings, args.with_vectors)
    runner = None
    beacon = None
    if args.with_vectors and not svc.settings.qdrant_url:
        # own the local Qdrant folder from the start (jobs of this process use it); the
        # beacon makes a missing or crash-looping owner visible (status, web, ALARM)
        from ..core.errors import StoreLockedError
        from ..indexing import owner_beacon
        from ..indexing.local_store import take

        owner_beacon.record_start(svc.coordination)
        try:
            take(svc)
        except StoreLockedError as e:
            owner_beacon.record_failed_start(svc.coordination, e.message)
            raise
        beacon = owner_beacon.Beacon(svc.coordination).start()
        runner = use_services(svc, vector_owner=True)
    elif not svc.settings.qdrant_url:
        from ..adapters.vectors import forbid_local_open

        forbid_local_open()  # not the owner: a misrouted vector step fails, never opens
    if runner is None and svc.settings.worker_class == "simple":
        runner = use_services(svc)  # jobs run in this process: one set of clients for both
    if runner is not None:
        runner.warm_up()
    if args.burst and runner is not None:  # a forking worker's entries run in its children
        runner.burst = BurstRun(svc, args.name or runner.name)
    try:
        _work_through_redis_outages(svc, args)
    finally:
        if beacon is not None:
            beacon.stop()
    data = {"queues": queues, "worker_class": svc.settings.worker_class}
    if runner is not None:  # a forking worker's jobs ran (and were counted) in its children
        data.update(jobs=dict(runner.results), db_commits=svc.db.commits,
                    db_write_commits=svc.db.write_commits,
                    db_statements=svc.db.statements, redis_round_trips=svc.queue.round_trips)
    message = (f"Worker stopped (queues {', '.join(queues)}). Entries it did not finish stay "
               "in MariaDB and are resumed by other workers or re-dispatch.")
    if runner is None or runner.burst is None:
        return Outcome(ExitCode.OK, message, data)
    return Outcome.of(runner.burst.finish(runner.results), message, data)


def _work_through_redis_outages(svc, args) -> None:
    import redis

    backoff, failures, outage_since = ExponentialBackoff(base=0.5, cap=10.0, full=True), 0, None
    while True:
        try:
            worker = build_rq_worker(svc, args.with_vectors, name=args.name)
            if outage_since is not None:
                svc.queue.ping()
                waited = time.monotonic() - outage_since
                log.warning("Redis answers again after %.1f s: worker resumes", waited)
                _audit_wait(svc, args, "redis_wait_ended", {"waited_s": round(waited, 3),
                                                            "tries": failures})
                outage_since, failures = None, 0
            worker.work(burst=args.burst, logging_level=svc.settings.log_level,
                        with_scheduler=False)
            return
        except (redis.ConnectionError, redis.TimeoutError, QueueUnavailableError) as e:
            if outage_since is None:
                outage_since = time.monotonic()
                log.error("Redis unreachable (%s): the worker waits and reconnects; entries "
                          "stay in MariaDB", type(e).__name__)
                _audit_wait(svc, args, "redis_wait_started", {"error": type(e).__name__})
            failures += 1
            time.sleep(backoff.delay(failures))


def _audit_wait(svc, args, event: str, detail: dict) -> None:
    """The worker's wait for Redis in the audit log (MariaDB down too: the spool keeps it)."""
    name = args.name or f"{socket.gethostname()}:{os.getpid()}"
    svc.audit.record(AuditEvent(Actor.WORKER, "worker", name, event,
                                detail={**detail, "worker": name}))
