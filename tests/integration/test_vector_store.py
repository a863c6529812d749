"""The Qdrant adapter for real: embedded local mode in a temp folder, and a server URL
that refuses or hangs. Also the OpenAI-compatible embeddings backend over HTTP."""

from __future__ import annotations

import os
import time

import pytest
from email_rag_harness.testing.hang import HangingServer, closed_port

from email_rag.adapters.embeddings import HashingEmbedder, OpenAIEmbedder
from email_rag.adapters.vectors import QdrantStore, holder
from email_rag.core.errors import (
    EmbeddingRejectedError,
    EmbeddingUnavailableError,
    StoreLockedError,
    StoreRejectedError,
    StoreUnavailableError,
)
from email_rag.core.index_ports import ChunkPayload, VectorPoint
from tests.index_helpers import EmbeddingsServer

EMB = HashingEmbedder(384)


def points(email_id: int, texts: list[str], mailbox_id: int = 1) -> list[VectorPoint]:
    return [VectorPoint(email_id, i, v, ChunkPayload(email_id, mailbox_id, i, text=t))
            for i, (t, v) in enumerate(zip(texts, EMB.embed(texts), strict=True))]


@pytest.fixture
def store(tmp_path):
    s = QdrantStore(path=tmp_path / "qdrant", collection="emails", dim=384)
    yield s
    s.close()


def test_reindexing_overwrites_points_and_drops_stale_chunks(store):
    """GIVEN a mail indexed with 3 chunks WHEN indexed again (same and then shorter text)
    THEN the point count stays 3, then drops to 1: never a duplicate, never a stale chunk."""
    store.replace_mail(1, points(1, ["a b c", "d e f", "g h i"]))
    store.replace_mail(2, points(2, ["other mail"]))
    assert store.count(1) == 3 and store.count() == 4
    store.replace_mail(1, points(1, ["a b c", "d e f", "g h i"]))
    assert store.count(1) == 3 and store.count() == 4
    store.replace_mail(1, points(1, ["a b c"]))
    assert store.count(1) == 1 and store.count() == 2


def test_search_filters_by_mailbox_and_excludes_the_mail_itself(store):
    store.replace_mail(1, points(1, ["printer does not print"], mailbox_id=1))
    store.replace_mail(2, points(2, ["printer does not print"], mailbox_id=2))
    store.replace_mail(3, points(3, ["invoice address wrong"], mailbox_id=1))
    query = EMB.embed(["printer does not print"])[0]
    hits = store.search(query, mailbox_id=1, limit=5)
    assert [h.email_id for h in hits][:1] == [1] and {h.email_id for h in hits} == {1, 3}
    assert hits[0].score > 0.99
    assert 1 not in {h.email_id for h in store.search(query, mailbox_id=1, exclude_email_id=1)}


def test_local_folder_survives_reopening(tmp_path):
    a = QdrantStore(path=tmp_path / "q", dim=384)
    a.replace_mail(5, points(5, ["kept on disk"]))
    a.close()
    b = QdrantStore(path=tmp_path / "q", dim=384)
    try:
        assert b.count(5) == 1
    finally:
        b.close()


def test_second_opener_of_a_local_folder_gets_a_clear_error_and_changes_nothing(store, tmp_path):
    """GIVEN one client holding the local folder WHEN a second one opens it THEN Qdrant's
    RuntimeError becomes StoreLockedError naming the holder; the holder's data is intact."""
    store.replace_mail(1, points(1, ["first", "second"]))
    info = holder(store.path)
    assert info["pid"] == os.getpid() and info["alive"] is True
    other = QdrantStore(path=store.path, dim=384)
    with pytest.raises(StoreLockedError) as err:
        other.replace_mail(2, points(2, ["must not land"]))
    assert isinstance(err.value, StoreUnavailableError)
    assert f"pid {os.getpid()}" in str(err.value) and "only one process" in str(err.value)
    assert isinstance(err.value.__cause__, RuntimeError)
    assert "already accessed" in str(err.value.__cause__)
    other.close()
    assert store.count() == 2  # untouched, and still writable
    store.replace_mail(3, points(3, ["third"]))
    assert store.count() == 3


