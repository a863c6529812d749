"""The bare worker baseline: an RQ job doing a mail's writes without the pipeline's logic.

``insert_job(job, commits, rows)`` makes ``commits`` transactions that insert
``rows`` rows in all into a plain table (``bench_rows``); the worker benchmark
passes the commits and inserted rows per mail it COUNTED in the real run
(worker-reported commits, audit/step/draft rows in the database). The last row
is marked ``final``: the benchmark counts those.

A bare worker process (``python -m email_rag_harness.bench.bare QUEUE...``) is an RQ worker of the
configured class (``EMAIL_RAG_WORKER_CLASS``) on a Redis connection that counts
its round trips like the real worker's; on SIGTERM it prints its counters in
the CLI's ``--json`` shape.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from email_rag.adapters.queue import JobQueue
from email_rag.core.settings import get_settings
from email_rag.db import Database, sql
from email_rag.runtime.rq_job import worker_class

PAYLOAD = "x" * 300  # about an audit row's detail
_db: Database | None = None


def database() -> Database:
    global _db
    if _db is None:
        _db = Database.from_settings(get_settings())
    return _db


def insert_job(job: int, commits: int, rows: int) -> int:
    db = database()
    commits = max(1, commits)
    per, extra = divmod(max(rows, 1), commits)
    for c in range(commits):
        k = per + (1 if c < extra else 0)
        with db.transaction() as cur:
            if k:
                last = c == commits - 1
                cur.executemany(sql("bench_insert_row"),
                                [{"job": job, "final": int(last and i == k - 1),
                                  "payload": PAYLOAD} for i in range(k)])
            else:  # more commits than rows: an update-only transaction, like a claim
                cur.execute("SELECT 1")
    return job


def enqueue(queue: JobQueue, name: str, jobs: list[int], commits: int, rows: int) -> None:
    """One pipeline, the same enqueue options as ``JobQueue.enqueue``."""
    q = queue.queue(name)
    with queue.redis.pipeline() as pipe:
        for job in jobs:
            q.enqueue_call("email_rag_harness.bench.bare.insert_job", args=(job, commits, rows),
                           job_id=f"bare-{job}-{name}", pipeline=pipe, result_ttl=0,
                           failure_ttl=3600)
        pipe.execute()


def main(argv: list[str] | None = None) -> int:
    names = argv if argv is not None else sys.argv[1:]
    settings = get_settings()
    queue = JobQueue(settings.redis_url)
    cls = worker_class(settings.worker_class == "simple")  # the product's worker classes
    worker = cls([queue.queue(n) for n in names], connection=queue.redis)
    worker.work(logging_level=settings.log_level)
    data: dict[str, Any] = {"queues": names, "worker_class": settings.worker_class,
                            "redis_round_trips": queue.round_trips}
    import email_rag_harness.bench.bare as jobs  # RQ imported the job module by name (this file runs as __main__)

    if jobs._db is not None:
        data.update(db_commits=jobs._db.commits, db_write_commits=jobs._db.write_commits,
                    db_statements=jobs._db.statements)
    print(json.dumps({"ok": True, "exit_code": 0, "message": "bare worker stopped",
                      "data": data}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
