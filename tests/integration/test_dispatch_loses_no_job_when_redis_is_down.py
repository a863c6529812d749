"""Hand-off after commit and the outbox: Redis down or flushed loses no job."""

from __future__ import annotations

import pytest
import redis
from email_rag_harness.testing.mails import mail

from email_rag.core.errors import QueueUnavailableError
from email_rag.ingest.poller import Poller
from email_rag.jobs.dispatch import redispatch
from tests.integration.ingest_helpers import closed_port, events, jobs, services_for


@pytest.fixture
def up(settings, mailbox):
    svc = services_for(settings, mailbox)
    yield svc
    svc.close()


@pytest.fixture
def redis_down(settings, mailbox):
    svc = services_for(settings, mailbox, redis_url=f"redis://127.0.0.1:{closed_port()}/0")
    yield svc
    svc.close()


def test_redis_down_at_hand_off_leaves_rows_queued_and_redispatch_enqueues_them(
        up, redis_down, db, mailbox, redis_url):
    mailbox.append_many([mail(i) for i in range(1, 6)])
    redis_down.settings.imap_fetch_batch = 2
    result = Poller(redis_down).poll()
    assert result.mailboxes[0].status == "ok"
    assert (result.totals["new"], result.totals["enqueued"], result.totals["enqueue_failed"]) == (
        5, 0, 5)
    assert [(j["state"], j["enqueued_at"]) for j in jobs(db)] == [("queued", None)] * 5
    assert len(events(db, "enqueue_failed", "job")) == 5
    assert up.queue.depths(["email-rag"]) == {"email-rag": 0}
    # the scheduler's re-dispatch, with Redis back
    assert redispatch(up, grace_seconds=0) == 5
    assert up.queue.depths(["email-rag"]) == {"email-rag": 5}
    assert all(j["enqueued_at"] is not None for j in jobs(db))
    assert len(events(db, "redispatched", "job")) == 5
    assert redispatch(up, grace_seconds=0) == 0  # Redis holds them now: nothing twice
    # Redis loses everything (restart without persistence): the rows still say queued
    redis.Redis.from_url(redis_url).flushdb()
    assert redispatch(up, grace_seconds=0, batch_size=2) == 5
    assert up.queue.depths(["email-rag"]) == {"email-rag": 5}


def test_redispatch_picks_queued_and_due_failed_jobs_only(up, db, mailbox):
    mailbox.append_many([mail(i) for i in range(1, 7)])
    Poller(up).poll()
    redis.Redis.from_url(up.settings.redis_url).flushdb()
    ids = [j["id"] for j in jobs(db)]
    db.execute("UPDATE jobs SET state = 'done' WHERE id = ?", (ids[0],))
    db.execute("UPDATE jobs SET state = 'processing' WHERE id = ?", (ids[1],))
    db.execute("UPDATE jobs SET state = 'failed', next_run_at = NOW(6) + INTERVAL 1 HOUR "
               "WHERE id = ?", (ids[2],))
    db.execute("UPDATE jobs SET state = 'failed', next_run_at = NOW(6) - INTERVAL 1 SECOND "
               "WHERE id = ?", (ids[3],))
    db.execute("UPDATE jobs SET state = 'dead' WHERE id = ?", (ids[4],))
    assert redispatch(up, grace_seconds=0) == 2  # ids[3] (due retry) and ids[5] (queued)
    assert {int(e["entity_id"]) for e in events(db, "redispatched")} == {ids[3], ids[5]}
    assert up.queue.is_pending(ids[3]) and up.queue.is_pending(ids[5])
    assert not up.queue.is_pending(ids[0]) and not up.queue.is_pending(ids[2])


def test_redispatch_leaves_just_committed_rows_to_their_own_hand_off(up, redis_down, db, mailbox):
    mailbox.append(mail(1))
    Poller(redis_down).poll()
    assert redispatch(up) == 0  # default grace: the poller's hand-off may still be in flight
    assert redispatch(up, grace_seconds=0) == 1


def test_redispatch_with_redis_still_down_raises_and_changes_nothing(redis_down, db, mailbox):
    mailbox.append(mail(1))
    Poller(redis_down).poll()
    with pytest.raises(QueueUnavailableError):
        redispatch(redis_down, grace_seconds=0)
    assert [(j["state"], j["enqueued_at"]) for j in jobs(db)] == [("queued", None)]


def test_every_hand_off_with_redis_down_is_audited_the_same_way(redis_down, db, mailbox):
    """GIVEN Redis down WHEN the poller hands off new mail and the scheduler arms an index
    sync THEN each job left for re-dispatch has one enqueue_failed event of one shape
    (queue, error, what was tried, how it resumes; the mail when there is one)."""
    from email_rag.indexing import sync

    mailbox.append_many([mail(i) for i in range(1, 4)])
    redis_down.settings.imap_fetch_batch = 2
    Poller(redis_down).poll()
    armed = sync.arm(redis_down, "partial")
    assert armed["enqueued"] is False
    failed = events(db, "enqueue_failed", "job")
    assert sorted(int(e["entity_id"]) for e in failed) == sorted(
        [j["id"] for j in jobs(db) if j["kind"] == "process_email"] + [armed["job_id"]])
    import json

    shapes = {tuple(sorted(json.loads(e["detail"]))) for e in failed}
    assert shapes <= {("email_id", "error", "queue", "resume", "what"),
                      ("error", "queue", "resume", "what")}, shapes
    assert all(json.loads(e["detail"])["error"] for e in failed)


def test_one_path_creates_job_rows_in_batches_audited_and_keeps_existing_ones(db, monkeypatch):
    """GIVEN entries to create, one of them existing WHEN create_jobs runs with a small batch
    size THEN the new rows are created (several INSERTs), each audited once, and the
    existing row is neither returned nor touched."""
    from email_rag.core.states import JobKind
    from email_rag.jobs import rows, store
    from tests.factories import make_email, make_job

    mails = [make_email(db) for _ in range(5)]
    existing = make_job(db, mails[0], state="dead")
    monkeypatch.setattr(rows, "MAX_JOB_ROWS", 2)
    new = [store.NewJob(JobKind.PROCESS_EMAIL, m, "email-rag", email_id=m,
                        detail={"why": "test"}) for m in mails]
    with db.transaction() as cur:
        created = store.create_jobs(cur, new, actor="system:test", event="queued")
    assert [j.email_id for j in created] == mails[1:]
    assert all(j.state == "queued" and j.job_key == f"process_email:{j.email_id}"
               for j in created)
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (existing,))["state"] == "dead"
    audited = db.fetchall("SELECT entity_id, event, to_state FROM audit_log "
                          "WHERE entity_type = 'job' ORDER BY id")
    assert audited == [{"entity_id": str(j.id), "event": "queued", "to_state": "queued"}
                       for j in created]
