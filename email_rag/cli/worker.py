"""``email-rag worker``: an RQ worker processing queue entries.

With a local Qdrant path exactly one process may open the store: start that
one with ``--with-vectors`` (it also takes normal work); all others without.
SIGTERM: the current job finishes (RQ warm shutdown); a second SIGTERM stops
at once and the entry is left processing, which the stuck-job reset recovers.
"""

from __future__ import annotations

from ..job_runner import build_rq_worker, listen_queues
from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("worker", parents=[common], help="run an RQ worker")
    p.add_argument("--with-vectors", action="store_true",
                   help="also own the vector queue (only ONE such worker with a local Qdrant path)")
    p.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    p.add_argument("--name", help="worker name (default: host:pid)")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    from workers.tasks import use_services

    from ..timing import check

    check(svc.settings)  # refuse time limits that would kill or reset healthy jobs
    queues = listen_queues(svc.settings, args.with_vectors)
    runner = None
    if args.with_vectors and not svc.settings.qdrant_url:
        # own the local Qdrant folder from the start (jobs of this process use it)
        from ..indexing.local_store import take

        take(svc)
        runner = use_services(svc, vector_owner=True)
    elif svc.settings.worker_class == "simple":
        runner = use_services(svc)  # jobs run in this process: one set of clients for both
    if runner is not None:
        runner.warm_up()
    worker = build_rq_worker(svc, args.with_vectors, name=args.name)
    worker.work(burst=args.burst, logging_level=svc.settings.log_level,
                with_scheduler=False)
    data = {"queues": queues, "worker_class": svc.settings.worker_class}
    if runner is not None:  # a forking worker's jobs ran (and were counted) in its children
        data.update(jobs=dict(runner.results), db_commits=svc.db.commits,
                    db_statements=svc.db.statements, redis_round_trips=svc.queue.round_trips)
    return Outcome(ExitCode.OK, f"Worker stopped (queues {', '.join(queues)}). Entries it did not "
                   "finish stay in MariaDB and are resumed by other workers or re-dispatch.",
                   data)
