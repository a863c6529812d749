"""Index many mails at once (the history import's index jobs): all their chunks in one
call to the embedder, all their points in one vector upsert, the graph per mail. The
result per mail is the same ``IndexResult`` as ``Indexer.index`` gives, so the caller
records each mail's index status and audit events as it would for one mail.

Failure table (one batch; the store policy of indexer.py applies to each batch call):

| situation | retry? | state known? | resume? |
|---|---|---|---|
| embedder unavailable for the batch call | store_tries tries with backoff, then each mail alone (one try) until 3 fail with none embedded | yes: mails without vectors partially_indexed, their error audited | the periodic sync |
| one mail's text cannot be embedded (the batch call fails, that mail alone too) | no | yes: that mail partially_indexed with its error; the others complete | sync |
| the embedder refuses (configuration, model missing) | no | yes: every mail of the batch missing vectors, permanent, ALARM | after the fix: sync |
| Qdrant unavailable / refuses the batch upsert | store_tries tries | yes: every mail of the batch partially_indexed | sync |
| graph store down | store_tries tries for the first mail, the others not tried | yes: partially_indexed, missing graph | sync |
| no text | - | vectors skipped for that mail | - |
| crash after the upsert, before the caller's commit | the job retry repeats the batch | yes | overwrite: deterministic point ids, chunks beyond deleted |
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..core.index_ports import MailToIndex, VectorPoint
from ..core.jsonvalue import JsonObject
from ..core.retry import RetryPolicy
from ..db import slot_params, sql
from .chunking import MAX_CHUNKS, attachment_chunks, mail_chunks
from .indexer import (
    Indexer,
    IndexResult,
    SentReply,
    StoreResult,
    chunk_payload,
    with_tries,
)

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

ALONE_GIVE_UP = 3  # mails failing alone in a row, none embedded: the embedder is down
ONE_TRY = RetryPolicy(delays=(0.0,), max_attempts=1, jitter=0.0)


def index_batch(indexer: Indexer, mails: Sequence[MailToIndex],
                sleep: Callable[[float], None] | None = None) -> dict[int, IndexResult]:
    """Index ``mails`` into every configured store; one ``IndexResult`` per mail id."""
    s = indexer.settings
    sleep = sleep or indexer.sleep or time.sleep
    chunks: dict[int, tuple[list[str], list[str]]] = {}
    results: dict[int, IndexResult] = {}
    for m in mails:
        body, truncated = mail_chunks(m.subject, m.body_text, s.chunk_chars, s.chunk_overlap)
        extra = attachment_chunks(m.subject, m.attachment_text, s.chunk_chars,
                                  s.chunk_overlap, MAX_CHUNKS - len(body))
        chunks[m.id] = (body + extra, ["body"] * len(body) + ["attachment"] * len(extra))
        results[m.id] = IndexResult(m.id, {}, len(body) + len(extra), truncated)
    replies = _sent_replies(indexer, [m.id for m in mails])
    with_text = [m for m in mails if chunks[m.id][0]]
    for m in mails:
        if not chunks[m.id][0]:
            results[m.id].stores["vectors"] = StoreResult("vectors", "skipped",
                                                          info={"why": "no text"})
    if with_text:
        _vectors(indexer, with_text, chunks, replies, results, sleep)
    down: set[str] = set()
    for m in mails:
        if not s.arango_url:
            results[m.id].stores["graph"] = StoreResult(
                "graph", "off", info={"why": "EMAIL_RAG_ARANGO_URL unset"})
        elif "graph" in down:
            results[m.id].stores["graph"] = StoreResult(
                "graph", "missing", error="not tried: unavailable earlier in this batch")
        else:
            gm = indexer._graph_mail(m, replies.get(m.id, []))
            r = with_tries("graph", lambda gm=gm: indexer._write_graph(gm), indexer.policy,
                           sleep)
            results[m.id].stores["graph"] = r
            if r.state == "missing" and not r.permanent:
                down.add("graph")
    return results


def _sent_replies(indexer: Indexer, ids: list[int]) -> dict[int, list[SentReply]]:
    out: dict[int, list[SentReply]] = {}
    if not ids:
        return out
    for r in indexer.services.db.fetchall(sql("index_sent_replies_many", ids=len(ids)),
                                          slot_params(ids=ids)):
        out.setdefault(int(r["email_id"]), []).append(SentReply.from_row(r))
    return out


def _vectors(indexer: Indexer, mails: list[MailToIndex],
             chunks: dict[int, tuple[list[str], list[str]]],
             replies: dict[int, list[SentReply]], results: dict[int, IndexResult],
             sleep: Callable[[float], None]) -> None:
    """Embed all chunks in one call (each mail alone when that fails), then write all
    points in one upsert; the vectors store result of every mail in ``results``."""
    services = indexer.services
    name = indexer._embedder_name()
    for m in mails:
        results[m.id].embedder = name
    vectors: dict[int, list[list[float]]] = {}
    texts = [c for m in mails for c in chunks[m.id][0]]
    got: list[list[list[float]]] = []

    def embed_all() -> JsonObject | None:
        got[:] = [services.embedder.embed(texts)]
        return None

    batch = with_tries("vectors", embed_all, indexer.policy, sleep)
    if batch.state == "ok":
        at = 0
        for m in mails:
            n = len(chunks[m.id][0])
            vectors[m.id] = got[0][at:at + n]
            at += n
    elif batch.permanent:
        for m in mails:
            results[m.id].stores["vectors"] = batch
    else:
        _each_alone(services, mails, chunks, vectors, results, batch)
    points = {m.id: [VectorPoint(m.id, i, v, chunk_payload(m, i, c, src,
                                                           bool(replies.get(m.id)), name))
                     for i, (c, v, src) in enumerate(zip(chunks[m.id][0], vectors[m.id],
                                                         chunks[m.id][1], strict=True))]
              for m in mails if m.id in vectors}
    if not points:
        return
    written = with_tries("vectors", lambda: {"points": services.vectors.replace_mails(points)},
                         indexer.policy, sleep)
    for email_id, ps in points.items():
        results[email_id].stores["vectors"] = StoreResult(
            "vectors", written.state, written.tries, written.error, written.permanent,
            written.failures, {"points": len(ps), "batch": len(points)}
            if written.state == "ok" else {})


def _each_alone(services: ServiceContext, mails: list[MailToIndex],
                chunks: dict[int, tuple[list[str], list[str]]],
                vectors: dict[int, list[list[float]]], results: dict[int, IndexResult],
                batch: StoreResult) -> None:
    """The batch call failed: each mail once on its own, so that one text the embedder
    cannot take does not leave the others without vectors. After ``ALONE_GIVE_UP``
    failures in a row with none embedded, the embedder is down: the rest are not tried."""
    embedder = services.embedder
    failed_in_a_row = 0
    for m in mails:
        if failed_in_a_row >= ALONE_GIVE_UP and not vectors:
            results[m.id].stores["vectors"] = StoreResult(
                "vectors", "missing", batch.tries, batch.error or "unavailable",
                failures=batch.failures)
            continue
        out: list[list[list[float]]] = []

        def embed_one(texts: list[str] = chunks[m.id][0],
                      out: list[list[list[float]]] = out) -> JsonObject | None:
            out[:] = [embedder.embed(texts)]
            return None

        alone = with_tries("vectors", embed_one, ONE_TRY, lambda _s: None)
        if alone.state == "ok":
            vectors[m.id] = out[0]
            failed_in_a_row = 0
        else:
            failed_in_a_row += 1
            results[m.id].stores["vectors"] = StoreResult(
                "vectors", "missing", batch.tries + alone.tries, alone.error,
                alone.permanent, [*batch.failures, *alone.failures],
                {"why": "the batch call and this mail alone failed"})
