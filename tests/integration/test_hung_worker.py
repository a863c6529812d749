"""A worker that is alive but hung inside a step (real MariaDB and Redis, real job runner).

Its heartbeat thread keeps beating, so the stuck reset judged by the beat alone never
reset it; the step's own deadline says it is stuck. The entry is reset for another
worker, audited, and the hung worker's late result is refused by the claim fence."""

from __future__ import annotations

import threading
import time

import pytest

from email_rag.core.errors import DatabaseUnavailableError
from email_rag.core.states import Step
from email_rag.db.connection import Database
from email_rag.pipeline.contract import StepOutcome, StepSpec
from email_rag.runtime.job_runner import JobRunner, worker_settings
from email_rag.runtime.maintenance import cleanup_stuck
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job


def _state(db, job_id):
    return db.fetchone("SELECT state, worker FROM jobs WHERE id = %s", (job_id,))


def _wait(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.2)
    return cond()


def test_a_hung_but_alive_worker_is_reset_after_its_step_deadline_and_cannot_commit_late(
        settings, db):
    """GIVEN a worker stuck inside its parse step (the step never returns; the heartbeat
    thread still beats) with a 1 s step deadline WHEN the stuck cleanup runs THEN the
    entry is reset (audited with the step and its deadline), another worker finishes it,
    and the hung worker's late result writes nothing."""
    s = settings.model_copy(update={"step_deadline_seconds": 1, "stuck_after_seconds": 4})
    job_id = make_job(db, make_email(db))
    release, entered = threading.Event(), threading.Event()

    def hung(ctx):
        entered.set()
        release.wait(60)
        return StepOutcome(detail={"by": "late"})

    results: dict[str, str] = {}
    hung_svc = Services(s)

    def run_hung():
        results["hung"] = JobRunner(hung_svc, name="w-hung",
                                    pipeline=[StepSpec(Step.PARSE, hung)]).run(job_id)

    t = threading.Thread(target=run_hung, daemon=True)
    t.start()
    cleaner = Services(s)
    try:
        assert entered.wait(20)
        # the entry is older than stuck_after_seconds; its worker still beats
        db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 3600 SECOND WHERE id = %s",
                   (job_id,))
        reset = _wait(lambda: cleanup_stuck(cleaner), 12)
        assert [j.id for j in reset] == [job_id]
        row = _state(db, job_id)
        assert row["state"] in ("failed", "queued")
        [event] = db.fetchall("SELECT detail FROM audit_log WHERE entity_id = %s AND "
                              "event = 'stuck_reset'", (str(job_id),))
        assert "parse" in event["detail"] and "deadline" in event["detail"]

        release.set()  # the hung step returns now: its checkpoint must be refused
        t.join(20)
        assert results["hung"] == "lost"
        assert db.fetchall("SELECT step FROM email_steps") == []
        assert _state(db, job_id)["state"] != "done"

        db.execute("UPDATE jobs SET next_run_at = NOW(6) - INTERVAL 1 SECOND WHERE id = %s",
                   (job_id,))
        other = JobRunner(cleaner, name="w-other", pipeline=[
            StepSpec(Step.PARSE, lambda ctx: StepOutcome(detail={"by": "other"}))])
        assert other.run(job_id) == "done"
        steps = db.fetchall("SELECT step, detail FROM email_steps")
        assert [(r["step"], '"other"' in r["detail"]) for r in steps] == [("parse", True)]
    finally:
        release.set()
        t.join(20)
        hung_svc.close()
        cleaner.close()


def test_a_step_within_its_deadline_is_never_reset(settings, db):
    """The deadline counts per step: a step still inside it keeps its entry."""
    s = settings.model_copy(update={"step_deadline_seconds": 120, "stuck_after_seconds": 4})
    job_id = make_job(db, make_email(db))
    release, entered = threading.Event(), threading.Event()

    def slow(ctx):
        entered.set()
        release.wait(60)
        return StepOutcome()

    svc, cleaner = Services(s), Services(s)
    results: dict[str, str] = {}
    t = threading.Thread(target=lambda: results.setdefault("r", JobRunner(
        svc, name="w-slow", pipeline=[StepSpec(Step.PARSE, slow)]).run(job_id)), daemon=True)
    t.start()
    try:
        assert entered.wait(20)
        db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 3600 SECOND WHERE id = %s",
                   (job_id,))
        time.sleep(2.5)
        assert cleanup_stuck(cleaner) == []
        release.set()
        t.join(20)
        assert results["r"] == "done"
    finally:
        release.set()
        t.join(20)
        svc.close()
        cleaner.close()


def test_worker_connections_have_a_read_timeout_by_default(settings):
    """Workers get a MariaDB read timeout without configuration (derived: longer than the
    longest statement a healthy worker runs, a lock wait); an explicit value wins."""
    s = worker_settings(settings.model_copy(update={"db_read_timeout": 0}))
    assert s.db_read_timeout > 50  # InnoDB's lock wait (50 s) must not look like an outage
    assert worker_settings(settings.model_copy(update={"db_read_timeout": 7})).db_read_timeout == 7
    assert worker_settings(settings.model_copy(
        update={"db_read_timeout": 0, "worker_db_timeout_seconds": 9})).db_read_timeout == 9


def test_a_blackholed_mariadb_connection_fails_within_the_worker_read_timeout(settings):
    """GIVEN a worker's MariaDB connection through a proxy that stops forwarding without
    closing WHEN it reads THEN it gets DatabaseUnavailableError (reconnect and wait)
    within a bounded time instead of hanging forever."""
    from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

    proxy = TcpFaultProxy(settings.db_host, settings.db_port)
    s = worker_settings(settings.model_copy(update={
        "db_port": proxy.port, "db_read_timeout": 0, "worker_db_timeout_seconds": 2}))
    db = Database.from_settings(s)
    try:
        assert db.ping()
        proxy.silence()
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailableError):
            db.fetchone("SELECT 1 AS one")
        assert time.monotonic() - started < 10
    finally:
        proxy.speak()
        proxy.close()
        db.close()
