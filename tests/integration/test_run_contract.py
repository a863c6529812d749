"""The failure contract of long commands (issue 43): each long command killed midway
(SIGKILL) against the real MariaDB and Redis resumes on the next run, and the two runs'
records (the killed run's checkpoint row, the second run's --json record) account for
every item exactly once; SIGTERM prints the Interrupted record with resumeAvailable;
``failed retry --all`` says how many manual mails it skipped and why."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import ROOT, kill_when, run_cli, wait_for
from tests.integration.test_staff_actions_busy import lock_waits


@contextmanager
def reaped(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """``proc`` killed on the way out if the block left it running (a failed assertion)."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


def _start(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH",
                                                                               "")}
    return subprocess.Popen([sys.executable, "-m", "email_rag", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _last_run(db, command: str) -> dict | None:
    return db.fetchone("SELECT id, status, processed, failed, resumed_from, current_item, "
                       "continued_by FROM run_results WHERE command = %s ORDER BY id DESC "
                       "LIMIT 1", (command,))


def _wait_processed(db, proc: subprocess.Popen, command: str, at_least: int,
                    timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = _last_run(db, command)
        if row and row["processed"] >= at_least:
            return row
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError(f"{command} did not reach {at_least} items in {timeout} s")


def _dead_entries(db, n: int) -> list[int]:
    mb = make_mailbox(db)
    jobs = []
    for i in range(n):
        mail = make_email(db, mb, status="failed", subject=f"dead {i}")
        job = make_job(db, mail, state="dead")
        db.execute("UPDATE jobs SET attempts = 4, last_error = 'LLMError: 503' WHERE id = %s",
                   (job,))
        jobs.append(job)
    return jobs


def _retries_per_job(db) -> dict[int, int]:
    rows = db.fetchall("SELECT entity_id, COUNT(*) AS n FROM audit_log WHERE entity_type = "
                       "'job' AND event = 'admin_retry' GROUP BY entity_id")
    return {int(r["entity_id"]): int(r["n"]) for r in rows}


def test_failed_retry_all_killed_midway_resumes_and_the_two_records_count_each_entry_once(
        env, db):
    jobs = _dead_entries(db, 150)
    proc = _start("failed", "retry", "--all", "--json")
    with reaped(proc):
        killed_at = _wait_processed(db, proc, "failed-retry", random.randint(5, 60))
        proc.send_signal(signal.SIGKILL)  # at a random point, no chance to clean up
        proc.wait(timeout=30)
    first = _last_run(db, "failed-retry")
    assert first["status"] == "running" and 0 < first["processed"] < len(jobs), first
    assert first["processed"] >= killed_at["processed"]

    again = run_cli("failed", "retry", "--all", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    out = json.loads(again.stdout)
    assert (out["status"], out["failed"], out["remaining"], out["resumeAvailable"]) == (
        "completed", 0, 0, False)
    # the killed run's checkpoint and the second run's record: every entry exactly once
    assert out["resumedFrom"] + out["processed"] == len(jobs), (first, out)
    assert _retries_per_job(db) == dict.fromkeys(jobs, 1)
    assert db.fetchone("SELECT COUNT(*) AS n FROM jobs WHERE state = 'dead'")["n"] == 0
    rows = db.fetchall("SELECT status, continued_by FROM run_results ORDER BY id")
    assert [r["status"] for r in rows] == ["interrupted", "completed"]
    assert rows[0]["continued_by"] is not None
    events = [r["event"] for r in db.fetchall(
        "SELECT event FROM audit_log WHERE entity_type = 'run' ORDER BY id")]
    assert events == ["run_started", "run_started", "run_continued", "run_finished"]


def test_failed_retry_all_stopped_by_sigterm_prints_the_interrupted_record_then_resumes(
        env, db):
    jobs = _dead_entries(db, 120)
    proc = _start("failed", "retry", "--all", "--json")
    with reaped(proc):
        _wait_processed(db, proc, "failed-retry", 5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, out + err
    first = json.loads(out)
    assert (first["status"], first["resumeAvailable"], first["exit_code"]) == (
        "interrupted", True, 2)
    assert first["next"] == "email-rag failed retry --all"
    assert first["processed"] + first["remaining"] == len(jobs) and first["remaining"] > 0

    human = run_cli("failed", "retry", "--all")
    assert human.returncode == 0, human.stdout + human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == "COMPLETED"
    assert lines[1] == (f"Resuming: {first['processed']} entry(s) were done earlier by an "
                        "unfinished run of this command.")
    assert lines[2] == f"{first['remaining']} / {first['remaining']} entry(s) completed."
    assert _retries_per_job(db) == dict.fromkeys(jobs, 1)


def test_failed_retry_all_reports_the_manual_mails_it_skipped_and_retries_them_when_asked(
        env, db):
    mb = make_mailbox(db)
    dead = _dead_entries(db, 2)
    manual_mail = make_email(db, mb, status="manual", status_reason="LLM timed out twice")
    manual_job = make_job(db, manual_mail, state="done")

    r = run_cli("failed", "retry", "--all", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out["status"], out["processed"], out["skipped"]) == ("completed", 2, 1)
    assert out["data"]["skipped_manual"] == [manual_job]
    assert sorted(out["data"]["retried"]) == sorted(dead)
    human = run_cli("failed", "retry", "--all")
    assert "Skipped: 1 mail(s) in manual can be retried but --all leaves them to a human: " \
        "add --include-manual" in human.stdout
    assert human.stdout.startswith("NOTHING TO DO\n0 / 1 entry(s) completed (1 skipped).")

    r = run_cli("failed", "retry", "--all", "--include-manual", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out["status"], out["processed"], out["skipped"]) == ("completed", 1, 0)
    assert out["data"]["retried"] == [manual_job]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (manual_mail,))[
        "status"] != "manual"


def _partial_mails(db, n: int) -> list[int]:
    mb = make_mailbox(db)
    return [make_email(db, mb, status="sent", subject=f"printer {i}",
                       body=f"The printer {i} in room {i} shows error {i}.",
                       index_status="partially_indexed", index_missing="vectors")
            for i in range(n)]


def _reindexed_per_mail(db) -> dict[int, int]:
    rows = db.fetchall("SELECT entity_id, COUNT(*) AS n FROM audit_log WHERE entity_type = "
                       "'email' AND event = 'reindexed' GROUP BY entity_id")
    return {int(r["entity_id"]): int(r["n"]) for r in rows}


def _kill_then_reindex(db, proc: subprocess.Popen, mails: list[int],
                       scope: list[str] | tuple[str, ...] = ()) -> None:
    """SIGKILL ``proc`` once its reindex run confirmed a random number of mails, then run
    `reindex` again: it continues the killed run, and the killed run's checkpoint and the
    second run's record count every mail exactly once (one `reindexed` event each)."""
    kill_when(proc, lambda: _wait_processed(db, proc, "reindex", random.randint(3, 40)))
    first = _last_run(db, "reindex")
    assert first["status"] == "running" and 0 < first["processed"] < len(mails), first

    again = run_cli("reindex", *scope, "--json", timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    out = json.loads(again.stdout)
    assert (out["status"], out["failed"], out["remaining"]) == ("completed", 0, 0), out
    assert out["resumedFrom"] == first["processed"]
    assert out["resumedFrom"] + out["processed"] == len(mails), (first, out)
    assert _reindexed_per_mail(db) == dict.fromkeys(mails, 1)


@pytest.mark.parametrize("scope", [[], ["--all"]])
def test_reindex_killed_midway_resumes_and_the_two_records_count_each_mail_once(env, db,
                                                                                scope):
    mails = _partial_mails(db, 120)
    if scope:  # --all walks every indexed mail: make them complete first
        db.execute("UPDATE emails SET index_status = 'complete', index_missing = NULL")
    _kill_then_reindex(db, _start("reindex", *scope, "--json"), mails, scope)
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails WHERE index_status = "
                       "'partially_indexed'")["n"] == 0


def test_poll_killed_midway_resumes_at_its_cursor_and_stores_each_mail_once(env, db, mailbox,
                                                                            monkeypatch):
    """GIVEN 1,500 mails WHEN `poll --once` is SIGKILLed after a random committed batch THEN
    the next poll's record has processed = the rest, completed and verified by its re-count,
    and MariaDB holds every mail once (the batch in hand was rolled back, not half stored)."""
    from email_rag_harness.testing.dovecot import mailboxes_json
    from email_rag_harness.testing.mails import bulk_mails

    mailbox.deliver(bulk_mails(1_500, tag="kill"))
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", mailboxes_json([mailbox.config]))
    monkeypatch.setenv("EMAIL_RAG_IMAP_FETCH_BATCH", "10")
    proc = _start("poll", "--once", "--json")
    with reaped(proc):
        deadline, target = time.monotonic() + 180, random.randint(20, 400)
        while db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] < target:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    stored = db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"]
    assert stored % 10 == 0 and 0 < stored < 1_500  # whole batches only
    again = run_cli("poll", "--once", "--force", "--json", timeout=600)
    out = json.loads(again.stdout)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (out["status"], out["verified"], out["failed"]) == ("completed", True, 0)
    assert stored + out["processed"] == 1_500
    assert db.fetchone("SELECT COUNT(*) AS n, COUNT(DISTINCT message_id) AS d FROM emails") \
        == {"n": 1_500, "d": 1_500}


def _through_proxy(monkeypatch):
    """The commands' MariaDB behind a proxy the test can take down (not the shared server)."""
    from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

    from email_rag.core.settings import get_settings

    proxy = TcpFaultProxy("127.0.0.1", 3306)
    monkeypatch.setenv("EMAIL_RAG_DB_PORT", str(proxy.port))
    get_settings.cache_clear()
    return proxy


def _main_json(capsys, *argv: str) -> tuple[int, dict]:
    from email_rag.cli import main
    from email_rag.core.settings import get_settings

    get_settings.cache_clear()
    capsys.readouterr()
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_failed_retry_all_that_loses_mariadb_midway_says_interrupted_and_resumes(
        env, db, monkeypatch, capsys):
    from email_rag.review import console

    jobs = _dead_entries(db, 30)
    proxy = _through_proxy(monkeypatch)
    real, calls = console.retry_jobs, []

    def retry_then_lose(svc, ids, actor, note=""):
        calls.append(ids)
        if len(calls) == 12:
            proxy.down()  # MariaDB gone before the 12th entry
        return real(svc, ids, actor, note)

    monkeypatch.setattr(console, "retry_jobs", retry_then_lose)
    try:
        code, out = _main_json(capsys, "failed", "retry", "--all")
        assert code == 2, out
        assert (out["status"], out["processed"], out["resumeAvailable"]) == (
            "interrupted", 11, True)
        assert out["next"] == "email-rag failed retry --all"
        proxy.up()
        monkeypatch.setattr(console, "retry_jobs", real)
        code, again = _main_json(capsys, "failed", "retry", "--all")
    finally:
        proxy.close()
    assert code == 0 and again["status"] == "completed", again
    assert again["resumedFrom"] == 11 and again["resumedFrom"] + again["processed"] == 30
    assert _retries_per_job(db) == dict.fromkeys(jobs, 1)


def test_reindex_that_loses_mariadb_midway_says_how_far_it_got_and_resumes(
        env, db, monkeypatch, capsys):
    from email_rag.indexing import sync

    mails = _partial_mails(db, 25)
    proxy = _through_proxy(monkeypatch)
    real, calls = sync._one, []

    def index_then_lose(*args, **kw):
        calls.append(1)
        if len(calls) == 9:
            proxy.down()  # MariaDB gone while the 9th mail is in hand
        return real(*args, **kw)

    monkeypatch.setattr(sync, "_one", index_then_lose)
    try:
        code, out = _main_json(capsys, "reindex")
        assert code == 2, out
        assert (out["status"], out["processed"], out["resumeAvailable"], out["next"]) == (
            "interrupted", 8, True, "email-rag reindex")
        assert "Re-indexed 8 mail(s) before MariaDB was lost" in out["message"]
        proxy.up()
        monkeypatch.setattr(sync, "_one", real)
        code, again = _main_json(capsys, "reindex")
    finally:
        proxy.close()
    assert code == 0 and again["status"] == "completed", again
    assert again["resumedFrom"] == 8 and again["resumedFrom"] + again["processed"] == 25
    assert _reindexed_per_mail(db) == dict.fromkeys(mails, 1)


def _queued_sync(db, scope: tuple[str, ...] = ()) -> subprocess.Popen:
    """`reindex --queue --wait` in a subprocess, returned once its index_sync entry exists."""
    proc = _start("reindex", *scope, "--queue", "--wait", "300", "--json")
    deadline = time.monotonic() + 120
    while not db.fetchone("SELECT id FROM jobs WHERE kind = 'index_sync'"):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    return proc


def test_index_sync_of_a_killed_vector_worker_is_continued_and_counts_each_mail_once(env, db):
    """GIVEN 120 partially_indexed mails and their index_sync entry WHEN the vector worker
    running it (`worker --with-vectors --burst`) is SIGKILLed at a random mail THEN its run
    stays in the checkpoint, `reindex` continues it ("resuming"), and the two records count
    every mail exactly once."""
    mails = _partial_mails(db, 120)
    queued = run_cli("reindex", "--queue", "--json")
    assert queued.returncode == 0, queued.stdout + queued.stderr
    _kill_then_reindex(db, _start("worker", "--with-vectors", "--burst", "--name",
                                  "vec-killed"), mails)
    rows = db.fetchall("SELECT status FROM run_results WHERE command = 'reindex' ORDER BY id")
    assert [r["status"] for r in rows] == ["interrupted", "completed"]


def test_reindex_queued_for_the_vector_worker_prints_the_workers_run_record(env, db):
    """GIVEN partially_indexed mails WHEN `reindex --queue --wait` hands them to the vector
    worker THEN its --json is the worker's run record (completed, every mail processed,
    exit 0) beside today's keys."""
    mails = _partial_mails(db, 30)
    proc = _queued_sync(db)
    with reaped(proc):
        worker = run_cli("worker", "--with-vectors", "--burst", timeout=600)
        assert worker.returncode == 0, worker.stdout + worker.stderr
        stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout + stderr
    out = json.loads(stdout)
    assert out["data"]["mode"] == "queued" and out["data"]["final_state"] == "done"
    assert (out["status"], out["processed"], out["failed"], out["remaining"],
            out["resumeAvailable"], out["exit_code"]) == ("completed", len(mails), 0, 0,
                                                          False, 0), out
    assert _reindexed_per_mail(db) == dict.fromkeys(mails, 1)


def test_reindex_queued_whose_wait_runs_out_prints_a_failed_record_of_the_mails_still_to_do(
        env, db):
    """GIVEN 4 partially_indexed mails and no vector worker WHEN `reindex --queue --wait 1`
    queues their index_sync entry THEN after the wait it prints a run record: nothing done,
    4 remaining, `failed` (docs/states.md: items remain and none could be done; exit 1),
    and names the command that waits again; the entry stays queued in MariaDB. Nothing can
    finish the entry meanwhile: no worker runs."""
    mails = _partial_mails(db, 4)
    res = run_cli("reindex", "--queue", "--wait", "1", "--json")
    assert res.returncode == 1, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert (out["status"], out["exit_code"], out["processed"], out["failed"],
            out["remaining"], out["resumeAvailable"]) == ("failed", 1, 0, 0, len(mails),
                                                           False), out
    assert out["next"] == "email-rag reindex --queue --wait 1"
    data = out["data"]
    assert (data["mode"], data["scope"], data["final_state"], data["partially_indexed_now"]) \
        == ("queued", "partial", "queued", len(mails))
    assert {"job_id", "queue"} <= set(data)
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (data["job_id"],))[
        "state"] == "queued"
    human = run_cli("reindex", "--email", str(mails[0]), "--queue", "--wait", "1")
    assert human.returncode == 1, human.stdout + human.stderr
    lines = human.stdout.splitlines()
    assert lines[:2] == ["FAILED", "0 / 1 mail(s) completed (1 remaining)."], human.stdout
    assert f"Next: email-rag reindex --email {mails[0]} --queue --wait 1" in lines


def _dead_by_the_job_store(db, job_id: int, error: Exception, progress: int = 0,
                           scope: str = "partial") -> None:
    """The vector worker's part, through the real stores: claim the entry, optionally start
    the scope's run and confirm ``progress`` mails in its checkpoint (each mail complete
    then), and fail the entry with ``error`` (a PermanentError: dead at once)."""
    from email_rag.core.retry import RetryPolicy
    from email_rag.db.run_results import RunLog
    from email_rag.jobs.store import JobStore

    store = JobStore(db, RetryPolicy(jitter=0))
    job = store.claim(job_id, "vec-test")
    assert job is not None
    if progress:
        runs = RunLog(db)
        run = runs.begin("reindex", scope, "worker:vec-test", remaining=progress)
        done = [r["id"] for r in db.fetchall(
            "SELECT id FROM emails WHERE index_status = 'partially_indexed' ORDER BY id "
            "LIMIT %s", (progress,))]
        for n, mail in enumerate(done, 1):
            with db.transaction() as cur:
                cur.execute("UPDATE emails SET index_status = 'complete', index_missing = NULL "
                            "WHERE id = %s", (mail,))
                runs.progress(run, n, cursor=str(mail), cur=cur)
    store.fail(job, "vec-test", error)
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job_id,))["state"] == "dead"


