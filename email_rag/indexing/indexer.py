"""Index one mail into every configured store, with the store policy.

Policy: each store gets ``settings.store_tries`` tries with backoff
(``store_backoff`` s, doubling; a retry is decided by ``RetryPolicy``). A
store that stays unavailable is recorded as missing: the mail becomes
``partially_indexed`` and ``index_missing`` names the store(s). A store that
refuses the request (configuration) is not tried again and is missing too,
with the reason. The caller (index step or sync) writes the result and the
audit events in its transaction; indexing itself never fails a mail for a
store.

Failure table (index of one mail):

| situation | retry? | state known? | resume? |
|---|---|---|---|
| Qdrant unreachable / times out / 5xx | store_tries tries, backoff | yes: partially_indexed, missing vectors, audited | periodic sync re-indexes |
| embeddings endpoint unreachable / times out | same (the vector store cannot be written) | same | same |
| embeddings endpoint 429 with Retry-After | yes: waits Retry-After (at most ``store_max_retry_after`` s), audited as ``retry_after_s`` of ``store_try_failed`` | same | same |
| local Qdrant folder held by another process | same (StoreLockedError names the holder) | same; holder's data untouched | same |
| ArangoDB refused / times out / 5xx | store_tries tries | yes: partially_indexed, missing graph | same |
| a store refuses (401/403, wrong vector size, model not installed) | no | yes: missing + reason, audited, logged as ALARM | after the fix: sync |
| graph store off (no arango_url) | - | complete without graph (detail says off) | - |
| no text to embed | - | skipped (vectors); graph still written | - |
| crash after a store write, before the checkpoint | job retry repeats the step | yes | overwrite: deterministic ids |
| MariaDB lost | worker waits (not a store failure) | yes | step re-runs |
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import EmailRagError, PermanentError, StoreUnavailableError
from ..core.index_ports import ChunkPayload, GraphMail, GraphReply, MailToIndex, VectorPoint
from ..core.jsonvalue import JsonObject
from ..core.retry import RetryPolicy
from ..core.rows import FromRow, set_field
from ..core.states import IndexStatus
from ..db import sql
from .chunking import MAX_CHUNKS, attachment_chunks, mail_chunks

if TYPE_CHECKING:
    from ..db.connection import Cursor, Database
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

STORES = ("vectors", "graph")
SNIPPET = 1000  # characters of chunk text kept in the vector payload


@dataclass
class TryFailure:
    attempt: int
    error: str
    retry_in_s: float | None  # None: no further try
    retry_after_s: float | None = None  # the server's Retry-After, when it sent one


@dataclass
class StoreResult:
    store: str
    state: str  # ok, missing, off, skipped
    tries: int = 0
    error: str | None = None
    permanent: bool = False
    failures: list[TryFailure] = field(default_factory=list)
    info: JsonObject = field(default_factory=dict)

    def as_dict(self) -> JsonObject:
        d: JsonObject = {"state": self.state, "tries": self.tries, **self.info}
        if self.error:
            d["error"] = self.error
            d["permanent"] = self.permanent
        return d


@dataclass
class IndexResult:
    email_id: int
    stores: dict[str, StoreResult]
    chunks: int = 0
    truncated: bool = False
    embedder: str = ""

    @property
    def missing(self) -> list[str]:
        return [s for s in STORES if s in self.stores and self.stores[s].state == "missing"]

    @property
    def status(self) -> IndexStatus:
        if self.missing:
            return IndexStatus.PARTIALLY_INDEXED
        if not self.chunks:  # no text: nothing to find it by (the graph may have it)
            return IndexStatus.SKIPPED
        return IndexStatus.COMPLETE

    def errors(self) -> dict[str, str]:
        return {s: r.error for s, r in self.stores.items() if r.error}

    def detail(self) -> JsonObject:
        return {"index_status": str(self.status), "missing": self.missing, "chunks": self.chunks,
                "truncated": self.truncated, "embedder": self.embedder,
                "stores": {s: r.as_dict() for s, r in self.stores.items()}}

    def try_events(self) -> Iterable[tuple[str, JsonObject]]:
        """(event, detail) for every failed try: audited by the caller."""
        for s, r in self.stores.items():
            for f in r.failures:
                yield "store_try_failed", {"store": s, "try": f.attempt, "error": f.error,
                                           "retry_in_s": f.retry_in_s,
                                           "retry_after_s": f.retry_after_s,
                                           "permanent": r.permanent}


def store_policy(settings: Any) -> RetryPolicy:
    """Doubling waits from ``store_backoff``; a Retry-After of the store (the embeddings
    endpoint's 429) is honoured up to ``store_max_retry_after`` s."""
    tries = max(1, int(settings.store_tries))
    base = max(0.0, float(settings.store_backoff))
    return RetryPolicy(delays=tuple(base * 2 ** i for i in range(tries)), max_attempts=tries,
                       jitter=0.0, max_delay=float(settings.store_max_retry_after))


def with_tries(store: str, fn: Callable[[], JsonObject | None], policy: RetryPolicy,
               sleep: Callable[[float], None] = time.sleep) -> StoreResult:
    """Run ``fn`` under the store policy; never raises for a store failure."""
    result = StoreResult(store, "missing")
    attempt = 0
    while True:
        attempt += 1
        result.tries = attempt
        try:
            result.info = fn() or {}
            result.state, result.error = "ok", None
            return result
        except PermanentError as e:
            if not _is_store_error(e):
                raise
            result.error, result.permanent = f"{type(e).__name__}: {e}", True
            result.failures.append(TryFailure(attempt, result.error, None))
            log.error("ALARM %s store refused the request (not retried): %s", store, e)
            return result
        except StoreUnavailableError as e:
            error, failure = f"{type(e).__name__}: {e}", e
        except EmailRagError:
            raise  # MariaDB and other domain errors are not store failures
        except Exception as e:  # noqa: BLE001 - an unmapped client error is a store failure
            error = f"unexpected {type(e).__name__}: {e}"
            failure = StoreUnavailableError(error)
            log.exception("%s store: unexpected error", store)
        decision = policy.decide(attempt, failure)  # the error's own Retry-After counts
        result.error = error
        result.failures.append(TryFailure(attempt, error,
                                          round(decision.delay, 3) if decision.retry else None,
                                          failure.retry_after))
        if not decision.retry:
            log.warning("%s store unavailable after %d tries: %s", store, attempt, error)
            return result
        sleep(decision.delay)


def _is_store_error(e: BaseException) -> bool:
    from ..core.errors import EmbeddingRejectedError, StoreRejectedError

    return isinstance(e, StoreRejectedError | EmbeddingRejectedError)


class Indexer:
    def __init__(self, services: ServiceContext,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.services = services
        self.settings = services.settings
        self.policy = store_policy(services.settings)
        self.sleep = sleep

    def index(self, email: MailToIndex | Mapping[str, Any], only: Iterable[str] | None = None,
              down: set[str] | None = None,
              replies: Sequence[SentReply] | None = None) -> IndexResult:
        """Index ``email`` (the record, or an ``emails`` row: converted here) into the stores
        (``only``: a subset, e.g. the missing ones).

        ``down``: stores already found unavailable in this run (a sync batch); they are
        not tried again and stay missing, so one outage does not cost tries per mail.
        ``replies``: the mail's sent replies when the caller has read them
        (``sent_replies``); None: read here.
        """
        mail = MailToIndex.of(email)
        wanted = [s for s in STORES if only is None or s in set(only)]
        s = self.settings
        chunks, truncated = mail_chunks(mail.subject, mail.body_text, s.chunk_chars,
                                        s.chunk_overlap)
        sources = ["body"] * len(chunks)
        extra = attachment_chunks(mail.subject, mail.attachment_text,
                                  s.chunk_chars, s.chunk_overlap, MAX_CHUNKS - len(chunks))
        chunks, sources = chunks + extra, sources + ["attachment"] * len(extra)
        result = IndexResult(mail.id, {}, len(chunks), truncated)
        if replies is None:
            replies = sent_replies(self.services.db, mail.id)
        down = down if down is not None else set()
        if "vectors" in wanted:
            if not chunks:
                result.stores["vectors"] = StoreResult("vectors", "skipped", info={"why": "no text"})
            elif "vectors" in down:
                result.stores["vectors"] = StoreResult(
                    "vectors", "missing", error="not tried: unavailable earlier in this run")
            else:
                result.embedder = self._embedder_name()
                result.stores["vectors"] = with_tries(
                    "vectors", lambda: self._write_vectors(mail, chunks, sources, bool(replies)),
                    self.policy, self.sleep)
        if "graph" in wanted:
            if not s.arango_url:
                result.stores["graph"] = StoreResult("graph", "off",
                                                     info={"why": "EMAIL_RAG_ARANGO_URL unset"})
            elif "graph" in down:
                result.stores["graph"] = StoreResult(
                    "graph", "missing", error="not tried: unavailable earlier in this run")
            else:
                gm = self._graph_mail(mail, replies)
                result.stores["graph"] = with_tries("graph", lambda: self._write_graph(gm),
                                                    self.policy, self.sleep)
        for name, r in result.stores.items():
            if r.state == "missing" and not r.permanent:
                down.add(name)
        return result

    def _embedder_name(self) -> str:
        try:
            return str(self.services.embedder.name)
        except EmailRagError:
            return self.settings.embedding_backend

    # --- vectors ---
    def _write_vectors(self, mail: MailToIndex, chunks: list[str], sources: list[str],
                       has_reply: bool) -> JsonObject:
        embedder = self.services.embedder
        vectors = embedder.embed(chunks)
        points = [VectorPoint(mail.id, i, v, chunk_payload(mail, i, c, src, has_reply,
                                                           embedder.name))
                  for i, (c, v, src) in enumerate(zip(chunks, vectors, sources, strict=True))]
        written = self.services.vectors.replace_mail(mail.id, points)
        return {"points": written}

    # --- graph ---
    def graph_mail(self, mail: MailToIndex) -> GraphMail:
        """What the graph holds of ``mail`` (privacy's erasure deletes exactly that)."""
        replies = SentReply.from_rows(self.services.db.fetchall(sql("index_sent_replies"),
                                                                {"id": mail.id}))
        return self._graph_mail(mail, replies)

    def _graph_mail(self, mail: MailToIndex, replies: list[SentReply]) -> GraphMail:
        parent = None
        if mail.in_reply_to:
            row = self.services.db.fetchone(sql("index_parent_by_message_id"), {
                "mailbox_id": mail.mailbox_id, "message_id": mail.in_reply_to, "id": mail.id})
            parent = int(row["id"]) if row else None
        return GraphMail(
            email_id=mail.id, mailbox_id=mail.mailbox_id, message_id=mail.message_id,
            subject=mail.subject, thread_key=mail.thread_key, from_addr=mail.from_addr,
            from_name=mail.from_name, to_addrs=_addr_list(mail.to_addrs),
            cc_addrs=_addr_list(mail.cc_addrs), received_at=_iso(mail.received_at),
            category=mail.category, parent_email_id=parent,
            replies=[GraphReply(r.draft_id, _iso(r.sent_at)) for r in replies])

    def _write_graph(self, gm: GraphMail) -> JsonObject:
        graph = self.services.graph
        assert graph is not None
        graph.upsert_mail(gm)
        return {"parent": gm.parent_email_id, "replies": len(gm.replies)}


@dataclass(frozen=True)
class SentReply(FromRow):
    """One of our replies to a mail that left (``index_sent_replies``)."""

    draft_id: int
    sent_at: datetime | None = None

    def __post_init__(self) -> None:
        set_field(self, "draft_id", int(self.draft_id))


def sent_replies(reader: Database | Cursor, email_id: int) -> list[SentReply]:
    """Our replies to a mail that left (``index_sent_replies``; ``reader``: the connection, or
    the cursor of a read transaction it joins)."""
    return SentReply.from_rows(reader.fetchall(sql("index_sent_replies"), {"id": email_id}))


def chunk_payload(mail: MailToIndex, chunk: int, text: str, source: str, has_reply: bool,
                  embedder: str) -> ChunkPayload:
    """The vector payload of one chunk (what a search hit carries without MariaDB).
    ``source``: "body" or "attachment" (attachment content, untrusted; chunking.py)."""
    return ChunkPayload(
        email_id=mail.id, mailbox_id=mail.mailbox_id, chunk=chunk,
        subject=(mail.subject or "")[:300], thread_key=mail.thread_key,
        from_addr=(mail.from_addr or "").lower() or None, category=mail.category,
        language=mail.language, received_at=_iso(mail.received_at), has_sent_reply=has_reply,
        embedder=embedder, source=source, text=text[:SNIPPET])


def _iso(v: Any) -> str | None:
    return v.isoformat() if hasattr(v, "isoformat") else (str(v) if v is not None else None)


def _addr_list(value: Any) -> list[str]:
    """to_addrs/cc_addrs may be stored as JSON lists or comma-separated text."""
    if not value:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value)
    if text.startswith("["):
        import json

        try:
            return [str(v) for v in json.loads(text)]
        except ValueError:
            pass
    return [a.strip() for a in text.split(",") if a.strip()]