def test_collection_with_another_vector_size_is_refused(tmp_path):
    small = QdrantStore(path=tmp_path / "q", dim=8)
    small.open()
    small.close()
    big = QdrantStore(path=tmp_path / "q", dim=384)
    try:
        with pytest.raises(StoreRejectedError, match="size 8"):
            big.open()
    finally:
        big.close()


def test_server_url_with_closed_port_is_unavailable():
    s = QdrantStore(url=f"http://127.0.0.1:{closed_port()}", timeout=1)
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError, match="unreachable"):
        s.replace_mail(1, points(1, ["x"]))
    assert time.monotonic() - started < 8  # no wait (took 3.4 s once under two CPU hogs)
    s.close()


def test_server_that_hangs_times_out_as_unavailable():
    with HangingServer() as hang:
        s = QdrantStore(url=hang.url, timeout=1)
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="timed out"):
            s.search(EMB.embed(["x"])[0])
        # the 1 s timeout, not the default 10 s (2.6 s measured under two CPU hogs)
        assert 0.9 < time.monotonic() - started < 8
        assert hang.connections >= 1
        s.close()


# --- the 'openai' embeddings backend over real HTTP ---

@pytest.fixture
def embed_server():
    srv = EmbeddingsServer(dim=384)
    yield srv
    srv.close()


def test_openai_backend_embeds_in_batches_in_order(embed_server):
    emb = OpenAIEmbedder(embed_server.base_url, "k", "all-MiniLM-L6-v2", 384, timeout=2, batch=2)
    texts = ["one", "two", "three"]
    assert emb.embed(texts) == EMB.embed(texts)
    assert [len(r["input"]) for r in embed_server.requests] == [2, 1]
    assert embed_server.requests[0]["encoding_format"] == "float"
    assert emb.name == "openai:all-MiniLM-L6-v2"
    emb.close()


@pytest.mark.parametrize("mode, error", [
    ("status:503", EmbeddingUnavailableError), ("status:429", EmbeddingUnavailableError),
    ("status:401", EmbeddingRejectedError), ("dim:12", EmbeddingRejectedError),
    ("hang", EmbeddingUnavailableError), ("garbage", EmbeddingUnavailableError)])
def test_openai_backend_failures_are_classified(embed_server, mode, error):
    embed_server.mode = mode
    emb = OpenAIEmbedder(embed_server.base_url, "k", "m", 384, timeout=0.5)
    with pytest.raises(error):
        emb.embed(["x"])
    emb.close()


def test_openai_backend_unreachable_is_unavailable():
    emb = OpenAIEmbedder(f"http://127.0.0.1:{closed_port()}/v1", "k", "m", 384, timeout=0.5)
    with pytest.raises(EmbeddingUnavailableError, match="unreachable"):
        emb.embed(["x"])
    emb.close()


def test_a_collection_written_by_another_embedder_is_refused_and_left_as_it_was(tmp_path):
    """GIVEN a collection whose points were made by one embedder WHEN a process that embeds
    with another one (same size) opens it THEN it is refused with the reindex path named,
    and the points are untouched: vectors of two embedders are never mixed."""
    old = QdrantStore(path=tmp_path / "q", dim=384, embedder="local:wordllama-l2-supercat-256")
    old.replace_mail(1, [VectorPoint(1, 0, EMB.embed(["a"])[0],
                                     ChunkPayload(1, 1, 0, embedder=old.embedder, text="a"))])
    old.close()
    new = QdrantStore(path=tmp_path / "q", dim=384, embedder="local:use-multilingual-v3-512")
    try:
        with pytest.raises(StoreRejectedError, match="made by local:wordllama") as e:
            new.open()
        assert "reindex --all" in str(e.value) and "QDRANT_COLLECTION" in str(e.value)
    finally:
        new.close()
    again = QdrantStore(path=tmp_path / "q", dim=384, embedder="local:wordllama-l2-supercat-256")
    try:
        assert again.count() == 1
    finally:
        again.close()
