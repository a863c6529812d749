"""Retrieval: the context a reply draft is written from, and ``email-rag search``.

For one mail (``Retriever.for_mail``):

- similar past cases: the nearest mails of the SAME mailbox in the vector store
  that received a sent reply, with that reply (MariaDB decides "sent": drafts
  with status sent; the vector payload's ``has_sent_reply`` is only a hint,
  it was true or false when the mail was indexed);
- the thread: the other mails with the same thread_key (MariaDB, always there),
  with the replies we sent in it;
- the sender's history: from the graph when it is configured and answers,
  otherwise from MariaDB (said in ``sender_history_source``).

Failure table:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| vector store / embeddings unavailable | store_tries tries, backoff | yes: reduced context, detail says which store and why, audited `retrieval_reduced` | the draft is written from thread + history; never fails the mail |
| graph unavailable | store_tries tries | yes: history from MariaDB, `reduced`, audited | - |
| a store refuses (configuration) | no | same as unavailable, with the reason | after the fix |
| mail has no text | - | no vector search (detail says so) | - |
| MariaDB lost | worker waits | yes | step re-runs |
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..core.index_ports import HistoryMail, MailToIndex, VectorHit
from ..core.rows import FromRow, set_field
from ..db import slot_params, sql
from .chunking import clean_body, mail_chunks
from .indexer import StoreResult, _iso, store_policy, with_tries

SNIPPET = 300
REPLY_CHARS = 4000


def best_per_mail(hits: list[VectorHit]) -> list[VectorHit]:
    """The best-scoring chunk of each mail, best first."""
    best: dict[int, VectorHit] = {}
    for h in hits:
        if h.email_id not in best or h.score > best[h.email_id].score:
            best[h.email_id] = h
    return sorted(best.values(), key=lambda h: (-h.score, h.email_id))


@dataclass(frozen=True)
class SentCase(FromRow):
    """A candidate mail with a reply that was sent (``index_sent_cases``)."""

    email_id: int
    draft_id: int
    subject: str | None = None
    from_addr: str | None = None
    received_at: datetime | None = None
    category: str | None = None
    body_text: str | None = None
    reply_text: str | None = None

    def __post_init__(self) -> None:
        set_field(self, "email_id", int(self.email_id))
        set_field(self, "draft_id", int(self.draft_id))


@dataclass(frozen=True)
class CaseReply:
    draft_id: int
    text: str


@dataclass(frozen=True)
class SimilarCase:
    """A similar past case of the same mailbox, with the reply we sent to it."""

    email_id: int
    score: float
    chunk: int
    subject: str | None
    from_addr: str | None
    received_at: str | None
    category: str | None
    snippet: str
    reply: CaseReply


def similar_cases(hits: list[VectorHit], cases: dict[int, SentCase], limit: int
                  ) -> list[SimilarCase]:
    """The hits (best first, one per mail) that have a sent reply, at most ``limit``: the
    snippet is the hit's chunk text, else the start of the mail's body."""
    out = []
    for h in hits:
        case = cases.get(h.email_id)
        if case is None:
            continue
        out.append(SimilarCase(
            h.email_id, round(h.score, 4), h.chunk, case.subject, case.from_addr,
            _iso(case.received_at), case.category,
            (h.payload.text or clean_body(case.body_text))[:SNIPPET],
            CaseReply(case.draft_id, (case.reply_text or "")[:REPLY_CHARS])))
        if len(out) >= limit:
            break
    return out


@dataclass(frozen=True)
class ThreadRow(FromRow):
    """Another mail of the thread (``index_thread_mails``)."""

    id: int
    subject: str | None = None
    from_addr: str | None = None
    received_at: datetime | None = None
    status: str | None = None
    body_text: str | None = None

    def __post_init__(self) -> None:
        set_field(self, "id", int(self.id))


@dataclass(frozen=True)
class ThreadMail:
    """Another mail of the thread, with the reply we sent to it (if any)."""

    email_id: int
    subject: str | None
    from_addr: str | None
    received_at: str | None
    status: str | None
    snippet: str
    sent_reply: str | None


@dataclass(frozen=True)
class FoundMail(FromRow):
    """What MariaDB says about a search hit (``index_emails_by_ids``)."""

    id: int
    subject: str | None = None
    from_addr: str | None = None
    received_at: datetime | None = None
    status: str | None = None
    has_sent_reply: bool = False

    def __post_init__(self) -> None:
        set_field(self, "id", int(self.id))
        set_field(self, "has_sent_reply", bool(self.has_sent_reply))


@dataclass(frozen=True)
class SearchHit:
    """A mail found by ``email-rag search``: MariaDB's fields, or the vector payload's when
    the mail is not in MariaDB (``in_mariadb`` false)."""

    email_id: int
    score: float
    chunk: int
    mailbox_id: int | None
    subject: str | None
    from_addr: str | None
    received_at: str | None
    status: str | None
    has_sent_reply: bool | None
    in_mariadb: bool
    snippet: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def search_hit(h: VectorHit, found: FoundMail | None) -> SearchHit:
    p = h.payload
    snippet = (p.text or "")[:SNIPPET]
    if found is None:
        return SearchHit(h.email_id, round(h.score, 4), h.chunk, p.mailbox_id, p.subject,
                         p.from_addr, p.received_at, None, None, False, snippet)
    return SearchHit(h.email_id, round(h.score, 4), h.chunk, p.mailbox_id, found.subject,
                     found.from_addr, _iso(found.received_at), found.status,
                     found.has_sent_reply, True, snippet)


@dataclass(frozen=True)
class Retrieved:
    """The context a reply draft is written from (``detail()``: the retrieve step's JSON)."""

    similar: list[SimilarCase]
    thread: list[ThreadMail]
    sender_history: list[HistoryMail]
    sender_history_source: str  # "graph" or "mariadb"
    stores: dict[str, StoreResult]
    embedder: str | None

    @property
    def missing(self) -> list[str]:
        return [n for n, r in self.stores.items() if r.state == "missing"]

    def detail(self) -> dict[str, Any]:
        return {
            "similar": [asdict(c) for c in self.similar],
            "thread": [asdict(t) for t in self.thread],
            "sender_history": [h.as_dict() for h in self.sender_history],
            "sender_history_source": self.sender_history_source,
            "stores": {n: r.as_dict() for n, r in self.stores.items()},
            "reduced": bool(self.missing),
            "missing": self.missing,
            "embedder": self.embedder,
        }


class Retriever:
    def __init__(self, services: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.services = services
        self.settings = services.settings
        self.policy = store_policy(services.settings)
        self.sleep = sleep

    # --- for the draft ---
    def for_mail(self, email: MailToIndex | Mapping[str, Any]
                 ) -> tuple[dict[str, Any], dict[str, StoreResult]]:
        """The retrieve step's detail (JSON) and the store results (see ``retrieve``)."""
        got = self.retrieve(MailToIndex.of(email))
        return got.detail(), got.stores

    def retrieve(self, mail: MailToIndex) -> Retrieved:
        s = self.settings
        stores: dict[str, StoreResult] = {}
        chunks, _ = mail_chunks(mail.subject, mail.body_text, s.chunk_chars, s.chunk_overlap)
        similar: list[SimilarCase] = []
        if not chunks:
            stores["vectors"] = StoreResult("vectors", "skipped", info={"why": "no text"})
        else:
            found: list[SimilarCase] = []

            def search() -> dict[str, Any]:
                found[:] = self._similar_cases(mail, chunks[0])
                return {"candidates": len(found)}
            stores["vectors"] = with_tries("vectors", search, self.policy, self.sleep)
            similar = found if stores["vectors"].state == "ok" else []
        thread = self._thread(mail)
        history: list[HistoryMail] = []
        source = "mariadb"
        if s.arango_url and mail.from_addr:
            got: list[HistoryMail] = []
            from_addr = mail.from_addr

            def graph_history() -> dict[str, Any]:
                graph = self.services.graph
                assert graph is not None
                got[:] = graph.sender_history(from_addr, exclude_email_id=mail.id,
                                              limit=s.retrieve_context_limit,
                                              mailbox_id=mail.mailbox_id)
                return {"found": len(got)}
            stores["graph"] = with_tries("graph", graph_history, self.policy, self.sleep)
            if stores["graph"].state == "ok":
                history, source = got, "graph"
        else:
            stores["graph"] = StoreResult("graph", "off", info={"why": "EMAIL_RAG_ARANGO_URL unset"}
                                          if not s.arango_url else {"why": "no sender address"})
        if source == "mariadb" and mail.from_addr:
            history = [_history(r) for r in self.services.db.fetchall(
                sql("index_sender_history"), {"mailbox_id": mail.mailbox_id,
                                               "from_addr": mail.from_addr, "id": mail.id,
                                               "limit": s.retrieve_context_limit})]
        embedder = self._embedder_name() if "vectors" in stores \
            and stores["vectors"].state != "skipped" else None
        return Retrieved(similar[: s.retrieve_limit], thread, history, source, stores, embedder)

    def _embedder_name(self) -> str | None:
        try:
            return str(self.services.embedder.name)
        except Exception:  # noqa: BLE001 - only a label
            return None

    def _sent_cases(self, ids: list[int]) -> dict[int, SentCase]:
        """Of these mails, those with a sent reply: the newest sent draft wins (the query
        orders by draft id)."""
        rows = self.services.db.fetchall(sql("index_sent_cases", ids=len(ids)),
                                         slot_params(ids=ids))
        return {c.email_id: c for c in SentCase.from_rows(rows)}

    def _similar_cases(self, mail: MailToIndex, query: str) -> list[SimilarCase]:
        s = self.settings
        vec = self.services.embedder.embed([query])[0]
        hits = best_per_mail(self.services.vectors.search(
            vec, mailbox_id=mail.mailbox_id, exclude_email_id=mail.id,
            limit=max(s.retrieve_candidates, s.retrieve_limit)))
        if not hits:
            return []
        return similar_cases(hits, self._sent_cases([h.email_id for h in hits]),
                             s.retrieve_limit)

    def _thread(self, mail: MailToIndex) -> list[ThreadMail]:
        if not mail.thread_key:
            return []
        rows = ThreadRow.from_rows(self.services.db.fetchall(sql("index_thread_mails"), {
            "mailbox_id": mail.mailbox_id, "thread_key": mail.thread_key,
            "id": mail.id, "limit": self.settings.retrieve_context_limit}))
        if not rows:
            return []
        replies = {i: (c.reply_text or "")[:REPLY_CHARS]
                   for i, c in self._sent_cases([r.id for r in rows]).items()}
        return [ThreadMail(r.id, r.subject, r.from_addr, _iso(r.received_at), r.status,
                           clean_body(r.body_text)[:SNIPPET * 2], replies.get(r.id))
                for r in rows]

    # --- email-rag search ---
    def search(self, text: str, mailbox_id: int | None = None,
               limit: int = 10) -> list[SearchHit]:
        """Indexed mails nearest to ``text`` (raises StoreUnavailableError when the store is)."""
        vec = self.services.embedder.embed([text])[0]
        hits = best_per_mail(self.services.vectors.search(
            vec, mailbox_id=mailbox_id, limit=max(limit * 4, limit)))[:limit]
        if not hits:
            return []
        ids = [h.email_id for h in hits]
        found = {m.id: m for m in FoundMail.from_rows(self.services.db.fetchall(
            sql("index_emails_by_ids", ids=len(ids)), slot_params(ids=ids)))}
        return [search_hit(h, found.get(h.email_id)) for h in hits]


def _history(row: Mapping[str, Any]) -> HistoryMail:
    """A row of ``index_sender_history`` (dates as ISO text, like the graph's)."""
    return HistoryMail.from_row({k: _iso(v) if hasattr(v, "isoformat") else v
                                 for k, v in row.items()})
