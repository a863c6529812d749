"""A local Qdrant folder whose SQLite storage another process holds locked (the chaos
harness's Qdrant outage): a write is StoreUnavailableError, so the indexer's store policy
makes the mail partially_indexed, and it works again once the lock is gone. The storage
keeps a write-ahead log: a writer killed with SIGKILL loses no committed point, and a
locked storage can still be read."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap

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


def test_a_store_opened_while_its_storage_is_locked_reads_its_points_and_refuses_writes(
        tmp_path):
    """GIVEN a local store holding a mail, closed WHEN another connection holds its storage
    EXCLUSIVE (the chaos harness's Qdrant outage) and the store is opened THEN it opens with
    the stored point (the write-ahead log lets readers in) and a write is unavailable."""
    store = QdrantStore(path=tmp_path / "q", collection="emails", dim=384)
    point = VectorPoint(1, 0, EMB.embed(["printer broken"])[0],
                        ChunkPayload(1, 1, 0, text="printer broken"))
    store.replace_mail(1, [point])
    store.close()
    lock = sqlite3.connect(str(tmp_path / "q" / "collection" / "emails" / "storage.sqlite"),
                           isolation_level=None)
    again = QdrantStore(path=tmp_path / "q", collection="emails", dim=384)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        again.open()
        assert again.count() == 1
        try:
            again.replace_mail(2, [VectorPoint(2, 0, point.vector, ChunkPayload(2, 1, 0))])
        except StoreUnavailableError as e:
            assert "locked" in str(e)
        else:
            raise AssertionError("a write into locked storage must be unavailable")
    finally:
        lock.close()
        again.close()


WRITER = textwrap.dedent("""
    import sys, time
    from email_rag.adapters.embeddings import HashingEmbedder
    from email_rag.adapters.vectors import QdrantStore
    from email_rag.core.index_ports import ChunkPayload, VectorPoint
    emb = HashingEmbedder(384)
    store = QdrantStore(path=sys.argv[1], collection="emails", dim=384)
    for n in range(1, 21):
        store.replace_mail(n, [VectorPoint(n, 0, emb.embed([f"mail {n}"])[0],
                                           ChunkPayload(n, 1, 0, text=f"mail {n}"))])
    print("written", flush=True)
    time.sleep(120)
""")


def test_storage_keeps_a_write_ahead_log_and_a_killed_writer_loses_no_point(tmp_path):
    """GIVEN a process that wrote 20 mails into a local store WHEN it is killed (SIGKILL,
    no close) THEN the storage is in WAL mode and a new owner finds all 20 mails; a reader
    of the locked file still reads."""
    path = tmp_path / "q"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        line = writer.stdout.readline()
        assert line.strip() == "written", writer.stderr.read() if writer.stderr else ""
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    storage = path / "collection" / "emails" / "storage.sqlite"
    probe = sqlite3.connect(str(storage))
    try:
        assert probe.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        probe.close()
    store = QdrantStore(path=path, collection="emails", dim=384)
    try:
        store.open()
        assert store.count() == 20
        assert [store.count(n) for n in (1, 20)] == [1, 1]
    finally:
        store.close()
