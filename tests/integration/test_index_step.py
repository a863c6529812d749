"""The index step and the periodic sync against real MariaDB, real Redis and Qdrant's
local mode; stores that are down for real (closed port, a server that hangs, a folder
held by another client). The graph store's failure path runs against real sockets."""

from __future__ import annotations

import time

import pytest
from email_rag_harness.testing.hang import HangingServer, closed_port

from email_rag.adapters.vectors import QdrantStore
from email_rag.core.states import Step
from email_rag.db.audit import events_for
from email_rag.indexing import sync as index_sync
from email_rag.pipeline import index, retrieve
from email_rag.pipeline.contract import StepSpec
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job
from tests.index_helpers import index_row

VQ = "email-rag-vectors"
PIPELINE = [StepSpec(Step.INDEX, index.run, needs_vectors=True),
            StepSpec(Step.RETRIEVE, retrieve.run, needs_vectors=True)]
LONG = "\n\n".join(f"Paragraph {i}: the printer in room {i} shows error E{i} after the update."
                   for i in range(12))


@pytest.fixture
def services(settings):
    settings.store_backoff = 0.01
    settings.chunk_chars = 300
    settings.chunk_overlap = 50
    svc = Services(settings)
    yield svc
    svc.close()


def run_mail(services, db, **cols) -> tuple[int, int]:
    from email_rag.pipeline.runner import queues

    email = make_email(db, **cols)
    job = make_job(db, email, queue=queues(services.settings)[1])
    assert JobRunner(services, "w-vec", PIPELINE).run(job) == "done"
    return email, job


def step_detail(db, email, step="index"):
    import json

    row = db.fetchone("SELECT detail FROM email_steps WHERE email_id = %s AND step = %s",
                      (email, step))
    return json.loads(row["detail"]) if row else None


def events(db, email, name=None):
    evs = events_for(db, "email", email)
    return [e for e in evs if name is None or e["event"] == name]


def test_index_step_writes_every_chunk_and_marks_the_mail_complete(services, db):
    email, _ = run_mail(services, db, body=LONG)
    detail = step_detail(db, email)
    assert detail["chunks"] > 2 and detail["stores"]["vectors"]["points"] == detail["chunks"]
    assert detail["stores"]["graph"]["state"] == "off"
    assert detail["embedder"] == "hashing-no-semantics"
    assert index_row(db, email) == {"index_status": "complete", "index_missing": None}
    assert services.vectors.count(email) == detail["chunks"]
    [ev] = events(db, email, "indexed")
    assert (ev["from_state"], ev["to_state"]) == ("pending", "complete")
    assert step_detail(db, email, "retrieve")["reduced"] is False


def test_indexing_twice_leaves_the_same_number_of_points(services, db):
    email, _ = run_mail(services, db, body=LONG)
    first = services.vectors.count()
    report = index_sync.sync(services, f"email:{email}")
    assert report.reindexed == [email]
    report = index_sync.sync(services, "all")
    assert report.reindexed == [email]
    assert services.vectors.count() == first == services.vectors.count(email)
    assert [e["event"] for e in events(db, email, "reindexed")] == ["reindexed", "reindexed"]


def test_mail_without_text_is_skipped(services, db):
    email, _ = run_mail(services, db, subject=None, body=None)
    assert index_row(db, email)["index_status"] == "skipped"
    assert services.vectors.count(email) == 0


def _assert_partially_indexed(db, email, missing: str, error_part: str, tries: int = 3):
    assert index_row(db, email) == {"index_status": "partially_indexed", "index_missing": missing}
    [ev] = events(db, email, "partially_indexed")
    assert ev["to_state"] == "partially_indexed" and error_part in ev["detail"]
    stores = missing.split(",")
    failed = [e for e in events(db, email, "store_try_failed") if '"retrieval"' not in e["detail"]]
    assert len(failed) == tries * len(stores)
    # the step is confirmed and processing went on: the retrieve step ran with reduced context
    assert step_detail(db, email) is not None
    r = step_detail(db, email, "retrieve")
    assert r is not None
    return r


