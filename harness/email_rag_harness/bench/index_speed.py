"""Index and search speed: ``Indexer`` and ``Retriever`` against bare qdrant-client calls.

    python -m bench index [--mails 300] [--backend hashing|local] [--json]

N mails through ``Indexer.index`` (chunking, embedding, local Qdrant folder on
disk, stale-chunk cleanup, graph off) next to a bare loop that embeds the same
chunks and upserts them with ``QdrantClient.upsert`` into another collection of
the same folder; then N searches through ``Retriever.search`` (embedding, a
mailbox-scoped vector search, MariaDB rows) next to bare ``query_points`` with
the same vectors and filter. Checked first: one point per chunk per mail in both
collections, and every search found its own mail first.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from email_rag.db import sql
from email_rag.indexing.chunking import mail_chunks
from email_rag.indexing.indexer import Indexer
from email_rag.indexing.retrieval import Retriever
from email_rag.wiring.services import Services

from .common import CheckFailed, Report, Workspace, rate, ratio

TOPICS = ["printer error after the firmware update", "invoice charged twice",
          "password reset link expired", "parcel delivery is late", "cancel the subscription"]


def run(args: Any) -> Report:
    from qdrant_client import models

    mails = args.mails or 300
    with Workspace("index") as ws:
        db = ws.fresh()
        svc = Services(ws.settings(db, embedding_backend=args.backend))
        ws.on_exit(svc.close)
        db.execute(sql("bench_mailbox_insert"), {"name": "bench", "address": ""})
        rows = []
        for i in range(mails):
            mid = f"<b{i}@bench>"
            rows.append({"mailbox_id": 1, "dedup_key": hashlib.sha256(mid.encode()).hexdigest(),
                         "message_id": mid, "status": "received",
                         "subject": f"Mail {i}: {TOPICS[i % 5]}",
                         "body_text": f"Hello,\n\nwe have a problem: {TOPICS[i % 5]} (case {i}).\n"
                         "Details follow in this paragraph. " * 3 + "\n\nRegards,\nX"})
        with db.transaction() as cur:
            cur.executemany(sql("bench_index_insert_email"), rows)
        emails = db.fetchall(sql("bench_index_emails"))
        indexer = Indexer(svc)
        svc.vectors.open()
        svc.embedder.embed(["warm up"])
        s = svc.settings
        started = time.perf_counter()
        for m in emails:
            if indexer.index(m).missing:
                raise CheckFailed(f"mail {m['id']} was not indexed completely")
        index_s = time.perf_counter() - started

        client = svc.vectors.client
        bare_coll = "bench_bare"
        client.create_collection(bare_coll, vectors_config=models.VectorParams(
            size=s.vector_dim, distance=models.Distance.COSINE))
        started = time.perf_counter()
        chunk_total = 0
        for m in emails:
            chunks, _ = mail_chunks(m["subject"], m["body_text"], s.chunk_chars, s.chunk_overlap)
            vectors = svc.embedder.embed(chunks)
            client.upsert(bare_coll, wait=True, points=[
                models.PointStruct(id=int(m["id"]) * 1000 + i, vector=list(v),
                                   payload={"email_id": int(m["id"]), "mailbox_id": 1, "chunk": i})
                for i, v in enumerate(vectors)])
            chunk_total += len(chunks)
        bare_index_s = time.perf_counter() - started
        points = svc.vectors.count()
        bare_points = client.count(bare_coll, exact=True).count
        if points != chunk_total or bare_points != chunk_total:
            raise CheckFailed(f"{points} points (bare {bare_points}) for {chunk_total} chunks")

        retriever = Retriever(svc)
        queries = [(m["id"], f"{m['subject']}\n{m['body_text']}") for m in emails[:min(50, mails)]]
        started = time.perf_counter()
        misses = 0
        for email_id, text in queries:
            found = retriever.search(text, mailbox_id=1, limit=5)
            misses += not found or found[0].email_id != email_id
        search_s = time.perf_counter() - started
        if misses:
            raise CheckFailed(f"{misses} of {len(queries)} searches did not find their own mail")
        flt = models.Filter(must=[models.FieldCondition(key="mailbox_id",
                                                        match=models.MatchValue(value=1))])
        started = time.perf_counter()
        for _, text in queries:
            vec = svc.embedder.embed([text])[0]
            client.query_points(bare_coll, query=list(vec), limit=5, with_payload=True,
                                query_filter=flt)
        bare_search_s = time.perf_counter() - started
        db.close()
    n_q = len(queries)
    figures = {"mails": mails, "backend": args.backend, "chunks": chunk_total,
               "index_mails_per_s": rate(mails, index_s),
               "bare_upsert_mails_per_s": rate(mails, bare_index_s),
               "ratio": ratio(bare_index_s, index_s),
               "search_ms": round(search_s / n_q * 1000, 2),
               "bare_search_ms": round(bare_search_s / n_q * 1000, 2),
               "search_ratio": ratio(bare_search_s, search_s)}
    rows = [{"run": "Indexer.index", "per s": figures["index_mails_per_s"], "ms each": "",
             "ratio": figures["ratio"]},
            {"run": "bare embed + upsert", "per s": figures["bare_upsert_mails_per_s"],
             "ms each": "", "ratio": ""},
            {"run": "Retriever.search", "per s": rate(n_q, search_s),
             "ms each": figures["search_ms"], "ratio": figures["search_ratio"]},
            {"run": "bare embed + query_points", "per s": rate(n_q, bare_search_s),
             "ms each": figures["bare_search_ms"], "ratio": ""}]
    summary = (f"index ({mails} mails, {args.backend}, local Qdrant on disk): Indexer "
               f"{figures['index_mails_per_s']} mails/s vs bare upsert "
               f"{figures['bare_upsert_mails_per_s']} (ratio {figures['ratio']}); search "
               f"{figures['search_ms']} ms vs bare {figures['bare_search_ms']} ms")
    checks = [f"{chunk_total} points for {chunk_total} chunks in both collections",
              f"all {n_q} searches found their own mail first"]
    return Report("index", summary, ["run", "per s", "ms each", "ratio"], rows, figures, [],
                  checks)
