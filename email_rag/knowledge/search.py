"""Searching the team's knowledge: the interface the drafting uses.

``KnowledgeSearch(db, embedder).search(mailbox_id, text, limit)`` ranks the passages of the
active articles that are global or the mailbox's own, in their current version, two ways:

- **vectors**: the cosine of the query's vector (the product's embedder) with every passage
  vector of the same embedder, in numpy (knowledge is small: hundreds of passages, loaded
  per search);
- **words**: MariaDB FULLTEXT over the passages' heading and text, with the query built as
  for mail (``indexing.retrieval.lexical_query``: optional words and prefixes);

fused by reciprocal rank fusion (``indexing.retrieval.rrf``), at most
``PER_ARTICLE`` passages per article, best first.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| the embedder is down or refuses | no: words only, ``reduced`` is True on the result | yes | the next search uses vectors again |
| MariaDB down | the caller's (``DatabaseUnavailableError``) | yes: nothing written | - |
| an empty query (no words) | - | yes: no hits | - |
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.errors import EmbeddingRejectedError, EmbeddingUnavailableError
from ..core.index_ports import Embedder
from ..db import Database, slot_params, sql
from ..db.connection import Cursor
from ..indexing.retrieval import lexical_query, rrf, tied_ranks
from .articles import from_blob

log = logging.getLogger(__name__)

PER_ARTICLE = 3
RANKED = 50  # passages the lexical ranking contributes to the fusion (the vectors: all)
QUERY_CHARS = 2000
MAX_QUESTIONS = 6  # of a mail's sentences asked besides its whole text
_WORD = re.compile(r"[^\W_]", re.UNICODE)


@dataclass(frozen=True)
class KnowledgeHit:
    article_id: int
    version: int
    passage_no: int
    title: str
    heading: str
    text: str
    origin: str  # 'file' | 'web' | 'saved_reply' | 'case'
    language: str | None  # of the article ('de', 'en', ...)
    score: float  # fused rank score (higher is better)
    cosine: float  # raw cosine of the passage vector with the query (0 if lexical only)

    def ref(self) -> str:
        return f"knowledge:{self.article_id}:{self.passage_no}"

    def url(self) -> str:
        return f"/admin/knowledge/{self.article_id}#p{self.passage_no}"

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KnowledgeHit:
        return cls(article_id=int(data["article_id"]), version=int(data["version"]),
                   passage_no=int(data["passage_no"]), title=str(data["title"]),
                   heading=str(data["heading"]), text=str(data["text"]),
                   origin=str(data["origin"]),
                   language=None if data.get("language") is None else str(data["language"]),
                   score=float(data["score"]), cosine=float(data["cosine"]))


class KnowledgeHits(list[KnowledgeHit]):
    """The hits, best first; ``reduced``: True when the vectors could not be used (the
    embedder was down): found by words only."""

    reduced: bool = False


class KnowledgeSearch:
    def __init__(self, db: Database, embedder: Embedder) -> None:
        self.db = db
        self.embedder = embedder

    def search(self, mailbox_id: int | None, text: str, limit: int = 8,
               questions: Sequence[str] = (), words: str = "") -> list[KnowledgeHit]:
        """The passages that best answer ``text`` for a mail of ``mailbox_id`` (None: global
        knowledge only): active articles only, at most ``PER_ARTICLE`` per article.
        ``questions``: the mail's own questions (sentences), embedded with the text in one
        call; a passage's cosine is its best with any of them (a mail's greeting, signature
        and story dilute the whole text's vector)."""
        hits = KnowledgeHits()
        text = (text or "")[:QUERY_CHARS]
        if not _WORD.search(text):
            return hits
        key = mailbox_id or 0
        asked = [q[:QUERY_CHARS] for q in questions if _WORD.search(q or "")][:MAX_QUESTIONS]
        queries = self._embed([text, *asked])
        hits.reduced = queries is None
        q = lexical_query(None, f"{text}\n{words}" if words else text)
        # one read transaction: the vectors, the words and the passages chosen from them are
        # of one snapshot (an article re-imported meanwhile is never mixed with its old text)
        with self.db.transaction() as cur:
            cosines = self._cosines(cur, key, queries)
            lexical = [] if not q else [
                ((int(r["article_id"]), int(r["passage_no"])), float(r["score"]))
                for r in cur.fetchall(sql("knowledge_search_lexical"),
                                      {"q": q, "mailbox_key": key, "limit": RANKED})]
            chosen = _choose(cosines, lexical, limit)
            rows = self._passages(cur, sorted({k[0] for k, _ in chosen}))
        for k, score in chosen:
            row = rows[k]
            hits.append(KnowledgeHit(
                article_id=k[0], version=int(row["version"]), passage_no=k[1],
                title=str(row["title"]), heading=str(row["heading"]), text=str(row["text"]),
                origin=str(row["origin"]), language=row["language"], score=score,
                cosine=float(cosines.get(k, 0.0))))
        return hits

    def _embed(self, texts: list[str]) -> np.ndarray | None:
        """The queries' vectors; None when the embedder could not be asked (words only)."""
        try:
            return np.asarray(self.embedder.embed(texts), dtype=np.float32)
        except (EmbeddingUnavailableError, EmbeddingRejectedError) as e:
            log.warning("knowledge search by words only: the embedder failed (%s)",
                        type(e).__name__)
            return None

    def _cosines(self, cur: Cursor, mailbox_key: int, queries: np.ndarray | None
                 ) -> dict[tuple[int, int], float]:
        """The best cosine of the queries with every searchable passage vector."""
        if queries is None:
            return {}
        rows = cur.fetchall(sql("knowledge_search_vectors"),
                            {"mailbox_key": mailbox_key, "embedder": self.embedder.name})
        if not rows:
            return {}
        matrix = np.vstack([from_blob(r["vector"]) for r in rows])
        norms = np.outer(np.linalg.norm(matrix, axis=1), np.linalg.norm(queries, axis=1))
        scores = (matrix @ queries.T / np.where(norms == 0, 1.0, norms)).max(axis=1)
        return {(int(r["article_id"]), int(r["passage_no"])): float(s)
                for r, s in zip(rows, scores, strict=True)}

    def _passages(self, cur: Cursor, article_ids: list[int]) -> dict[tuple[int, int], dict]:
        if not article_ids:
            return {}
        rows = cur.fetchall(sql("knowledge_search_passages", ids=len(article_ids)),
                            slot_params(ids=article_ids))
        return {(int(r["article_id"]), int(r["passage_no"])): r for r in rows}


def _choose(cosines: dict[tuple[int, int], float], lexical: list[tuple[tuple[int, int], float]],
            limit: int) -> list[tuple[tuple[int, int], float]]:
    """The passages ranked by vectors and words fused (RRF), at most ``PER_ARTICLE`` per
    article. Every passage is in the vector ranking (knowledge is small): a passage only the
    words found still gets its vector rank, and does not tie with the vectors' first."""
    by_vector = sorted(cosines.items(), key=lambda kv: (-kv[1], kv[0]))
    keys = list(dict.fromkeys([k for k, _ in by_vector] + [k for k, _ in lexical]))
    if not keys:
        return []
    number = {k: n for n, k in enumerate(keys)}
    fused = rrf([number[k] for k, _ in by_vector],
                tied_ranks([(number[k], s) for k, s in lexical]))
    chosen: list[tuple[tuple[int, int], float]] = []
    per_article: dict[int, int] = {}
    for n, score in fused:
        k = keys[n]
        if per_article.get(k[0], 0) >= PER_ARTICLE:
            continue
        per_article[k[0]] = per_article.get(k[0], 0) + 1
        chosen.append((k, score))
        if len(chosen) >= limit:
            break
    return chosen
