"""The knowledge store: articles and their passages in MariaDB (one store for the record).

An article has a stable id and a ``version`` that counts content changes (its
``content_hash``: title, text and language); ``mailbox_id`` None is every mailbox's
knowledge, else that mailbox's only; ``origin`` says where it came from (``Origin``). Its
passages (``passages.split``) are stored per version with their vectors (float32, the
product's embedder): a new version's passages are inserted beside the old ones, invisible
to a search (which joins on the article's current version), and the same transaction
switches the article to the new version and deletes the old passages. A search therefore
sees an article whole, in one version, or not at all.

Every change is one transaction with its audit event (``knowledge_article_created``,
``_updated``, ``_disabled``, ``_enabled``, ``_deleted``) naming the article's id, title,
version, origin and scope, never its text (a saved reply's article: no title either, as the
saved reply's own events).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| the embedder is down while a text is prepared | the caller's (an import fails the file; a saved reply is stored with lexical passages only) | yes: nothing written | the next import / edit embeds it |
| an edit of a version someone else changed meanwhile | after reloading | yes: refused, nothing written | the caller shows the current version |
| the article was deleted meanwhile | no | yes: ``ArticleNotFoundError`` | - |
| killed or MariaDB lost mid-write | - | yes: one transaction, all or nothing | write again (same content: no new version) |
| empty title or text | after fixing it | yes: refused, nothing written | - |
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np

from ..core.errors import BadInputError, EmbeddingRejectedError, EmbeddingUnavailableError
from ..core.errors import DraftNotFoundError as _NotFound
from ..core.index_ports import Embedder
from ..core.rows import FromRow, set_field
from ..db import Database, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor
from . import passages as splitter

MAX_TITLE = 300
MAX_BODY = 1_000_000


class Origin(StrEnum):
    FILE = "file"  # imported by `email-rag knowledge import`
    WEB = "web"  # written or uploaded in the web admin
    SAVED_REPLY = "saved_reply"  # a saved reply, kept in sync (knowledge/saved_replies.py)
    CASE = "case"  # an approved knowledge candidate (knowledge/candidates.py)


class ArticleStatus(StrEnum):
    ACTIVE = "active"  # searchable
    DISABLED = "disabled"  # kept, not searchable (enable makes it searchable again)


class ArticleNotFoundError(_NotFound):
    """No knowledge article with this id (any more)."""


@dataclass(frozen=True)
class Article(FromRow):
    id: int
    mailbox_id: int | None
    origin: Origin
    status: ArticleStatus
    title: str
    language: str | None
    version: int
    content_hash: str
    body: str = ""
    file_hash: str | None = None
    source_key: str | None = None
    source_root: str | None = None
    created_by: str | None = None
    updated_by: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    passages: int | None = None  # in listings: how many passages the current version has

    def __post_init__(self) -> None:
        set_field(self, "origin", Origin(self.origin))
        set_field(self, "status", ArticleStatus(self.status))
        if self.passages is not None:
            set_field(self, "passages", int(self.passages))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "mailbox_id": self.mailbox_id, "origin": str(self.origin),
                "status": str(self.status), "title": self.title, "language": self.language,
                "version": self.version, "source": self.source_key, "passages": self.passages,
                "updated_by": self.updated_by,
                "updated_at": self.updated_at.isoformat() if self.updated_at else None}


@dataclass(frozen=True)
class Passage(FromRow):
    article_id: int
    version: int
    passage_no: int
    heading: str
    text: str
    embedder: str | None = None


@dataclass(frozen=True)
class Prepared:
    """An article's content ready to be stored: its passages and their vectors (None: the
    embedder was not asked or not reachable: found lexically only)."""

    title: str
    body: str
    language: str | None
    pieces: tuple[splitter.Piece, ...]
    vectors: tuple[bytes | None, ...]
    embedder: str | None

    @property
    def content_hash(self) -> str:
        return content_hash(self.title, self.body, self.language)


def content_hash(title: str, body: str, language: str | None) -> str:
    return hashlib.sha256(f"{title}\n{language or ''}\n{body}".encode()).hexdigest()


def to_blob(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


def checked(title: str, body: str) -> tuple[str, str]:
    title = " ".join((title or "").split())
    body = (body or "").replace("\r\n", "\n").strip()
    if not title or not body:
        raise BadInputError("A knowledge article needs a title and a text.")
    if len(title) > MAX_TITLE or len(body) > MAX_BODY:
        raise BadInputError(f"The title (at most {MAX_TITLE} characters) or the text (at most "
                            f"{MAX_BODY}) of the knowledge article is too long.")
    return title, body


class ArticleStore:
    """Articles and passages on ``db``; ``embedder`` embeds the passages (the product's)."""

    def __init__(self, db: Database, embedder: Embedder) -> None:
        self.db = db
        self.embedder = embedder

    # --- reading ---

    def get(self, article_id: int) -> Article:
        row = self.db.fetchone(sql("knowledge_article_get"), {"id": article_id})
        if row is None:
            raise ArticleNotFoundError(f"There is no knowledge article {article_id}.")
        return Article.from_row(row)

    def list(self, mailbox_id: int | None = None, every: bool = True,
             limit: int = 10_000) -> list[Article]:
        """All articles (``every``), else the global ones (``mailbox_id`` None) or a
        mailbox's own."""
        key = -1 if every else (mailbox_id or 0)
        return Article.from_rows(self.db.fetchall(sql("knowledge_articles_list"),
                                                  {"mailbox_key": key, "limit": limit}))

    def passages(self, article: Article) -> list[Passage]:
        return Passage.from_rows(self.db.fetchall(
            sql("knowledge_passages_of_article"),
            {"article_id": article.id, "version": article.version}))

    # --- preparing (outside a transaction: the embedder is an outside system) ---

    def prepare(self, title: str, body: str, language: str | None,
                embed: str = "required") -> Prepared:
        """The content split and embedded. ``embed``: ``required`` (the embedder's errors go
        to the caller), ``optional`` (an unreachable embedder leaves the passages without
        vectors, found lexically only)."""
        title, body = checked(title, body)
        pieces = tuple(splitter.split(body, title))
        if not pieces:
            raise BadInputError("The knowledge article has no text to search.")
        try:
            vectors = self.embedder.embed([f"{p.heading}\n{p.text}" for p in pieces])
        except (EmbeddingUnavailableError, EmbeddingRejectedError):
            if embed == "required":
                raise
            return Prepared(title, body, language, pieces, (None,) * len(pieces), None)
        return Prepared(title, body, language, pieces, tuple(to_blob(v) for v in vectors),
                        self.embedder.name)

    # --- writing (inside the caller's transaction: ``cur``) ---

    def create_in(self, cur: Cursor, prepared: Prepared, *, mailbox_id: int | None,
                  origin: Origin, actor: str, source_key: str | None = None,
                  source_root: str | None = None, file_hash: str | None = None) -> int:
        cur.execute(sql("knowledge_article_insert"), {
            "mailbox_id": mailbox_id, "origin": str(origin), "title": prepared.title,
            "language": prepared.language, "body": prepared.body,
            "content_hash": prepared.content_hash, "file_hash": file_hash,
            "source_key": source_key, "source_root": source_root, "by": actor})
        article_id = cur.lastrowid
        self._insert_passages(cur, article_id, 1, prepared)
        write_events(cur, [_event(actor, article_id, "knowledge_article_created", prepared.title,
                                  1, origin, mailbox_id)])
        return article_id

    def update_in(self, cur: Cursor, current: Article, prepared: Prepared, *, actor: str,
                  file_hash: str | None = None, source_root: str | None = None,
                  force: bool = False) -> bool:
        """The article with new content (a new version when the content changed, or
        ``force``: passages embedded now that had no vectors; True then). ``current``: the
        article as locked in this transaction."""
        root = source_root if source_root is not None else current.source_root
        fhash = file_hash if file_hash is not None else current.file_hash
        if prepared.content_hash == current.content_hash and not force:
            if (fhash, root) != (current.file_hash, current.source_root):
                cur.execute(sql("knowledge_article_file_hash"),
                            {"id": current.id, "file_hash": fhash, "source_root": root})
            return False
        version = current.version + 1
        cur.execute(sql("knowledge_passages_drop_others"),
                    {"article_id": current.id, "version": current.version})
        self._insert_passages(cur, current.id, version, prepared)
        if not cur.execute(sql("knowledge_article_new_version"), {
                "id": current.id, "version": version, "title": prepared.title,
                "language": prepared.language, "body": prepared.body,
                "content_hash": prepared.content_hash, "file_hash": fhash, "source_root": root,
                "by": actor}):
            raise BadInputError("Someone changed this knowledge article meanwhile; nothing "
                                "was saved. Reload it and edit the current version.")
        cur.execute(sql("knowledge_passages_drop_others"),
                    {"article_id": current.id, "version": version})
        write_events(cur, [_event(actor, current.id, "knowledge_article_updated",
                                  prepared.title, version, current.origin, current.mailbox_id)])
        return True

    def delete_in(self, cur: Cursor, article: Article, actor: str) -> None:
        cur.execute(sql("knowledge_article_delete"), {"id": article.id})
        write_events(cur, [_event(actor, article.id, "knowledge_article_deleted", article.title,
                                  article.version, article.origin, article.mailbox_id)])

    def lock(self, cur: Cursor, article_id: int) -> Article:
        row = cur.fetchone(sql("knowledge_article_lock"), {"id": article_id})
        if row is None:
            raise ArticleNotFoundError(f"There is no knowledge article {article_id}.")
        return Article.from_row(row)

    def by_source(self, cur: Cursor, mailbox_id: int | None, source_key: str) -> Article | None:
        row = cur.fetchone(sql("knowledge_article_by_source"),
                           {"mailbox_key": mailbox_id or 0, "source_key": source_key})
        return None if row is None else Article.from_row(row)

    # --- whole operations (one transaction each) ---

    def create(self, mailbox_id: int | None, origin: Origin, title: str, body: str, actor: str,
               language: str | None = None) -> int:
        """A new article written by a person (web, approved case)."""
        prepared = self.prepare(title, body, language, embed="optional")
        with self.db.transaction() as cur:
            return self.create_in(cur, prepared, mailbox_id=mailbox_id, origin=origin,
                                  actor=actor)

    def edit(self, article_id: int, version: int, title: str, body: str, actor: str,
             language: str | None = None) -> bool:
        """Change the article a person saw at ``version``; refused when it changed
        meanwhile. True when the content changed (a new version)."""
        prepared = self.prepare(title, body, language, embed="optional")
        with self.db.transaction() as cur:
            current = self.lock(cur, article_id)
            if current.version != version:
                raise BadInputError("Someone changed this knowledge article meanwhile; nothing "
                                    "was saved. Reload it and edit the current version.")
            return self.update_in(cur, current, prepared, actor=actor)

    def set_status(self, article_id: int, status: ArticleStatus, actor: str) -> bool:
        """Disable or enable an article; False when it already had that status."""
        status = ArticleStatus(status)
        with self.db.transaction() as cur:
            current = self.lock(cur, article_id)
            if current.status == status:
                return False
            cur.execute(sql("knowledge_article_set_status"),
                        {"id": article_id, "from": str(current.status), "to": str(status),
                         "by": actor})
            event = ("knowledge_article_disabled" if status == ArticleStatus.DISABLED
                     else "knowledge_article_enabled")
            write_events(cur, [_event(actor, article_id, event, current.title, current.version,
                                      current.origin, current.mailbox_id,
                                      from_state=str(current.status), to_state=str(status))])
        return True

    def delete(self, article_id: int, actor: str) -> None:
        with self.db.transaction() as cur:
            self.delete_in(cur, self.lock(cur, article_id), actor)

    def _insert_passages(self, cur: Cursor, article_id: int, version: int,
                         prepared: Prepared) -> None:
        cur.executemany(sql("knowledge_passages_insert"), [
            {"article_id": article_id, "version": version, "passage_no": n,
             "heading": p.heading, "body": p.text, "vector": vector,
             "embedder": prepared.embedder if vector is not None else None}
            for n, (p, vector) in enumerate(zip(prepared.pieces, prepared.vectors,
                                                strict=True), start=1)])


def _event(actor: str, article_id: int, event: str, title: str, version: int, origin: Origin,
           mailbox_id: int | None, **states: str) -> AuditEvent:
    """The audit event of a change: id, title, version, origin, scope. A saved reply's title
    stays out, as in the saved reply's own audit (review/answers.py: it may quote customers)."""
    detail: dict[str, str | int | None] = {"version": version, "origin": str(origin),
                                           "mailbox_id": mailbox_id}
    if origin != Origin.SAVED_REPLY:
        detail["title"] = title
    return AuditEvent(actor, "knowledge_article", article_id, event, **states, detail=detail)