def test_qdrant_refusing_connections_gives_partially_indexed_and_the_sync_repairs_it(
        services, db):
    """GIVEN Qdrant at a closed port WHEN a mail is indexed THEN after 3 tries it is
    partially_indexed (vectors), audited, retrieval continues reduced; WHEN the store is back
    (the local folder) THEN the sync re-indexes it to complete, audited `reindexed`."""
    services.settings.qdrant_url = f"http://127.0.0.1:{closed_port()}"
    email, job = run_mail(services, db, body=LONG, thread_key="t-1")
    other = make_email(db, subject="Earlier in thread", thread_key="t-1")
    retrieval = _assert_partially_indexed(db, email, "vectors", "unreachable")
    assert retrieval["reduced"] is True and retrieval["missing"] == ["vectors"]
    assert events(db, email, "retrieval_reduced")
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "done"

    # still down: the sync tries once per store and run, the mail stays as it is
    report = index_sync.sync(services)
    assert report.still_missing == {email: ["vectors"]} and report.reindexed == []
    assert events(db, email, "reindex_failed")

    services.settings.qdrant_url = ""  # the store is back: the local folder
    services.reset()
    report = index_sync.sync(services)
    assert report.reindexed == [email] and other not in report.reindexed
    assert index_row(db, email) == {"index_status": "complete", "index_missing": None}
    [ev] = events(db, email, "reindexed")
    assert (ev["from_state"], ev["to_state"]) == ("partially_indexed", "complete")
    assert services.vectors.count(email) == step_detail(db, email)["chunks"]
    run = [e for e in events_for(db, "system", "index_sync") if e["event"] == "index_sync_run"]
    assert len(run) == 2


def test_qdrant_that_hangs_gives_partially_indexed_within_the_timeouts(services, db):
    services.settings.retrieve_limit = 1
    with HangingServer() as hang:
        services.settings.qdrant_url = hang.url
        services.settings.qdrant_timeout = 1
        started = time.monotonic()
        email, _ = run_mail(services, db, body="Short text")
        elapsed = time.monotonic() - started
        assert hang.connections >= 3
    _assert_partially_indexed(db, email, "vectors", "timed out")
    # 3 tries x 1 s for the index step, the same for retrieval, plus the pipeline's own work
    # (9-11 s measured under two CPU hogs); Qdrant's default 10 s timeout would take >= 30 s
    assert elapsed < 25, elapsed
    services.settings.qdrant_url = ""
    services.reset()
    assert index_sync.sync(services).reindexed == [email]


def test_local_folder_held_by_another_client_gives_partially_indexed_not_corruption(
        services, db, settings):
    holder = QdrantStore.from_settings(settings)
    holder.open()
    try:
        email, _ = run_mail(services, db)
        _assert_partially_indexed(db, email, "vectors", "held by pid")
        assert holder.count() == 0  # nothing written by the refused opener
    finally:
        holder.close()
    services.reset()
    assert index_sync.sync(services).reindexed == [email]
    assert services.vectors.count(email) == 1


def test_embeddings_endpoint_down_counts_as_the_vector_store_missing(services, db):
    services.settings.embedding_backend = "openai"
    services.settings.embedding_base_url = f"http://127.0.0.1:{closed_port()}/v1"
    services.settings.embedding_timeout = 0.5
    email, _ = run_mail(services, db)
    _assert_partially_indexed(db, email, "vectors", "EmbeddingUnavailableError")


def test_arangodb_refusing_connections_gives_graph_missing(services, db):
    services.settings.arango_url = f"http://127.0.0.1:{closed_port()}"
    services.settings.arango_timeout = 0.5
    email, _ = run_mail(services, db)
    _assert_partially_indexed(db, email, "graph", "unreachable")
    assert services.vectors.count(email) == 1  # the vector store was written all the same
    r = step_detail(db, email, "retrieve")
    assert r["sender_history_source"] == "mariadb" and r["missing"] == ["graph"]