def test_reindex_queued_whose_entry_goes_dead_prints_a_failed_record_naming_the_retry(env, db):
    """GIVEN partially_indexed mails and `reindex --queue --wait` following their index_sync
    entry WHEN the entry goes dead before its run started (the real JobStore fails it with a
    permanent error) THEN the command prints a `failed` record (exit 1): nothing done, every
    mail remaining, the error's class but not its text (it may hold secrets), and `next` is
    the retry of that entry."""
    from email_rag.core.errors import PermanentError

    mails = _partial_mails(db, 3)
    proc = _queued_sync(db)
    with reaped(proc):
        job_id = db.fetchone("SELECT id FROM jobs WHERE kind = 'index_sync'")["id"]
        _dead_by_the_job_store(db, job_id, PermanentError("store said no: token=s3cret"))
        stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stdout + stderr
    out = json.loads(stdout)
    assert (out["status"], out["exit_code"], out["processed"], out["remaining"],
            out["resumeAvailable"]) == ("failed", 1, 0, len(mails), False), out
    assert out["next"] == f"email-rag failed retry {job_id}"
    assert out["data"]["final_state"] == "dead" and out["data"]["job_id"] == job_id
    assert out["data"]["error"] == "PermanentError"
    assert "PermanentError" in out["message"] and "s3cret" not in stdout + stderr


