"""The bare worker baselines: RQ jobs doing a mail's I/O without the pipeline's logic.

``insert_job(job, commits, rows)`` ("bare commits") makes ``commits`` transactions that
insert ``rows`` rows in all into a plain table (``bench_rows``); the worker benchmark
passes the commits and inserted rows per mail it COUNTED in the real run
(worker-reported commits, audit/step/draft rows in the database). The last row
is marked ``final``: the benchmark counts those.

``same_io_job(job, email_id, plan)`` ("bare same I/O") makes the I/O of one mail as the
project run COUNTED it (``IOPlan``), each with the plain client library and no logic:
the same number of MariaDB statements and commits (writing ones inserting the same
number of rows; the first read fetches the mail's row with its raw source, as the run's
first read does; the other reads fetch the mail's row without it), the same number of
chat calls to the same LLM server with request bodies the project sent (recorded by the
scripted server), the embedder on the same number of chunk texts, the same number of
points upserted into a local Qdrant folder (one commit per point, write-ahead log, as the
product configures it) and the same number of vector searches (the client's own
``query_points``, unfiltered: every bench mail is of one mailbox).

A bare worker process (``python -m email_rag_harness.bench.bare QUEUE...``) is an RQ worker of the
configured class (``EMAIL_RAG_WORKER_CLASS``) on a Redis connection that counts
its round trips like the real worker's; on SIGTERM it prints its counters in
the CLI's ``--json`` shape.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.parse
from dataclasses import dataclass
from typing import Any

import redis

from email_rag.adapters.queue import JobQueue
from email_rag.core.settings import get_settings
from email_rag.db import Database, sql
from email_rag.runtime.rq_job import worker_class

PAYLOAD = "x" * 300  # about an audit row's detail
_db: Database | None = None
_io: SameIO | None = None


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


@dataclass(frozen=True)
class IOPlan:
    """One mail's I/O as the project run counted it (per mail; fractions are spread over
    the jobs so that N jobs make N times the count, rounded)."""

    commits: float
    write_commits: float
    statements: float
    rows: float
    llm_calls: float
    chunks: float  # texts embedded and points upserted
    searches: float  # vector searches (the mails that needed a reply)
    candidates: int  # points asked of each search


def spread(per_mail: float, n: int) -> int:
    """How many of a per-mail count job ``n`` (1-based) makes: job 1..N make round(N * x)."""
    return round(n * per_mail) - round((n - 1) * per_mail)


class SameIO:
    """The bare same-I/O worker's connections: MariaDB, the LLM server, the embedder, a local
    Qdrant folder (opened once per process, as the project's worker does)."""

    def __init__(self) -> None:
        from qdrant_client import QdrantClient, models

        from email_rag.adapters.embeddings import build_embedder

        settings = get_settings()
        self.db = database()
        self.embedder = build_embedder(settings)
        self.dim = int(settings.vector_dim)
        self.collection = "bare"
        self.client = QdrantClient(path=os.environ["EMAIL_RAG_BARE_QDRANT_PATH"])
        if not self.client.collection_exists(self.collection):
            self.client.create_collection(self.collection, vectors_config=models.VectorParams(
                size=self.dim, distance=models.Distance.COSINE))
        storage = self.client._client.collections[self.collection].storage.storage
        storage.execute("PRAGMA journal_mode=WAL")
        storage.execute("PRAGMA synchronous=FULL")
        self.models = models
        with open(os.environ["EMAIL_RAG_BARE_LLM_REQUESTS"], encoding="utf-8") as f:
            self.bodies = [json.dumps(b).encode() for b in json.load(f)]
        url = urllib.parse.urlsplit(settings.llm_base_url)
        self.llm_host, self.llm_port = url.hostname or "127.0.0.1", url.port or 80
        self.chat_path = url.path.rstrip("/") + "/chat/completions"
        self.http: http.client.HTTPConnection | None = None
        self.calls = 0
        # the job heartbeat's connection (the project's worker: a SET when a job starts, a
        # DEL when it ends, outside the queue connection's counted round trips)
        self.coordination = redis.Redis.from_url(settings.redis_url)

    def chat(self) -> bytes:
        body = self.bodies[self.calls % len(self.bodies)]
        self.calls += 1
        if self.http is None:
            self.http = http.client.HTTPConnection(self.llm_host, self.llm_port, timeout=60)
        self.http.request("POST", self.chat_path, body,
                          {"Content-Type": "application/json"})
        resp = self.http.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"LLM server answered {resp.status}")
        return data