def test_arangodb_that_hangs_times_out_and_sync_completes_once_the_graph_is_off(services, db):
    with HangingServer() as hang:
        services.settings.arango_url = hang.url
        services.settings.arango_timeout = 0.3
        started = time.monotonic()
        email, _ = run_mail(services, db)
        elapsed = time.monotonic() - started
        # python-arango reports a read timeout of a GET as "Can't connect to host(s)"
        _assert_partially_indexed(db, email, "graph", "unreachable")
        # >= 3 tries x 0.3 s plus the pipeline's own work (3.7 s measured under two CPU hogs);
        # ArangoDB's default 5 s timeout would take >= 15 s
        assert hang.connections >= 3 and 3 * 0.3 <= elapsed < 12, elapsed
        report = index_sync.sync(services)  # still hanging: stays partially_indexed
        assert report.still_missing == {email: ["graph"]}
    # an operator turns the graph store off: nothing is missing any more
    services.settings.arango_url = ""
    services.reset()
    assert index_sync.sync(services).reindexed == [email]
    assert index_row(db, email)["index_status"] == "complete"


def test_both_stores_down_are_both_named(services, db):
    services.settings.qdrant_url = f"http://127.0.0.1:{closed_port()}"
    services.settings.arango_url = f"http://127.0.0.1:{closed_port()}"
    services.settings.arango_timeout = 0.3
    email, _ = run_mail(services, db)
    _assert_partially_indexed(db, email, "vectors,graph", "unreachable")


def test_one_outage_costs_tries_once_per_sync_run_not_per_mail(services, db):
    services.settings.qdrant_url = f"http://127.0.0.1:{closed_port()}"
    mails = [run_mail(services, db, subject=f"Mail {i}")[0] for i in range(3)]
    before = len(events_for(db, "email", mails[2]))
    report = index_sync.sync(services)
    assert set(report.still_missing) == set(mails) and report.unchanged == 2
    assert len(events_for(db, "email", mails[2])) == before  # not tried again, nothing written


# --- the sync as a queue entry for the vector worker ---

def test_schedule_arms_one_coalesced_sync_entry_on_the_vector_queue_without_opening_a_store(
        settings, db, services):
    """GIVEN local Qdrant mode WHEN the scheduler's periodic job runs THEN it arms one
    index_sync entry on the vector queue (coalesced while pending) and opens no store;
    the vector worker runs it and the mail is complete."""
    scheduler = Services(settings)  # same settings object: local mode for both
    try:
        assert index_sync.schedule(scheduler) == {}  # nothing partially indexed: no entry
        settings.arango_url = f"http://127.0.0.1:{closed_port()}"
        settings.arango_timeout = 0.3
        email, _ = run_mail(services, db)
        assert index_row(db, email)["index_status"] == "partially_indexed"
        first = index_sync.schedule(scheduler)
        assert first["armed"] and first["queue"] == VQ and first["partially_indexed"] == 1
        again = index_sync.schedule(scheduler)
        assert again["job_id"] == first["job_id"] and not again["armed"]  # coalesced
        assert scheduler.queue.queue(VQ).count >= 1
        assert "vectors" not in vars(scheduler) and "embedder" not in vars(scheduler)

        settings.arango_url = ""  # the graph store is switched off: nothing missing any more
        services.reset()
        assert JobRunner(services, "w-vec", PIPELINE).run(first["job_id"]) == "done"
        assert index_row(db, email)["index_status"] == "complete"
        job_events = [e["event"] for e in events_for(db, "job", first["job_id"])]
        assert job_events.count("reindex_scheduled") == 1
        # done: a new partially_indexed mail re-arms the same entry
        settings.arango_url = f"http://127.0.0.1:{closed_port()}"
        services.reset()
        run_mail(services, db, subject="Later")
        rearmed = index_sync.schedule(scheduler)
        assert rearmed["armed"] is True and rearmed["job_id"] == first["job_id"]
        assert "vectors" not in vars(scheduler)
    finally:
        scheduler.close()


