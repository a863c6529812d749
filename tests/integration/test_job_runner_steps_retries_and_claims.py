"""The job runner against real MariaDB and Redis, with scripted steps.

The steps here are test steps (the real parse/classify/index/draft steps have
their own tests); what is under test is the worker: claims, checkpoints,
retry cycle, dead letters, hand-off, MariaDB outages, lost claims.
"""

from __future__ import annotations

import threading
import time

import pytest
from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

from email_rag.core.errors import LLMRateLimitedError, PermanentError, TransientError
from email_rag.core.retry import RetryPolicy
from email_rag.core.states import MailStatus, Step
from email_rag.db import Database
from email_rag.db.audit import events_for
from email_rag.jobs.store import JobStore
from email_rag.pipeline.contract import StepOutcome, StepSpec
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job


class Steps:
    """Scripted steps: count calls, fail on demand."""

    def __init__(self, failures: dict[Step, list[BaseException]] | None = None):
        self.calls: dict[Step, int] = {}
        self.failures = failures or {}
        self.hooks: dict[Step, object] = {}

    def spec(self, step: Step, needs_vectors: bool = False, commit_before: bool = True,
             **outcome) -> StepSpec:
        def run(ctx):
            self.calls[step] = self.calls.get(step, 0) + 1
            hook = self.hooks.get(step)
            if hook:
                hook(ctx)
            pending = self.failures.get(step)
            if pending:
                raise pending.pop(0)
            return StepOutcome(detail={"step": str(step), "n": self.calls[step]}, **outcome)
        return StepSpec(step, run, needs_vectors, commit_before)

    def pipeline(self, vector_step: bool = False) -> list[StepSpec]:
        return [self.spec(Step.PARSE),
                self.spec(Step.CLASSIFY, mail_status=MailStatus.CLASSIFIED),
                self.spec(Step.INDEX, needs_vectors=vector_step)]


def force_due(db: Database, job_id: int) -> None:
    db.execute("UPDATE jobs SET next_run_at = NOW(6) - INTERVAL 1 SECOND WHERE id = %s", (job_id,))


def job_row(db, job_id):
    return db.fetchone("SELECT * FROM jobs WHERE id = %s", (job_id,))


def audit_events(db, entity, entity_id):
    return [e["event"] for e in events_for(db, entity, entity_id)]


@pytest.fixture
def services(settings):
    svc = Services(settings)
    yield svc
    svc.close()


def test_job_runs_every_step_once_and_is_done(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()
    result = JobRunner(services, "w1", steps.pipeline()).run(job)
    assert result == "done"
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 1, Step.INDEX: 1}
    row = job_row(db, job)
    assert (row["state"], row["attempts"]) == ("done", 1)
    assert {r["step"] for r in db.fetchall("SELECT step FROM email_steps WHERE email_id = %s",
                                           (email,))} == {"parse", "classify", "index"}
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))["status"] == "classified"
    assert audit_events(db, "job", job) == ["claimed", "state_changed"]
    assert audit_events(db, "email", email).count("step_confirmed") == 3


def test_duplicate_delivery_is_a_no_op(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()
    runner = JobRunner(services, "w1", steps.pipeline())
    assert runner.run(job) == "done"
    assert runner.run(job) == "skipped"
    assert JobRunner(services, "w2", steps.pipeline()).run(job) == "skipped"
    assert steps.calls[Step.PARSE] == 1
    assert job_row(db, job)["attempts"] == 1


def test_only_one_of_two_concurrent_claims_wins(settings, db):
    email = make_email(db)
    job = make_job(db, email)
    won = []

    def claim(name):
        svc = Services(settings)
        try:
            if JobStore(svc.db, RetryPolicy()).claim(job, name):
                won.append(name)
        finally:
            svc.close()

    threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert job_row(db, job)["worker"] == won[0]


def test_four_transient_failures_use_every_delay_then_end_dead_with_an_audit_trail(
        services, db, caplog):
    """The default schedule: the first attempt and three retries after 30, 120 and 600 s."""
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.CLASSIFY: [TransientError("LLM 503")] * 4})
    services.settings.retry_jitter = 0
    runner = JobRunner(services, "w1", steps.pipeline())

    assert runner.run(job) == "failed"
    row = job_row(db, job)
    assert row["state"] == "failed" and row["attempts"] == 1
    delay = (row["next_run_at"] - row["finished_at"]).total_seconds()
    assert 29 <= delay <= 31
    assert runner.run(job) == "skipped"  # not due yet: an early delivery does nothing

    for expected in (120, 600):
        force_due(db, job)
        assert runner.run(job) == "failed"
        row = job_row(db, job)
        assert expected - 1 <= (row["next_run_at"] - row["finished_at"]).total_seconds() \
            <= expected + 1

    force_due(db, job)
    assert runner.run(job) == "dead"
    row = job_row(db, job)
    assert (row["state"], row["attempts"]) == ("dead", 4)
    assert "LLM 503" in row["last_error"]
    mail = db.fetchone("SELECT status, status_reason FROM emails WHERE id = %s", (email,))
    assert mail["status"] == "failed" and "attempt 4 of 4" in mail["status_reason"]
    job_events = events_for(db, "job", job)
    assert [e["event"] for e in job_events if e["event"] != "claimed"] == [
        "retry_scheduled", "retry_scheduled", "retry_scheduled", "dead_letter"]
    assert [e["attempt"] for e in job_events if e["event"] != "claimed"] == [1, 2, 3, 4]
    assert "state_changed" in audit_events(db, "email", email)
    assert any("ALARM dead letter" in r.message for r in caplog.records)
    # the parse step was confirmed once and never repeated
    assert steps.calls[Step.PARSE] == 1 and steps.calls[Step.CLASSIFY] == 4


