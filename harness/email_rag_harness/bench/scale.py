"""How cost grows with the mailbox (a skeleton): time per operation and memory at each size.

    python -m bench scale [--memory-sizes 1000,10000] [--json]

For each size N: N mails of the seeded corpus stored with the poller's own store code
(rows and queued jobs, as after a poll), N points in a local Qdrant folder (one chunk
per mail, the hashing embedder, the payload the indexer writes), then, timed:

- vector search: ``QdrantStore.search`` scoped to the mailbox, excluding one mail (the
  retrieve step's call), 30 queries;
- hybrid retrieval: the retriever's vector ranking and lexical ranking (MariaDB
  FULLTEXT) of the same 30 queries, fused as the retrieve step does;
- queue claim: ``JobStore.claim`` of 30 queued entries (with its audit row);

and the process's RSS after the collection is loaded. Printed as one row per size.
A curve is flat when the larger size's time per operation stays near the smaller's.
Not yet covered (issue 30): ingest and worker throughput by size, the desk's queue and
search pages, 100,000 mails (``--memory-sizes 1000,10000,100000`` runs it, slowly).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import psutil

from email_rag.core.index_ports import ChunkPayload, VectorPoint
from email_rag.indexing.retrieval import Retriever, fuse
from email_rag.wiring.services import Services
from email_rag_harness.testing.corpus import generate

from .common import Report, Workspace, store_mails

QUERIES = 30
UPSERT_BATCH = 500


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def one_size(ws: Workspace, n: int) -> dict[str, Any]:
    db = ws.fresh()
    svc = Services(ws.settings(db, embedding_backend="hashing",
                               qdrant_path=str(ws.tmp / f"qdrant-{n}")))
    try:
        mails = generate(n, seed=5, duplicate_rate=0, auto_rate=0, malformed_rate=0)
        t = time.perf_counter()
        items = store_mails(db, [m.raw for m in mails], svc.settings.queue_name)
        store_s = time.perf_counter() - t
        texts = [m.raw.decode("utf-8", "replace")[-600:] for m in mails]
        vectors = svc.vectors
        vectors.open()
        client, coll = vectors.client, vectors.collection
        rss_before = psutil.Process().memory_info().rss
        t = time.perf_counter()
        from qdrant_client import models

        for start in range(0, len(items), UPSERT_BATCH):
            batch = items[start:start + UPSERT_BATCH]
            vecs = svc.embedder.embed([texts[i] for i in range(start, start + len(batch))])
            points = [VectorPoint(email_id, 0, vec, ChunkPayload(
                email_id, 1, 0, f"mail {email_id}", embedder=vectors.embedder, source="body",
                text=texts[start + k][:300])) for k, ((email_id, _), vec)
                in enumerate(zip(batch, vecs, strict=True))]
            client.upsert(coll, wait=True, points=[
                models.PointStruct(id=p.id, vector=p.vector, payload=p.payload.as_dict())
                for p in points])
        load_s = time.perf_counter() - t
        rss_mb = psutil.Process().memory_info().rss / 2**20
        probes = [items[(i * 7919) % len(items)] for i in range(QUERIES)]
        search, hybrid, claim = [], [], []
        retriever = Retriever(svc)
        position = {email_id: i for i, (email_id, _) in enumerate(items)}
        for email_id, _ in probes:
            q = texts[position[email_id]][:200]
            vec = svc.embedder.embed([q])[0]
            t = time.perf_counter()
            vectors.search(vec, mailbox_id=1, exclude_email_id=email_id, limit=10)
            search.append(time.perf_counter() - t)
            t = time.perf_counter()
            near = retriever._vector_hits(q, 1, email_id, 10)
            words = retriever._lexical_hits(q[:80], q, 1, email_id, 10)
            fuse(near, words)
            hybrid.append(time.perf_counter() - t)
        for _, job_id in probes:
            t = time.perf_counter()
            got = svc.jobs.claim(job_id, "bench-scale", svc.settings.queue_name)
            claim.append(time.perf_counter() - t)
            if got is None:
                raise RuntimeError(f"job {job_id} was not claimable")
        return {"mails": n, "store_ms_per_mail": round(store_s * 1000 / n, 3),
                "vector_load_s": round(load_s, 2), "search_ms_p50": _ms(search),
                "hybrid_ms_p50": _ms(hybrid), "claim_ms_p50": _ms(claim),
                "rss_mb": round(rss_mb, 1),
                "rss_growth_mb": round((rss_mb * 2**20 - rss_before) / 2**20, 1)}
    finally:
        svc.close()
        db.close()


def run(args: Any) -> Report:
    sizes = args.memory_sizes or [1000, 10_000]
    rows = []
    with Workspace("scale") as ws:
        for n in sizes:
            rows.append(one_size(ws, n))
    first, last = rows[0], rows[-1]
    growth = {k: round(last[k] / first[k], 2) if first[k] else None
              for k in ("search_ms_p50", "hybrid_ms_p50", "claim_ms_p50")}
    summary = (f"scale {first['mails']} -> {last['mails']} mails: vector search "
               f"{first['search_ms_p50']} -> {last['search_ms_p50']} ms, hybrid "
               f"{first['hybrid_ms_p50']} -> {last['hybrid_ms_p50']} ms, claim "
               f"{first['claim_ms_p50']} -> {last['claim_ms_p50']} ms (p50 per operation)")
    columns = ["mails", "search_ms_p50", "hybrid_ms_p50", "claim_ms_p50", "store_ms_per_mail",
               "vector_load_s", "rss_mb", "rss_growth_mb"]
    return Report("scale", summary, columns, rows, {"sizes": rows, "growth": growth},
                  checks=[f"every one of the {QUERIES} probed entries was claimed once"],
                  notes=["p50 of 30 operations per size; local Qdrant (embedded), hashing "
                         "embedder, one chunk per mail; growth = largest / smallest size: "
                         + ", ".join(f"{k} {v}" for k, v in growth.items())])
