"""Saved replies as knowledge: each saved reply has an article (origin ``saved_reply``, the
reply's mailbox, natural key ``saved_reply:<id>``) kept in sync.

The desk's saved-reply store (review/answers.py) calls ``prepare`` before its transaction and
``upsert_in`` / ``delete_in`` inside it: the reply and its article change together. The text
is embedded when the embedder answers, else its passages are found by words only (a later
``sync_all`` or edit embeds them). ``sync_all`` brings every article in line with the saved
replies (idempotent: the replies written before this existed, or after a failed embed).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| embedder down at a save | no: lexical passages only | yes: the reply and its article saved | ``email-rag knowledge sync-saved-replies`` |
| MariaDB lost mid-save | the caller's | yes: reply and article in one transaction | save again |
"""

from __future__ import annotations

from ..core.index_ports import Embedder
from ..db import Database, sql
from ..db.connection import Cursor
from .articles import ArticleStore, Origin, Prepared
from .documents import language_of


def source_key(reply_id: int) -> str:
    return f"saved_reply:{reply_id}"


class SavedReplySync:
    def __init__(self, db: Database, embedder: Embedder) -> None:
        self.store = ArticleStore(db, embedder)

    def prepare(self, title: str, body: str) -> Prepared:
        return self.store.prepare(title, body, language_of(body), embed="optional")

    def upsert_in(self, cur: Cursor, reply_id: int, mailbox_id: int, prepared: Prepared,
                  actor: str) -> int:
        current = self.store.by_source(cur, mailbox_id, source_key(reply_id))
        if current is None:
            return self.store.create_in(cur, prepared, mailbox_id=mailbox_id,
                                        origin=Origin.SAVED_REPLY, actor=actor,
                                        source_key=source_key(reply_id))
        embedded_again = prepared.embedder is not None and any(
            p["embedder"] is None for p in cur.fetchall(
                sql("knowledge_passages_of_article"),
                {"article_id": current.id, "version": current.version}))
        self.store.update_in(cur, current, prepared, actor=actor, force=embedded_again)
        return current.id

    def delete_in(self, cur: Cursor, reply_id: int, mailbox_id: int, actor: str) -> None:
        current = self.store.by_source(cur, mailbox_id, source_key(reply_id))
        if current is not None:
            self.store.delete_in(cur, current, actor)

    def sync_all(self, actor: str) -> dict[str, int]:
        """Every saved reply's article written or updated, and the articles of deleted
        replies removed; the counts."""
        db = self.store.db
        replies = db.fetchall(sql("knowledge_saved_replies_all"), {})
        keys = set()
        synced = 0
        for r in replies:
            keys.add((int(r["mailbox_id"]), source_key(int(r["id"]))))
            prepared = self.prepare(str(r["title"]), str(r["body"]))
            with db.transaction() as cur:
                self.upsert_in(cur, int(r["id"]), int(r["mailbox_id"]), prepared, actor)
            synced += 1
        removed = 0
        for a in db.fetchall(sql("knowledge_saved_reply_articles"), {}):
            if (int(a["mailbox_id"]), str(a["source_key"])) not in keys:
                with db.transaction() as cur:
                    self.store.delete_in(cur, self.store.lock(cur, int(a["id"])), actor)
                removed += 1
        return {"synced": synced, "removed": removed}