def test_permanent_error_goes_dead_at_once(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.PARSE: [PermanentError("401 wrong API key")]})
    assert JobRunner(services, "w1", steps.pipeline()).run(job) == "dead"
    assert job_row(db, job)["attempts"] == 1
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))["status"] == "failed"


def test_retry_after_longer_than_schedule_is_honoured(services, db):
    services.settings.retry_jitter = 0
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.CLASSIFY: [LLMRateLimitedError(retry_after=90)]})
    JobRunner(services, "w1", steps.pipeline()).run(job)
    row = job_row(db, job)
    assert 89 <= (row["next_run_at"] - row["finished_at"]).total_seconds() <= 91


def test_rerun_skips_confirmed_steps(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.INDEX: [TransientError("qdrant down")]})
    runner = JobRunner(services, "w1", steps.pipeline())
    assert runner.run(job) == "failed"
    force_due(db, job)
    assert runner.run(job) == "done"
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 1, Step.INDEX: 2}


def test_step_not_confirmed_stops_and_is_rerun_after_admin_retry(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()
    manual = steps.spec(Step.CLASSIFY, mail_status=MailStatus.MANUAL, confirmed=False, stop=True,
                        status_reason="LLM timed out twice")
    pipeline = [steps.spec(Step.PARSE), manual, steps.spec(Step.INDEX)]
    assert JobRunner(services, "w1", pipeline).run(job) == "done"
    mail = db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))
    assert mail["status"] == "manual" and Step.INDEX not in steps.calls

    assert JobStore(db, RetryPolicy()).retry(job, "cli:admin", "LLM is back")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))["status"] == "received"
    ok_pipeline = [steps.spec(Step.PARSE), steps.spec(Step.CLASSIFY), steps.spec(Step.INDEX)]
    assert JobRunner(services, "w1", ok_pipeline).run(job) == "done"
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 2, Step.INDEX: 1}
    retry_event = next(e for e in events_for(db, "job", job) if e["event"] == "admin_retry")
    assert retry_event["actor"] == "cli:admin"


def test_vector_step_is_handed_off_to_the_vector_queue_without_counting_an_attempt(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()
    runner = JobRunner(services, "w1", steps.pipeline(vector_step=True))
    assert runner.run(job) == "handed_off"
    row = job_row(db, job)
    assert (row["state"], row["queue"], row["attempts"]) == ("queued", "email-rag-vectors", 0)
    assert services.queue.queue("email-rag-vectors").count == 1
    assert runner.run(job) == "done"
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 1, Step.INDEX: 1}


