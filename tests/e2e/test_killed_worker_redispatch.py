"""A worker SIGKILLed mid-job: the cleanup resets its entry and re-dispatch runs it again.

Regression (found by `email-rag chaos`): RQ keeps the job of a killed worker "started"
until its own maintenance expires it (minutes). Re-dispatch trusted that status, so the
entry the cleanup had reset to failed was never enqueued again and the mail sat
unprocessed - silently, until RQ's maintenance ran.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from email_rag.app import Services
from email_rag.audit import events_for
from email_rag.dispatch import redispatch
from email_rag.jobs import JobStore
from email_rag.retry import RetryPolicy
from email_rag.testing.llm_server import ScriptedLLMServer
from tests.factories import make_email, make_job
from tests.helpers import ROOT


def worker(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "email_rag", "worker", *args],
                            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_entry_of_a_killed_worker_is_dispatched_again_after_the_cleanup(env, settings, db):
    """GIVEN a worker SIGKILLed while its job waits for the LLM (RQ still says "started")
    WHEN the stuck-job cleanup resets the entry and re-dispatch runs
    THEN the entry is enqueued again and another worker claims and continues it."""
    plan = {"rules": [{"fault": "slow", "kind": "classify", "delay": 30, "times": 1}]}
    with ScriptedLLMServer(plan=plan) as llm:
        extra = {"EMAIL_RAG_LLM_BASE_URL": llm.url, "EMAIL_RAG_LLM_TIMEOUT": "60",
                 "EMAIL_RAG_LOG_LEVEL": "WARNING"}
        settings.llm_base_url = llm.url
        svc = Services(settings)
        try:
            email_id = make_email(db, subject="Invoice 4711 charged twice",
                                  body="Please refund the second payment.")
            job_id = make_job(db, email_id)
            svc.queue.enqueue([("email-rag", job_id)])
            first = worker({**env, **extra})
            try:
                wait_for(lambda: llm.inflight())
                os.kill(first.pid, signal.SIGKILL)
                first.wait(10)
            finally:
                if first.poll() is None:
                    first.kill()
            assert db.fetchone("SELECT state FROM jobs WHERE id = %s",
                               (job_id,))["state"] == "processing"

            store = JobStore(svc.db, RetryPolicy(delays=(0.0,), max_attempts=3))
            assert [j["id"] for j in store.reset_stuck(0)] == [job_id]
            time.sleep(0.6)
            assert redispatch(svc, grace_seconds=0.5) == 1

            second = worker({**env, **extra}, "--burst")
            assert second.wait(60) == 0
            row = db.fetchone("SELECT state, queue, attempts FROM jobs WHERE id = %s", (job_id,))
            # classify confirmed, then handed to the vector queue (no vector worker here)
            assert (row["state"], row["queue"]) == ("queued", "email-rag-vectors")
            claims = [e for e in events_for(db, "job", job_id) if e["event"] == "claimed"]
            assert len(claims) == 2
        finally:
            svc.close()
