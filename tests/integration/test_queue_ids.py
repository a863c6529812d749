"""RQ job ids per (entry, queue): a hand-off enqueued while the entry's RQ job on the first
queue is still running survives that job's deletion when it finishes."""

from email_rag.adapters.queue import JobQueue, rq_job_id


def test_hand_off_survives_the_finished_job_on_the_first_queue(redis_url):
    q = JobQueue(redis_url)
    try:
        q.enqueue([("email-rag", 7)])
        assert q.is_pending(7, "email-rag") and q.is_pending(7)
        q.enqueue([("email-rag-vectors", 7)])  # the hand-off, while the first is "running"
        q.redis.delete(f"rq:job:{rq_job_id(7, 'email-rag')}")  # RQ deletes it when it finishes
        assert not q.is_pending(7, "email-rag")
        assert q.is_pending(7, "email-rag-vectors") and q.is_pending(7)
        assert q.queue("email-rag-vectors").count == 1
        assert not q.is_pending(8)
    finally:
        q.close()


def test_a_poll_request_is_enqueued_once_and_the_next_tick_waits_for_it(redis_url):
    """The scheduler's poll tick: one request in Redis, a second tick adds none; neither
    raises (a failing tick is audited as periodic_job_failed)."""
    from email_rag.adapters.queue import POLL_JOB_ID, enqueue_poll

    q = JobQueue(redis_url)
    try:
        assert enqueue_poll(q, "email-rag") is True
        assert enqueue_poll(q, "email-rag") is False
        assert q.queue("email-rag").job_ids == [POLL_JOB_ID]
    finally:
        q.close()
