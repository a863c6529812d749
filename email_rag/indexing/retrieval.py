"""Retrieval: the context a reply draft is written from, and ``email-rag search``.

For one mail (``Retriever.for_mail``):

- similar past cases: hybrid search over the mails of the SAME mailbox. Two
  rankings, each asked for ``retrieve_candidates`` mails: the nearest in the
  vector store (meaning) and the best by shared words (MariaDB's FULLTEXT index
  over subject and text, ``index_lexical``); fused by reciprocal rank fusion
  (``rrf``, k=60: a mail's score is the sum of 1/(k + rank) over the rankings it
  is in). Of the fused ranking, the mails that received a reply of ours, with that
  reply (MariaDB decides: a draft with status sent, or the reply from the Sent folder an
  imported history mail is linked to, ``answered_by``; the vector payload's
  ``has_sent_reply`` is only a hint, it was true or false when the mail was
  indexed). On the project's paraphrase corpus hit@3 rises from 0.83 (vectors)
  to 0.9+ fused (docs/indexing.md). Each side is a store of the failure table:
  when one is down the other still retrieves, and the detail says which;
- the thread: the other mails with the same thread_key (MariaDB, always there),
  with the replies we sent in it;
- the sender's history: from the graph when it is configured and answers,
  otherwise from MariaDB (said in ``sender_history_source``).

Failure table:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| vector store / embeddings unavailable | store_tries tries, backoff | yes: reduced context, detail says which store and why, audited `retrieval_reduced` | similar cases from the lexical ranking alone; never fails the mail |
| the FULLTEXT query fails (index missing: migration not applied) | no | yes: `lexical` missing with the reason, audited `retrieval_reduced` | similar cases from the vectors alone |
| graph unavailable | store_tries tries | yes: history from MariaDB, `reduced`, audited | - |
| a store refuses (configuration) | no | same as unavailable, with the reason | after the fix |
| mail has no text | - | no vector search (detail says so) | - |
| MariaDB lost | worker waits | yes | step re-runs |
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Protocol

from ..core.errors import (
    DatabaseBusyError,
    DatabaseError,
    DatabaseUnavailableError,
    StoreRejectedError,
)
from ..core.index_ports import ChunkPayload, HistoryMail, MailToIndex, VectorHit
from ..core.jsonvalue import JsonObject
from ..core.rows import FromRow, Row, set_field
from ..db import slot_params, sql
from ..jobs.context import ServiceContext
from .chunking import clean_body, mail_chunks
from .indexer import StoreResult, _iso, store_policy, with_tries

SNIPPET = 300
REPLY_CHARS = 4000
RRF_K = 60
LEXICAL_QUERY_CHARS = 2000  # the start of the mail is the lexical query (like the vector one)
LEXICAL_TERMS = 64
PREFIX_CHARS = 5  # measured: 4 -> 0.850, 5 -> 0.858, 6 -> 0.850, 7 -> 0.842, whole words 0.825
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def rrf(*rankings: Sequence[int | tuple[int, int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of rankings of mail ids, each best first: a mail's score is
    the sum of ``1 / (k + rank)`` over the rankings it is in. An entry is a mail id (its rank
    is its place, from 1) or ``(id, rank)`` (tied mails share a rank: ``tied_ranks``).
    Best first; ties by id."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for place, entry in enumerate(ranking, start=1):
            email_id, rank = entry if isinstance(entry, tuple) else (entry, place)
            score[email_id] = score.get(email_id, 0.0) + 1.0 / (k + rank)
    return sorted(score.items(), key=lambda t: (-t[1], t[0]))


def tied_ranks(ranked: Sequence[tuple[int, float]]) -> list[tuple[int, int]]:
    """(id, rank) of a ranking given as (id, score) best first, equal scores sharing the best
    rank of their group (1, 1, 1, 4): a ranking that cannot tell mails apart (the same words
    matched; FULLTEXT ignores words under 3 letters such as "E2") does not order them by
    chance - the other ranking does."""
    out: list[tuple[int, int]] = []
    for place, (email_id, value) in enumerate(ranked, start=1):
        same = out and math.isclose(value, ranked[place - 2][1], rel_tol=1e-9, abs_tol=1e-12)
        out.append((email_id, out[-1][1] if same else place))
    return out


@dataclass(frozen=True)
class LexicalHit(FromRow):
    """A mail of the lexical ranking (``index_lexical``): FULLTEXT relevance, not a
    similarity."""

    id: int
    score: float = 0.0

    def __post_init__(self) -> None:
        set_field(self, "id", int(self.id))
        set_field(self, "score", float(self.score))


def lexical_query(subject: str | None, body: str | None) -> str:
    """The lexical query of a mail (FULLTEXT boolean mode): the words of its subject and the
    start of its text, each optional (no operator: they rank, none is required); a word
    longer than ``PREFIX_CHARS`` becomes its first ``PREFIX_CHARS`` letters with the
    truncation operator, so other forms of it match (Rechnung/Rechnungen, facture/facturé,
    cobro/cobrado) - a stemmer for every language at no cost. Words shorter than
    MariaDB's smallest indexed token (3) are left out; at most ``LEXICAL_TERMS`` terms, in
    order of appearance. Only word characters reach the query: text can never be read as
    an operator. "" when no word is left."""
    text = f"{subject or ''}\n{clean_body(body)}"[:LEXICAL_QUERY_CHARS]
    terms: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) < 3:
            continue
        terms.setdefault(word[:PREFIX_CHARS] + "*" if len(word) > PREFIX_CHARS else word)
        if len(terms) >= LEXICAL_TERMS:
            break
    return " ".join(terms)


def fuse(vector_hits: list[VectorHit], lexical: list[LexicalHit]) -> list[VectorHit]:
    """The fused ranking as hits: a mail the vectors found keeps its best chunk and cosine
    score; a mail only the lexical side found is a hit of chunk 0 without a similarity
    (``score`` nan: ``similar_cases`` shows it as None)."""
    by_id = {h.email_id: h for h in vector_hits}
    out = []
    for email_id, _ in rrf([h.email_id for h in vector_hits],
                           tied_ranks([(h.id, h.score) for h in lexical])):
        out.append(by_id.get(email_id) or VectorHit(email_id, 0, math.nan,
                                                     ChunkPayload(email_id)))
    return out


def best_per_mail(hits: list[VectorHit]) -> list[VectorHit]:
    """The best-scoring chunk of each mail, best first."""
    best: dict[int, VectorHit] = {}
    for h in hits:
        if h.email_id not in best or h.score > best[h.email_id].score:
            best[h.email_id] = h
    return sorted(best.values(), key=lambda h: (-h.score, h.email_id))


@dataclass(frozen=True)
class SentCase(FromRow):
    """A candidate mail with a reply of ours (``index_sent_cases``): a draft we sent
    (``draft_id``) or, from the history import, our reply in the Sent folder
    (``reply_email_id``)."""

    email_id: int
    draft_id: int | None = None
    reply_email_id: int | None = None
    subject: str | None = None
    from_addr: str | None = None
    received_at: datetime | None = None
    category: str | None = None
    body_text: str | None = None
    reply_text: str | None = None

    def __post_init__(self) -> None:
        set_field(self, "email_id", int(self.email_id))
        for name in ("draft_id", "reply_email_id"):
            value = getattr(self, name)
            set_field(self, name, None if value is None else int(value))

    def reply(self) -> CaseReply:
        """Our reply: a sent draft as written; a mail from Sent without the quoted question
        and the signature (``clean_body``)."""
        text = self.reply_text or ""
        if self.draft_id is None:
            text = clean_body(text)
        return CaseReply(self.draft_id, text[:REPLY_CHARS], self.reply_email_id)


@dataclass(frozen=True)
class CaseReply:
    draft_id: int | None  # a draft we sent
    text: str
    email_id: int | None = None  # our reply from the Sent folder (history import)


@dataclass(frozen=True)
class SimilarCase:
    """A similar past case of the same mailbox, with the reply we sent to it. ``score``: the
    cosine similarity of its best chunk (None: found by its words only); ``found_by``:
    "vectors", "words" or "both"."""

    email_id: int
    score: float | None
    chunk: int
    subject: str | None
    from_addr: str | None
    received_at: str | None
    category: str | None
    snippet: str
    reply: CaseReply
    found_by: str = "vectors"


def similar_cases(hits: list[VectorHit], cases: dict[int, SentCase], limit: int,
                  lexical: set[int] | None = None) -> list[SimilarCase]:
    """The hits (best first, one per mail) that have a sent reply, at most ``limit``: the
    snippet is the hit's chunk text, else the start of the mail's body. ``lexical``: the
    mails the lexical ranking found (for ``found_by``)."""
    out = []
    words = lexical or set()
    for h in hits:
        case = cases.get(h.email_id)
        if case is None:
            continue
        by_vector = not math.isnan(h.score)
        found_by = ("both" if h.email_id in words else "vectors") if by_vector else "words"
        out.append(SimilarCase(
            h.email_id, round(h.score, 4) if by_vector else None, h.chunk, case.subject,
            case.from_addr, _iso(case.received_at), case.category,
            (h.payload.text or clean_body(case.body_text))[:SNIPPET],
            case.reply(), found_by))
        if len(out) >= limit:
            break
    return out


def close_cases(fused: list[VectorHit], similar: list[SimilarCase], cases: dict[int, SentCase],
                bar: float, limit: int) -> list[SimilarCase]:
    """The cases whose cosine reaches ``bar`` (a draft may answer from them) that the fused
    ranking left out of ``similar``, at most ``limit``: words shared with same-language mails
    lift those in the fusion above a mail in another language that asks the same."""
    have = {c.email_id for c in similar}
    near = [h for h in fused if not math.isnan(h.score) and h.score >= bar
            and h.email_id not in have]
    return similar_cases(sorted(near, key=lambda h: -h.score), cases, limit)


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
    mailbox_id: int | None = None
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
    score: float | None  # cosine similarity; None: found by its words only
    chunk: int
    mailbox_id: int | None
    subject: str | None
    from_addr: str | None
    received_at: str | None
    status: str | None
    has_sent_reply: bool | None
    in_mariadb: bool
    snippet: str

    def as_dict(self) -> JsonObject:
        return asdict(self)


def search_hit(h: VectorHit, found: FoundMail | None) -> SearchHit:
    p = h.payload
    snippet = (p.text or "")[:SNIPPET]
    score = None if math.isnan(h.score) else round(h.score, 4)
    if found is None:
        return SearchHit(h.email_id, score, h.chunk, p.mailbox_id, p.subject,
                         p.from_addr, p.received_at, None, None, False, snippet)
    return SearchHit(h.email_id, score, h.chunk, found.mailbox_id or p.mailbox_id, found.subject,
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

    def detail(self) -> JsonObject:
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


class Reader(Protocol):
    """Where retrieval's MariaDB reads go: the connection (each read its own transaction) or
    the cursor of the read transaction they share."""

    def fetchall(self, query: str, params: Any = None) -> list[Row]: ...


class Retriever:
    def __init__(self, services: ServiceContext, sleep: Callable[[float], None] = time.sleep) -> None:
        self.services = services
        self.settings = services.settings
        self.policy = store_policy(services.settings)
        self.sleep = sleep

    # --- for the draft ---
    def for_mail(self, email: MailToIndex | Mapping[str, Any], close_bar: float | None = None
                 ) -> tuple[JsonObject, dict[str, StoreResult]]:
        """The retrieve step's detail (JSON) and the store results (see ``retrieve``)."""
        got = self.retrieve(MailToIndex.of(email), close_bar)
        return got.detail(), got.stores

    def retrieve(self, mail: MailToIndex, close_bar: float | None = None) -> Retrieved:
        """The outside stores first (vectors, graph), then every MariaDB read in one read
        transaction (one commit): the lexical ranking, the thread, the sent replies of the
        fused candidates and of the thread (one query), the sender's history. ``close_bar``:
        the cosine at which a past case may answer the mail (the drafting's bar): such cases
        the fusion left out are kept too (``close_cases``); None: the fused ones only."""
        s = self.settings
        stores: dict[str, StoreResult] = {}
        chunks, _ = mail_chunks(mail.subject, mail.body_text, s.chunk_chars, s.chunk_overlap)
        near: list[VectorHit] = []
        words: list[LexicalHit] = []
        wide = max(s.retrieve_candidates, s.retrieve_limit)
        if not chunks:
            stores["vectors"] = StoreResult("vectors", "skipped", info={"why": "no text"})
            stores["lexical"] = StoreResult("lexical", "skipped", info={"why": "no text"})
        else:
            def search() -> JsonObject:
                near[:] = self._vector_hits(chunks[0], mail.mailbox_id, mail.id, wide)
                return {"candidates": len(near)}
            stores["vectors"] = with_tries("vectors", search, self.policy, self.sleep)
            stores["lexical"] = StoreResult("lexical", "missing")  # asked below, in MariaDB
        history: list[HistoryMail] = []
        source = "mariadb"
        if s.arango_url and mail.from_addr:
            got: list[HistoryMail] = []
            from_addr = mail.from_addr

            def graph_history() -> JsonObject:
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
        similar: list[SimilarCase] = []
        with self.services.db.transaction() as cur:
            if chunks:
                def lexical() -> JsonObject:
                    words[:] = self._lexical_hits(mail.subject, mail.body_text, mail.mailbox_id,
                                                  mail.id, wide, cur)
                    return {"candidates": len(words)}
                stores["lexical"] = with_tries("lexical", lexical, self.policy, self.sleep)
            near = near if "vectors" in stores and stores["vectors"].state == "ok" else []
            words = words if "lexical" in stores and stores["lexical"].state == "ok" else []
            fused = fuse(near, words) if chunks else []
            rows = self._thread_rows(mail, cur)
            cases = self._sent_cases([h.email_id for h in fused] + [r.id for r in rows], cur)
            if fused:
                similar = similar_cases(fused, cases, s.retrieve_limit, {h.id for h in words})
                if close_bar is not None:
                    similar += close_cases(fused, similar, cases, close_bar, s.retrieve_limit)
            thread = thread_mails(rows, cases)
            if source == "mariadb" and mail.from_addr:
                history = [_history(r) for r in cur.fetchall(
                    sql("index_sender_history"), {"mailbox_id": mail.mailbox_id,
                                                   "from_addr": mail.from_addr, "id": mail.id,
                                                   "limit": s.retrieve_context_limit})]
        embedder = self._embedder_name() if "vectors" in stores \
            and stores["vectors"].state != "skipped" else None
        return Retrieved(similar, thread, history, source, stores, embedder)

    def _embedder_name(self) -> str | None:
        try:
            return str(self.services.embedder.name)
        except Exception:  # noqa: BLE001 - only a label
            return None

    def _sent_cases(self, ids: list[int], reader: Reader) -> dict[int, SentCase]:
        """Of these mails, those with a reply of ours: the newest sent draft wins, else our
        reply from Sent (the query's order)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = reader.fetchall(sql("index_sent_cases", ids=len(ids)), slot_params(ids=ids))
        return {c.email_id: c for c in SentCase.from_rows(rows)}

    def _vector_hits(self, query: str, mailbox_id: int | None, exclude: int | None,
                     limit: int) -> list[VectorHit]:
        """The vector ranking: the best chunk per mail, best first."""
        vec = self.services.embedder.embed([query])[0]
        return best_per_mail(self.services.vectors.search(
            vec, mailbox_id=mailbox_id, exclude_email_id=exclude, limit=limit))

    def _lexical_hits(self, subject: str | None, body: str | None, mailbox_id: int | None,
                      exclude: int | None, limit: int,
                      reader: Reader | None = None) -> list[LexicalHit]:
        """The lexical ranking (FULLTEXT, boolean mode: ``lexical_query``), best first. A query the
        server refuses (no FULLTEXT index: migration 0240 not applied) is this store
        refusing; MariaDB unavailable or busy is not a store failure (the worker waits)."""
        query = lexical_query(subject, body)
        if not query:
            return []
        reader = reader or self.services.db
        try:
            if mailbox_id is None:
                rows = reader.fetchall(sql("index_lexical_any_mailbox"),
                                       {"q": query, "limit": limit})
            else:
                rows = reader.fetchall(sql("index_lexical"), {
                    "q": query, "mailbox_id": mailbox_id, "id": exclude or 0, "limit": limit})
        except (DatabaseUnavailableError, DatabaseBusyError):
            raise
        except DatabaseError as e:
            raise StoreRejectedError(f"the FULLTEXT query was refused: {e}") from e
        return LexicalHit.from_rows(rows)

    def _thread_rows(self, mail: MailToIndex, reader: Reader) -> list[ThreadRow]:
        """The other mails of the thread (``index_thread_mails``)."""
        if not mail.thread_key:
            return []
        return ThreadRow.from_rows(reader.fetchall(sql("index_thread_mails"), {
            "mailbox_id": mail.mailbox_id, "thread_key": mail.thread_key,
            "id": mail.id, "limit": self.settings.retrieve_context_limit}))

    # --- email-rag search ---
    def search(self, text: str, mailbox_id: int | None = None,
               limit: int = 10) -> list[SearchHit]:
        """Indexed mails nearest to ``text``: the vector and the lexical rankings fused (raises
        StoreUnavailableError when the vector store is)."""
        wide = max(limit * 4, 20)
        near = self._vector_hits(text, mailbox_id, None, wide)
        hits = fuse(near, self._lexical_hits(text, None, mailbox_id, None, wide))[:limit]
        if not hits:
            return []
        ids = [h.email_id for h in hits]
        found = {m.id: m for m in FoundMail.from_rows(self.services.db.fetchall(
            sql("index_emails_by_ids", ids=len(ids)), slot_params(ids=ids)))}
        return [search_hit(h, found.get(h.email_id)) for h in hits]


def thread_mails(rows: list[ThreadRow], cases: Mapping[int, SentCase]) -> list[ThreadMail]:
    """The thread's other mails, each with the reply we sent to it (``cases``: the sent
    replies of these mails and maybe others, by mail id)."""
    return [ThreadMail(r.id, r.subject, r.from_addr, _iso(r.received_at), r.status,
                       clean_body(r.body_text)[:SNIPPET * 2],
                       cases[r.id].reply().text if r.id in cases else None)
            for r in rows]


def _history(row: Mapping[str, Any]) -> HistoryMail:
    """A row of ``index_sender_history`` (dates as ISO text, like the graph's)."""
    return HistoryMail.from_row({k: _iso(v) if hasattr(v, "isoformat") else v
                                 for k, v in row.items()})