def test_sync_entry_on_the_default_queue_is_handed_to_the_vector_queue(services, db):
    info = index_sync.arm(services, "partial")
    db.execute("UPDATE jobs SET queue = 'email-rag' WHERE id = %s", (info["job_id"],))
    assert JobRunner(services, "w-any", PIPELINE).run(info["job_id"]) == "handed_off"
    assert db.fetchone("SELECT queue FROM jobs WHERE id = %s", (info["job_id"],))["queue"] == VQ


def test_scheduler_has_the_reindex_job_at_the_configured_interval(services):
    from email_rag.runtime.scheduler import periodic_jobs

    services.settings.reindex_interval_seconds = 42
    jobs = {name: seconds for name, seconds, _ in periodic_jobs(services)}
    assert jobs["reindex_partial"] == 42


def test_a_changed_embedder_is_refused_by_the_old_collection_and_reindex_all_fills_a_new_one(
        services, db):
    """GIVEN mail indexed with one embedder (hashing, 384 dims) WHEN the workers restart with
    the multilingual USE (512 dims) THEN the old collection refuses it with both names and
    the way out (the mail is partially_indexed, the points untouched, retrieval still finds
    by words); WHEN a new collection is set and the sync re-indexes all THEN every mail is
    complete there, with USE vectors only."""
    first, _ = run_mail(services, db, subject="Printer error", body=LONG)
    before = services.vectors.count()
    assert services.vectors.count(first) > 0
    settings = services.settings
    services.close()  # a restart with the new embedder
    settings.embedding_backend, settings.embedding_local_model = "local", "use"
    svc = Services(settings)
    try:
        second, _ = run_mail(svc, db, subject="Printer error again", body=LONG)
        retrieval = _assert_partially_indexed(db, second, "vectors",
                                              "made by hashing-no-semantics", tries=1)
        error = step_detail(db, second)["stores"]["vectors"]["error"]
        assert "local:use-multilingual-v3-512" in error and "reindex --all" in error
        assert retrieval["missing"] == ["vectors"]
        assert retrieval["stores"]["lexical"]["state"] == "ok"
    finally:
        svc.close()
    settings.embedding_backend = "hashing"
    old = Services(settings)
    try:
        assert old.vectors.count() == before  # the old collection was left as it was
    finally:
        old.close()
    settings.embedding_backend, settings.qdrant_collection = "local", "emails_use"
    new = Services(settings)
    try:
        report = index_sync.sync(new, "all")
        assert second in report.reindexed and report.ok
        assert {index_row(db, e)["index_status"] for e in (first, second)} == {"complete"}
        hits = new.vectors.search(new.embedder.embed([LONG])[0], limit=50)
        assert {h.email_id for h in hits} == {first, second}
        assert {h.payload.embedder for h in hits} == {"local:use-multilingual-v3-512"}
    finally:
        new.close()


def test_points_of_another_embedder_are_never_written(tmp_path):
    """A store opened for one embedder refuses points whose payload names another (an
    embedder changed inside a running process): nothing is written."""
    from email_rag.core.errors import StoreRejectedError
    from email_rag.core.index_ports import ChunkPayload, VectorPoint

    store = QdrantStore(path=tmp_path / "q", dim=4, embedder="local:use-multilingual-v3-512")
    try:
        with pytest.raises(StoreRejectedError, match="made by hashing-no-semantics"):
            store.replace_mail(1, [VectorPoint(1, 0, [1.0, 0, 0, 0], ChunkPayload(
                1, 1, 0, embedder="hashing-no-semantics"))])
        assert store.count() == 0
        store.replace_mail(1, [VectorPoint(1, 0, [1.0, 0, 0, 0], ChunkPayload(
            1, 1, 0, embedder="local:use-multilingual-v3-512"))])
        assert store.count() == 1
    finally:
        store.close()