def io() -> SameIO:
    global _io
    if _io is None:
        _io = SameIO()
    return _io


def same_io_job(job: int, email_id: int, plan: IOPlan) -> int:
    """One mail's I/O (``IOPlan``) in the order of the project's run: the read transactions,
    the LLM calls, the vector work, the writing transactions (the last one writes the
    ``final`` row). The statements are spread evenly over the transactions: in a read one
    the first read of the job fetches the raw mail, the others the row without it; in a
    writing one the first statement inserts its rows, the others update the mail's row."""
    s = io()
    beat = f"bench:bare:beat:{job}"
    s.coordination.set(beat, "1", px=120_000)
    commits = max(1, spread(plan.commits, job))
    writes = min(commits, max(1, spread(plan.write_commits, job)))
    reads = commits - writes
    per_tx, extra = divmod(max(commits, spread(plan.statements, job)), commits)
    counts = [per_tx + (1 if c < extra else 0) for c in range(commits)]
    raw = b""
    for c in range(reads):
        with s.db.transaction() as cur:
            for k in range(counts[c]):
                if c == 0 and k == 0:
                    row = cur.fetchone(sql("bench_bare_read_mail_raw"), {"id": email_id})
                    raw = bytes((row or {}).get("raw") or b"")
                else:
                    cur.fetchone(sql("bench_bare_read_mail"), {"id": email_id})
    for _ in range(spread(plan.llm_calls, job)):
        s.chat()
    text = raw.decode("utf-8", "replace") or "leer"
    chunks = spread(plan.chunks, job)
    vectors: list[Any] = []
    if chunks:
        size = max(1, len(text) // chunks)
        texts = [text[i * size:(i + 1) * size] or text for i in range(chunks)]
        vectors = s.embedder.embed(texts)
        s.client.upsert(s.collection, points=[s.models.PointStruct(
            id=email_id * 1000 + i, vector=list(v),
            payload={"email_id": email_id, "mailbox_id": 1, "chunk": i, "text": t[:1000]})
            for i, (v, t) in enumerate(zip(vectors, texts, strict=True))])
    for _ in range(spread(plan.searches, job)):  # the query is the first chunk, whose vector
        query = vectors[0] if chunks else s.embedder.embed([text[:1200]])[0]  # the project
        s.client.query_points(s.collection, query=list(query), limit=plan.candidates,
                              with_payload=True)
    rows = max(writes, spread(plan.rows, job))
    per_write, extra_rows = divmod(rows, writes)
    for c in range(writes):
        k = per_write + (1 if c < extra_rows else 0)
        last = c == writes - 1
        with s.db.transaction() as cur:
            cur.executemany(sql("bench_insert_row"),
                            [{"job": job, "final": int(last and i == k - 1), "payload": PAYLOAD}
                             for i in range(k)])
            for _ in range(counts[reads + c] - 1):
                cur.execute(sql("bench_bare_touch_mail"), {"id": email_id})
    s.coordination.delete(beat)
    return job


def enqueue_same_io(queue: JobQueue, name: str, jobs: list[tuple[int, int]],
                    plan: IOPlan) -> None:
    """``(job, email id)`` pairs in one pipeline, the same enqueue options as below."""
    q = queue.queue(name)
    with queue.redis.pipeline() as pipe:
        for job, email_id in jobs:
            q.enqueue_call("email_rag_harness.bench.bare.same_io_job", args=(job, email_id, plan),
                           job_id=f"bare-io-{job}-{name}", pipeline=pipe, result_ttl=0,
                           failure_ttl=3600)
        pipe.execute()


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
    # RQ imports the job module by name (this file runs as __main__)
    import email_rag_harness.bench.bare as jobs

    if os.environ.get("EMAIL_RAG_BARE_QDRANT_PATH"):  # connections made before it registers,
        jobs.io()  # as the project's worker builds its clients before it does
    worker.work(logging_level=settings.log_level)
    data: dict[str, Any] = {"queues": names, "worker_class": settings.worker_class,
                            "redis_round_trips": queue.round_trips}
    if jobs._io is not None:
        data["llm_calls"] = jobs._io.calls
    if jobs._db is not None:
        data.update(db_commits=jobs._db.commits, db_write_commits=jobs._db.write_commits,
                    db_statements=jobs._db.statements)
    print(json.dumps({"ok": True, "exit_code": 0, "message": "bare worker stopped",
                      "data": data}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
