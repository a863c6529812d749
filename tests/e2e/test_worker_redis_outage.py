"""A worker rides out a Redis crash: started while Redis is down, and with Redis killed
(kill -9 of a private redis-server) and restarted empty under it, it keeps running and
processes what is enqueued afterwards. Before: RQ's loop raised ConnectionError outside its
dequeue, the worker exited 1 and, in the chaos run, restarted in a loop."""

from __future__ import annotations

import time

import pytest

from email_rag.testing.servers import PrivateRedis
from tests.e2e.test_vector_worker import enqueue, job_states, mails, venv, worker  # noqa: F401


@pytest.fixture
def redis_server():
    server = PrivateRedis().start()
    yield server
    server.stop()


def _wait_done(db, items, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(s["state"] == "done" for s in job_states(db, items)):
            return True
        time.sleep(0.3)
    return False


def test_a_worker_waits_out_a_redis_crash_and_works_on_after_the_restart(venv, db, redis_server):
    env = {**venv, "EMAIL_RAG_REDIS_URL": redis_server.url}
    redis_server.crash()  # down before the worker starts
    proc = worker("--with-vectors", extra_env=env)
    try:
        time.sleep(4)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        redis_server.restart()
        first = mails(db, 2)
        enqueue(env, first)
        assert _wait_done(db, first), job_states(db, first)

        redis_server.crash()  # under a running worker, then back empty
        time.sleep(3)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
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
