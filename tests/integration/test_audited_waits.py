"""Waits and failures of the processes that have no mail to hang them on are audited too
(issue 43): a worker's wait for Redis (start, and end with its duration) and a scheduler job
that failed."""

from __future__ import annotations

import json

import pytest
from email_rag_harness.testing.servers import PrivateRedis

from email_rag.core.errors import DatabaseUnavailableError
from email_rag.core.states import Actor
from email_rag.runtime.scheduler import guarded
from email_rag.wiring.services import Services
from tests.helpers import spawn, stop, wait_for


def events(db, event: str) -> list[dict]:
    return db.fetchall("SELECT * FROM audit_log WHERE event = %s ORDER BY id", (event,))


@pytest.fixture
def redis_server():
    server = PrivateRedis().start()
    yield server
    server.stop()


def test_a_worker_waiting_for_redis_audits_the_start_and_the_end_with_its_duration(
        env, db, redis_server, tmp_path):
    """GIVEN Redis down WHEN `email-rag worker --burst` starts THEN the audit log says the
    worker waits for Redis; once Redis is back the worker works (an empty queue: the burst
    ends, exit 0) and the audit log says how long it waited and how many tries it took. (A
    process of its own: a worker sets process-wide state, the vector store's ownership and
    RQ's signal handlers.)"""
    redis_server.crash()
    proc = spawn("worker", "--burst", "--name", "w-redis", log=tmp_path / "worker.log",
                 env_extra={"EMAIL_RAG_REDIS_URL": redis_server.url})
    try:
        try:  # not audited: restarted anyway, and the assertions below say what is missing
            wait_for(lambda: events(db, "redis_wait_started") or proc.poll() is not None, 90,
                     0.2, "the worker to audit its wait for Redis")
        finally:
            redis_server.restart()
        code = proc.wait(120)
    finally:
        stop(proc)
    assert code == 0, (tmp_path / "worker.log").read_text()[-2000:]
    [started] = events(db, "redis_wait_started")
    [ended] = events(db, "redis_wait_ended")
    assert (started["actor"], started["entity_type"], started["entity_id"]) == (
        Actor.WORKER, "worker", "w-redis")
    assert json.loads(started["detail"])["error"] in ("ConnectionError", "QueueUnavailableError")
    detail = json.loads(ended["detail"])
    assert ended["entity_id"] == "w-redis" and detail["worker"] == "w-redis"
    assert detail["tries"] >= 1 and detail["waited_s"] > 0


def test_a_scheduler_job_that_fails_is_audited_and_the_scheduler_goes_on(settings, db):
    """GIVEN a periodic job that raises WHEN its tick runs THEN the tick does not raise (the
    scheduler lives on) and the failure is in the audit log under the job's name; a
    MariaDB outage is audited as such (the event waits in the spool when it must)."""
    svc = Services(settings)

    def broken() -> None:
        raise ValueError("cleanup broke")

    def database_gone() -> None:
        raise DatabaseUnavailableError("MariaDB error 2003: can't connect")

    try:
        guarded("cleanup", svc, broken)()
        guarded("redispatch", svc, database_gone)()
    finally:
        svc.close()
    first, second = events(db, "periodic_job_failed")
    assert (first["actor"], first["entity_type"], first["entity_id"]) == (
        Actor.SCHEDULER, "system", "cleanup")
    assert json.loads(first["detail"]) == {"error": "cleanup broke"}
    assert second["entity_id"] == "redispatch"
    assert json.loads(second["detail"]) == {"error": "DatabaseUnavailableError",
                                            "retried": "next interval"}