def test_reindex_queued_whose_entry_dies_midway_prints_the_interrupted_record_of_its_run(
        env, db):
    """GIVEN 5 partially_indexed mails and `reindex --queue --wait` following their
    index_sync entry WHEN the run of that entry confirmed 2 mails in its checkpoint and the
    entry then went dead THEN the command prints that run's record: `interrupted` (exit 2),
    2 processed, 3 remaining, resumeAvailable, `next` the retry of the entry (its run
    continues the checkpoint)."""
    from email_rag.core.errors import PermanentError

    _partial_mails(db, 5)
    proc = _queued_sync(db)
    with reaped(proc):
        job_id = db.fetchone("SELECT id FROM jobs WHERE kind = 'index_sync'")["id"]
        _dead_by_the_job_store(db, job_id, PermanentError("boom"), progress=2)
        stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 2, stdout + stderr
    out = json.loads(stdout)
    assert (out["status"], out["exit_code"], out["processed"], out["failed"],
            out["remaining"], out["resumeAvailable"]) == ("interrupted", 2, 2, 0, 3, True), out
    assert out["next"] == f"email-rag failed retry {job_id}"
    assert out["data"]["final_state"] == "dead" and out["data"]["run_id"]


def test_a_killed_burst_worker_is_continued_by_the_next_burst_and_counts_each_entry_once(
        env, db):
    """GIVEN 30 index_sync entries, and the mail of a random one of them locked by another
    connection WHEN `worker --with-vectors --burst --name vec` waits on that lock (seen in
    INNODB_TRX) and is SIGKILLed THEN its run stays in the checkpoint with that entry in
    hand; the next burst of the same name says "resuming", does the rest, and reports the
    entry in hand (still processing: the stuck-job reset's) as remaining: the two records
    count every entry exactly once."""
    from email_rag.adapters.queue import JobQueue
    from email_rag.db import Database

    mails = _partial_mails(db, 30)
    jobs = []
    for mail in mails:
        with db.transaction() as cur:
            cur.execute("INSERT INTO jobs (kind, job_key, email_id, queue, state) VALUES "
                        "('index_sync', %s, %s, 'email-rag-vectors', 'queued')",
                        (f"index_sync:email:{mail}", mail))
            jobs.append(cur.lastrowid)
    q = JobQueue(env["EMAIL_RAG_REDIS_URL"])
    q.enqueue([("email-rag-vectors", job) for job in jobs])
    q.close()
    held = random.randint(3, 25)  # the entry in hand when the worker is killed
    holder = Database(database=db.database)
    with holder.transaction() as cur:
        cur.execute("SELECT id FROM emails WHERE id = %s FOR UPDATE", (mails[held],))
        proc = _start("worker", "--with-vectors", "--burst", "--name", "vec")
        # INNODB_TRX is refreshed only when unread for 0.1 s: asked every 0.25 s
        kill_when(proc, lambda: wait_for(lambda: proc.poll() is not None or lock_waits(db),
                                         120, 0.25, "the worker to wait for the mail"))
    holder.close()
    first = _last_run(db, "worker")
    # RQ keeps a killed worker's name until its registration expires (worker TTL, 420 s):
    # expired now, as the next burst of the name would find it a few minutes later
    redis.Redis.from_url(env["EMAIL_RAG_REDIS_URL"]).delete("rq:worker:vec")
    assert (first["status"], first["processed"], first["current_item"]) == (
        "running", held, str(jobs[held])), first

    again = run_cli("worker", "--with-vectors", "--burst", "--name", "vec", "--json",
                    timeout=600)
    assert again.returncode == 2, again.stdout + again.stderr
    out = json.loads(again.stdout)
    assert (out["status"], out["resumedFrom"], out["processed"], out["remaining"]) == (
        "partial", held, len(jobs) - held - 1, 1), out
    assert out["next"] == "email-rag cleanup"
    states = {r["id"]: r["state"] for r in db.fetchall("SELECT id, state FROM jobs")}
    assert [j for j in jobs if states[j] != "done"] == [jobs[held]]
    assert states[jobs[held]] == "processing"
    claims = db.fetchall("SELECT entity_id, COUNT(*) AS n FROM audit_log WHERE entity_type = "
                         "'job' AND event = 'claimed' GROUP BY entity_id")
    assert {int(r["entity_id"]): int(r["n"]) for r in claims} == dict.fromkeys(jobs, 1)
    rows = db.fetchall("SELECT status FROM run_results WHERE command = 'worker' ORDER BY id")
    assert [r["status"] for r in rows] == ["interrupted", "partial"]
