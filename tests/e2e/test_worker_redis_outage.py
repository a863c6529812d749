"""A worker rides out a Redis crash: started while Redis is down, and with Redis killed
(kill -9 of a private redis-server) and restarted empty under it, it keeps running and
processes what is enqueued afterwards. Before: RQ's loop raised ConnectionError outside its
dequeue, the worker exited 1 and, in the chaos run, restarted in a loop."""

from __future__ import annotations

import time

import pytest
from email_rag_harness.testing.servers import PrivateRedis

from tests.e2e.test_vector_worker import enqueue, job_states, mails, venv  # noqa: F401
from tests.helpers import spawn, wait_for

# what the worker says when it finds Redis gone: our loop (Redis down at start / RQ's work()
# raised) or RQ's dequeue loop (a connection lost under a waiting worker)
OUTAGE_LINES = ("Redis unreachable", "could not connect to Redis")


def _outages_seen(log) -> int:
    text = log.read_text(errors="replace") if log.exists() else ""
    return sum(text.count(line) for line in OUTAGE_LINES)


@pytest.fixture
def redis_server():
    server = PrivateRedis().start()
    yield server
    server.stop()


def _wait_done(db, items, timeout=180.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(s["state"] == "done" for s in job_states(db, items)):
            return True
        time.sleep(0.3)
    return False


def test_a_worker_waits_out_a_redis_crash_and_works_on_after_the_restart(venv, db, redis_server,
                                                                          tmp_path):
    env = {**venv, "EMAIL_RAG_REDIS_URL": redis_server.url}
    log = tmp_path / "worker.log"
    redis_server.crash()  # down before the worker starts
    proc = spawn("worker", "--with-vectors", env_extra=env, log=log)
    try:
        # the worker met the outage (not merely: has not started yet) and is still there
        wait_for(lambda: _outages_seen(log) or proc.poll() is not None, 120,
                 what="the worker to find Redis down")
        assert proc.poll() is None, log.read_text()[-2000:]
        redis_server.restart()
        first = mails(db, 2)
        enqueue(env, first)
        assert _wait_done(db, first), job_states(db, first)

        seen = _outages_seen(log)
        redis_server.crash()  # under a running worker, then back empty
        wait_for(lambda: _outages_seen(log) > seen or proc.poll() is not None, 120,
                 what="the worker to find Redis gone")
        assert proc.poll() is None, log.read_text()[-2000:]
        redis_server.restart()
        second = mails(db, 2)
        enqueue(env, second)
        assert _wait_done(db, second), job_states(db, second)
        assert proc.poll() is None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except Exception:  # noqa: BLE001
            proc.kill()
