"""A local Qdrant folder whose SQLite storage another process holds locked (the chaos
harness's Qdrant outage): a write is StoreUnavailableError, so the indexer's store policy
makes the mail partially_indexed, and it works again once the lock is gone."""

from __future__ import annotations

import sqlite3

from email_rag.adapters.embeddings import HashingEmbedder
from email_rag.adapters.vectors import QdrantStore
from email_rag.core.errors import StoreUnavailableError
from email_rag.core.index_ports import ChunkPayload, VectorPoint

EMB = HashingEmbedder(384)


def test_write_into_locked_storage_is_unavailable_then_works_again(tmp_path):
    """GIVEN a local store whose collection SQLite file another connection holds EXCLUSIVE
    WHEN a mail is written THEN StoreUnavailableError names the storage (not an unexpected
    sqlite3 error); WHEN the lock is released THEN the same write succeeds."""
    store = QdrantStore(path=tmp_path / "q", collection="emails", dim=384)
    store.open()
    point = VectorPoint(1, 0, EMB.embed(["printer broken"])[0],
                        ChunkPayload(1, 1, 0, text="printer broken"))
    lock = sqlite3.connect(str(tmp_path / "q" / "collection" / "emails" / "storage.sqlite"),
                           isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        try:
            store.replace_mail(1, [point])
        except StoreUnavailableError as e:
            assert "storage failed during upsert" in str(e) and "locked" in str(e)
        else:
            raise AssertionError("a write into locked storage must be unavailable")
        lock.execute("ROLLBACK")
        assert store.replace_mail(1, [point]) == 1
        assert store.count(1) == 1
    finally:
        lock.close()
        store.close()