def test_claim_lost_mid_step_writes_nothing(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()
    # cleanup resets the entry while the step runs (the worker was presumed dead)
    steps.hooks[Step.CLASSIFY] = lambda ctx: db.execute(
        "UPDATE jobs SET state = 'failed', worker = NULL WHERE id = %s", (job,))
    assert JobRunner(services, "w1", steps.pipeline()).run(job) == "lost"
    confirmed = {r["step"] for r in db.fetchall(
        "SELECT step FROM email_steps WHERE email_id = %s", (email,))}
    assert confirmed == {"parse"}


def test_stuck_processing_is_reset_into_the_retry_cycle(services, db):
    services.settings.retry_jitter = 0
    email = make_email(db)
    job = make_job(db, email)
    store = JobStore(db, RetryPolicy(jitter=0))
    store.claim(job, "dead-worker")
    assert store.reset_stuck(600) == []  # just started: not stuck
    db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 700 SECOND WHERE id = %s", (job,))
    [reset] = store.reset_stuck(600)
    assert reset.id == job and reset.state == "failed"
    row = job_row(db, job)
    assert row["state"] == "failed" and "dead-worker" in row["last_error"]
    event = [e for e in events_for(db, "job", job) if e["event"] == "stuck_reset"]
    assert event and event[0]["from_state"] == "processing" and event[0]["to_state"] == "failed"
    force_due(db, job)
    assert JobRunner(services, "w2", Steps().pipeline()).run(job) == "done"
    assert job_row(db, job)["attempts"] == 2


def test_mariadb_connection_killed_mid_job_loses_nothing_and_counts_no_attempt(services, db):
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()
    killed = []

    def kill_worker_connection(ctx):
        if not killed:
            conn_id = ctx.services.db.fetchone("SELECT CONNECTION_ID() AS c")["c"]
            db.execute(f"KILL {int(conn_id)}")
            killed.append(conn_id)

    steps.hooks[Step.CLASSIFY] = kill_worker_connection
    runner = JobRunner(services, "w1", steps.pipeline())
    assert runner.run(job) == "done"
    assert runner.outages == 1
    row = job_row(db, job)
    assert (row["state"], row["attempts"]) == ("done", 1)
    assert steps.calls[Step.PARSE] == 1  # confirmed before the kill, not repeated
    assert steps.calls[Step.CLASSIFY] == 2  # repeated: its checkpoint never committed
    events = audit_events(db, "job", job)
    assert "database_unavailable" in events and "database_recovered" in events


def test_mariadb_outage_waits_and_spooled_audit_events_are_written_after(settings, db, tmp_path):
    proxy = TcpFaultProxy("127.0.0.1", 3306)
    settings.db_port = proxy.port
    settings.db_outage_backoff_max = 0.3
    svc = Services(settings)
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps()

    def outage(ctx):
        if steps.calls[Step.CLASSIFY] == 1:
            proxy.down()
            threading.Timer(1.5, proxy.up).start()

    steps.hooks[Step.CLASSIFY] = outage
    started = time.monotonic()
    try:
        assert JobRunner(svc, "w1", steps.pipeline()).run(job) == "done"
    finally:
        svc.close()
        proxy.close()
    assert time.monotonic() - started >= 1.4  # it waited for MariaDB instead of failing
    row = job_row(db, job)
    assert (row["state"], row["attempts"]) == ("done", 1)
    events = audit_events(db, "job", job)
    # recorded while MariaDB was down (spooled), then flushed
    assert "database_unavailable" in events and "database_recovered" in events
    assert not (tmp_path / "audit-spool.jsonl").exists() or not (tmp_path / "audit-spool.jsonl").read_text()


def test_admin_resolve_closes_a_dead_entry_and_marks_the_mail(services, db):
    email = make_email(db)
    job = make_job(db, email)
    JobRunner(services, "w1", Steps({Step.PARSE: [PermanentError("x")]}).pipeline()).run(job)
    store = JobStore(db, RetryPolicy())
    assert store.resolve(job, "cli:boss", "answered by phone")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))["status"] == "resolved"
    with pytest.raises(PermanentError, match="does not exist"):
        store.resolve(12345, "cli:boss", "nothing")
    with pytest.raises(PermanentError, match="resolved already"):
        store.resolve(job, "cli:boss", "twice")


def test_the_job_timeout_is_a_temporary_failure_retried_later_not_a_bug(services, db, caplog):
    """RQ stops a job that runs past its timeout by raising its JobTimeoutException inside
    the job (chaos seed 9: a worker waited for MariaDB through repeated outages until the
    timeout). The time went to a slow or unavailable dependency, not to a programming
    error: the entry goes into the retry cycle from its last checkpoint, without an
    ALARM, and says why."""
    from rq.timeouts import JobTimeoutException

    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.CLASSIFY: [JobTimeoutException(
        "Task exceeded maximum timeout value (120 seconds)")]})
    assert JobRunner(services, "w1", steps.pipeline()).run(job) == "failed"
    row = job_row(db, job)
    assert (row["state"], row["attempts"]) == ("failed", 1)
    assert "timeout" in row["last_error"] and "unexpected" not in row["last_error"]
    assert not any(r.message.startswith("ALARM job") for r in caplog.records)
    force_due(db, job)
    assert JobRunner(services, "w2", steps.pipeline()).run(job) == "done"
    assert steps.calls[Step.PARSE] == 1  # resumed after the confirmed step


def test_an_unexpected_exception_is_a_bug_dead_at_once_with_an_alarm_not_retried(
        services, db, caplog):
    """Seed 004: retry is a decision on the classified error. A KeyError in a step (a
    programming error) is not retried three times like a 503: the entry is dead after the
    first attempt, the mail waits for a human, and the worker logs an ALARM."""
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.CLASSIFY: [KeyError("category")]})
    assert JobRunner(services, "w1", steps.pipeline()).run(job) == "dead"
    row = job_row(db, job)
    assert (row["state"], row["attempts"]) == ("dead", 1)
    assert "unexpected error" in db.fetchone(
        "SELECT status_reason FROM emails WHERE id = %s", (email,))["status_reason"]
    assert any(r.message.startswith("ALARM job") and "KeyError" in r.message
               for r in caplog.records)
