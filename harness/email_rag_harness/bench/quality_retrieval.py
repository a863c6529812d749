"""Retrieval quality on the labelled corpus (``bench quality``; alone: ``--retrieval-only``).

Every corpus mail (quality_corpus MAILS + quality_corpus_extra MAILS_EXTRA) is stored in a
fresh, migrated MariaDB database (so the FULLTEXT index is the product's, migration 0240)
and embedded with the embedder; each paraphrase (PARAPHRASES + PARAPHRASES_EXTRA) is a query
whose answer is the mail it paraphrases. Three rankings, each ``CANDIDATES`` deep as in the
retrieve step (``retrieve_candidates``):

- vectors: cosine similarity to the query's vector (exact, like local Qdrant);
- lexical: the product's named query ``index_lexical`` (InnoDB FULLTEXT, boolean mode) on the product's query text (``lexical_query``);
- fused: the two by the product's reciprocal rank fusion (``indexing.retrieval.rrf``, k=60;
  equal FULLTEXT scores share a rank, ``tied_ranks``).

hit@k: the paraphrased mail is among the first k. No LLM is involved.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import numpy as np

from email_rag.db import Database, sql
from email_rag.indexing.retrieval import LexicalHit, lexical_query, rrf, tied_ranks

from .quality_corpus import MAILS, PARAPHRASES
from .quality_corpus_extra import MAILS_EXTRA, PARAPHRASES_EXTRA

CANDIDATES = 40
CORPUS = list(MAILS) + list(MAILS_EXTRA)
QUERIES = list(PARAPHRASES) + list(PARAPHRASES_EXTRA)


def store_corpus(db: Database, mails: list[tuple]) -> dict[str, int]:
    """The corpus as mails of one mailbox: corpus id -> emails.id (and "mailbox_id")."""
    db.execute(sql("bench_mailbox_insert"), {"name": "quality", "address": ""})
    mailbox_id = int(db.fetchone(sql("bench_mailbox_id"), {"name": "quality"})["id"])
    ids = {}
    with db.transaction() as cur:
        for m in mails:
            cur.execute(sql("bench_index_insert_email"), {
                "mailbox_id": mailbox_id, "dedup_key": hashlib.sha256(m[0].encode()).hexdigest(),
                "message_id": f"<{m[0]}@quality.invalid>", "status": "classified",
                "subject": m[5], "body_text": m[6]})
            ids[m[0]] = int(cur.lastrowid)
    return {"mailbox_id": mailbox_id, **ids}


def lexical_ranking(db: Database, mailbox_id: int, text: str) -> list[tuple[int, float]]:
    rows = db.fetchall(sql("index_lexical"), {"q": lexical_query(None, text),
                                               "mailbox_id": mailbox_id, "id": 0,
                                               "limit": CANDIDATES})
    return [(h.id, h.score) for h in LexicalHit.from_rows(rows)]


def vector_rankings(embedder: Any, mails: list[tuple], queries: list[tuple[str, str]]
                    ) -> tuple[list[list[str]], float]:
    """Per query, the corpus ids by cosine similarity (best first); and ms per text."""
    started = time.monotonic()
    docs = np.array(embedder.embed([f"{m[5]}\n{m[6]}" for m in mails]), dtype=np.float32)
    qv = np.array(embedder.embed([q for _, q in queries]), dtype=np.float32)
    ms = (time.monotonic() - started) * 1000 / (len(mails) + len(queries))
    docs /= np.maximum(np.linalg.norm(docs, axis=1, keepdims=True), 1e-12)
    qv /= np.maximum(np.linalg.norm(qv, axis=1, keepdims=True), 1e-12)
    ids = [m[0] for m in mails]
    return [[ids[i] for i in np.argsort(-(docs @ q), kind="stable")[:CANDIDATES]]
            for q in qv], ms


def _hits(rankings: list[list[str]], queries: list[tuple[str, str]]) -> dict[str, Any]:
    n = len(queries)
    h1 = sum(r[:1] == [t] for r, (t, _) in zip(rankings, queries, strict=True))
    h3 = sum(t in r[:3] for r, (t, _) in zip(rankings, queries, strict=True))
    misses = [f"{t} -> {r[:3]}" for r, (t, _) in zip(rankings, queries, strict=True)
              if t not in r[:3]]
    return {"hit1": round(h1 / n, 3), "hit3": round(h3 / n, 3), "misses": misses}


def measure(db: Database, embedder: Any, mails: list[tuple] | None = None,
            queries: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """hit@1/hit@3 of vectors alone, lexical alone and fused, on a fresh database ``db``."""
    mails = mails if mails is not None else CORPUS
    queries = queries if queries is not None else QUERIES
    ids = store_corpus(db, mails)
    mailbox_id = ids.pop("mailbox_id")
    corpus_of = {v: k for k, v in ids.items()}
    vec, ms = vector_rankings(embedder, mails, queries)
    started = time.monotonic()
    scored = [[(corpus_of[i], score) for i, score in lexical_ranking(db, mailbox_id, q)]
              for _, q in queries]
    lex_ms = (time.monotonic() - started) * 1000 / len(queries)
    lex = [[i for i, _ in r] for r in scored]
    fused = [[i for i, _ in rrf(v, tied_ranks(x))] for v, x in zip(vec, scored, strict=True)]
    by_language: dict[str, dict[str, float]] = {}
    lang = {m[0]: m[1] for m in mails}
    for code in sorted({lang[t] for t, _ in queries}):
        sel = [i for i, (t, _) in enumerate(queries) if lang[t] == code]
        sub = [queries[i] for i in sel]
        by_language[code] = {name: _hits([r[i] for i in sel], sub)["hit3"]
                             for name, r in (("vectors", vec), ("lexical", lex),
                                             ("fused", fused))}
    return {"embedder": getattr(embedder, "name", type(embedder).__name__),
            "mails": len(mails), "pairs": len(queries), "candidates": CANDIDATES,
            "vectors": _hits(vec, queries), "lexical": _hits(lex, queries),
            "fused": _hits(fused, queries), "hit3_by_language": by_language,
            "embed_ms_per_text": round(ms, 1), "lexical_ms_per_query": round(lex_ms, 1)}
