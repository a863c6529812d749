"""Call slots per LLM endpoint (Redis) and the time limits checked at start-up."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from email_rag.core.errors import ConfigError, LLMBusyError
from email_rag.core.settings import Settings
from email_rag.core.timing import JobHeartbeat, alive_jobs, check, problems, required_job_timeout
from email_rag.llm.slots import EndpointSlots

URL = "http://127.0.0.1:8089/v1"


@pytest.fixture
def r(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def test_second_caller_waits_for_the_slot_instead_of_timing_out(r):
    """GIVEN one slot per endpoint, held by a call that takes 0.5 s WHEN a second worker
    calls THEN it waits for the slot (not a timeout) and runs after the first finished."""
    a = EndpointSlots(r, URL, limit=1, lease=30, wait=10)
    b = EndpointSlots(r, URL, limit=1, lease=30, wait=10)
    order = []
    holding = threading.Event()

    def first():
        with a.slot():
            order.append("a-start")
            holding.set()
            time.sleep(0.5)
            order.append("a-end")

    t = threading.Thread(target=first)
    t.start()
    assert holding.wait(10), "the first caller never got the slot"
    with b.slot() as waited:
        order.append("b-start")
    t.join()
    assert order == ["a-start", "a-end", "b-start"] and waited > 0


def test_no_slot_within_the_wait_is_a_transient_busy_error(r):
    a = EndpointSlots(r, URL, limit=1, lease=30, wait=0.3)
    assert a.try_take("holder")
    with pytest.raises(LLMBusyError, match="stayed taken"), a.slot():
        pass


def test_a_crashed_holders_slot_frees_itself_after_its_lease(r):
    """GIVEN a worker SIGKILLed while holding the only slot (it never released) WHEN its
    lease has passed THEN the next caller gets the slot: a crash cannot leak a slot."""
    dead = EndpointSlots(r, URL, limit=1, lease=0.4, wait=5)
    assert dead.try_take("killed-worker")  # and never released
    alive = EndpointSlots(r, URL, limit=1, lease=30, wait=5)
    started = time.monotonic()
    with alive.slot():
        assert 0.2 < time.monotonic() - started < 3
    assert alive.holders() == 0


def test_slots_are_per_endpoint(r):
    a = EndpointSlots(r, URL, limit=1, lease=30, wait=0.2)
    b = EndpointSlots(r, "http://other:1/v1", limit=1, lease=30, wait=0.2)
    with a.slot(), b.slot():
        pass


def test_default_time_limits_fit_and_the_job_timeout_is_derived():
    s = Settings()
    assert problems(s) == []
    assert s.job_timeout == required_job_timeout(s) >= 2 * 4 * (s.llm_timeout + s.slot_wait)


def test_a_job_timeout_that_would_kill_healthy_jobs_is_refused_at_start_up():
    """The measured misconfiguration: a 300 s LLM timeout with job_timeout 900 s."""
    s = Settings(llm_timeout=300, job_timeout_seconds=900)
    with pytest.raises(ConfigError, match="shorter than a healthy job may take"):
        check(s)


def test_a_running_jobs_heartbeat_keeps_it_from_the_stuck_reset(r):
    with JobHeartbeat(r, 42, stuck_after=2, worker="w1"):
        assert alive_jobs(r, [(42, "w1"), (43, "w1")], within=2) == {42}
        assert alive_jobs(r, [(42, "w1")], within=0) == set()  # an operator's "reset now"
        assert alive_jobs(r, [(42, "w2")], within=2) == set()  # another claim's beat
    assert alive_jobs(r, [(42, "w1")], within=2) == set()


def test_stuck_cleanup_resets_a_dead_job_but_never_one_whose_worker_beats(settings, db):
    """GIVEN two jobs processing for longer than stuck_after_seconds, one whose worker still
    beats (a long CPU LLM call) and one whose worker died WHEN the cleanup runs THEN only
    the dead one is reset: a healthy job is never reset, however long it runs."""
    from email_rag.core.retry import RetryPolicy
    from email_rag.jobs.store import JobStore
    from email_rag.runtime.maintenance import cleanup_stuck
    from email_rag.wiring.services import Services
    from tests.factories import make_email, make_job

    store = JobStore(db, RetryPolicy())
    busy, dead = (make_job(db, make_email(db)) for _ in range(2))
    assert store.claim(busy, "w-busy") and store.claim(dead, "w-dead")
    db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 3600 SECOND")
    svc = Services(settings)
    try:
        with JobHeartbeat(svc.coordination, busy, settings.stuck_after_seconds, "w-busy"):
            reset = cleanup_stuck(svc)
    finally:
        svc.close()
    assert [j.id for j in reset] == [dead]
    states = {r["id"]: r["state"] for r in db.fetchall("SELECT id, state FROM jobs")}
    assert states == {busy: "processing", dead: "failed"}


def test_the_beater_keeps_beating_a_long_job_marks_its_overdue_step_and_never_beats_after_it(r):
    """GIVEN two jobs of one process running at once, one inside a step past its deadline
    THEN the process's beater thread rewrites both keys on their schedule (the overdue one
    as ``overdue``, not alive for the stuck reset); once a job ends its key is gone and no
    later beat brings it back."""
    from email_rag.core.timing import OVERDUE, heartbeat_key, step_deadline

    def value(job: int) -> str:
        got = r.get(heartbeat_key(job, "w1"))
        return got.decode() if got is not None else ""

    with JobHeartbeat(r, 7, stuck_after=2, worker="w1") as long_job:
        first = value(7)
        with JobHeartbeat(r, 8, stuck_after=2, worker="w1"), step_deadline("draft", 0.05):
            deadline = time.monotonic() + 30
            while not value(8).startswith(OVERDUE) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert value(8).startswith(f"{OVERDUE} step draft")
            assert alive_jobs(r, [(8, "w1")], within=30) == set()
        assert value(8) == ""
        while value(7) == first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert value(7) != first and alive_jobs(r, [(7, "w1")], within=30) == {7}
        long_job.beat()  # a beat racing the end of the other job changes nothing for it
    assert value(7) == ""
    time.sleep(long_job.every * 2)
    assert value(7) == "" and value(8) == ""
