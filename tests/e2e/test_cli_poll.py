"""`email-rag poll` and `email-rag sample-mailbox` through the real console entry point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

from email_rag_harness.testing.dovecot import mailboxes_json
from email_rag_harness.testing.mails import bulk_mails, garbage, mail

from tests.helpers import ROOT, run_cli
from tests.integration.ingest_helpers import closed_port, with_port


def _env(env: dict, *configs, **extra) -> dict:
    return {**env, "EMAIL_RAG_MAILBOXES": mailboxes_json(configs), **extra}


def test_poll_once_json_counts_and_exit_0(env, db, mailbox):
    mailbox.append_many([mail(1), mail(2), mail(3, extra={"Auto-Submitted": "auto-replied"}),
                         mail(1)])
    result = run_cli("poll", "--once", "--json", env_extra=_env(env, mailbox.config))
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout)
    assert out["ok"] and out["data"]["totals"] == {
        "fetched": 4, "new": 3, "duplicate": 1, "queued": 2, "skipped": 1, "failed": 0,
        "too_large": 0, "reused_id": 0, "missing": 0, "enqueued": 2, "enqueue_failed": 0}
    [mb] = out["data"]["mailboxes"]
    assert mb["name"] == mailbox.name and mb["status"] == "ok"
    assert mb["folders"][0]["last_uid"] == 4
    # the report is re-counted in MariaDB, not only the poller's own counters
    assert out["data"]["recounted"] == {"mails_stored": 3, "jobs_created": 2, "mails_now": 3}
    assert "Re-counted in MariaDB: 3 new mail row(s) and 2 new processing entries, as " \
        "reported." in out["message"]
    human = run_cli("poll", "--once", env_extra=_env(env, mailbox.config))
    assert human.returncode == 0
    assert "fetched 0 mail(s)" in human.stdout and "State is safe" in human.stdout
    assert "Re-counted in MariaDB: 0 new mail row(s)" in human.stdout


def test_unparseable_mail_gives_exit_2_and_says_where_it_is(env, db, mailbox):
    mailbox.append_many([mail(1), garbage()])
    result = run_cli("poll", "--once", env_extra=_env(env, mailbox.config))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "1 mail(s) could not be parsed" in result.stdout and "status failed" in result.stdout
    assert db.fetchone("SELECT COUNT(*) n FROM emails")["n"] == 2


def test_unreachable_mailbox_gives_exit_2_partial_while_the_others_are_polled(
        env, db, mailbox, dovecot):
    other = dovecot.add_user(name="other")
    other.append(mail(1))
    down = with_port(mailbox.config, closed_port())
    result = run_cli("poll", "--once", "--json", env_extra=_env(env, down, other.config))
    assert result.returncode == 2, result.stdout + result.stderr
    out = json.loads(result.stdout)
    statuses = {m["name"]: m["status"] for m in out["data"]["mailboxes"]}
    assert statuses == {mailbox.name: "failed", "other": "ok"}
    assert f"Mailbox {mailbox.name} could not be polled" in out["message"]
    assert "Nothing is lost" in out["message"] and out["data"]["totals"]["new"] == 1
    alone = run_cli("poll", "--once", "--json", env_extra=_env(env, down))
    assert alone.returncode == 1, alone.stdout + alone.stderr  # nothing polled: an error


def test_no_mailboxes_and_unknown_mailbox_are_errors(env, db, mailbox):
    none = run_cli("poll", "--once", env_extra=env)
    assert none.returncode == 1 and "EMAIL_RAG_MAILBOXES" in none.stdout
    unknown = run_cli("poll", "--once", "--mailbox", "nope", env_extra=_env(env, mailbox.config))
    assert unknown.returncode == 1 and "no mailbox named nope" in unknown.stdout


def _start_poll(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "email_rag", "poll", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env, "PYTHONPATH": str(ROOT)})


def _wait_rows(db, at_least: int, timeout: float = 120) -> int:  # a poller process's start
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = db.fetchone("SELECT COUNT(*) n FROM emails")["n"]
        if n >= at_least:
            return n
        time.sleep(0.01)
    raise AssertionError(f"fewer than {at_least} rows after {timeout} s")


def test_poller_sigkilled_mid_batch_then_restarted_stores_every_mail_once(env, db, mailbox):
    """GIVEN 3,000 mails and batches of 10 WHEN the poller is SIGKILLed mid-run and started
    again THEN every mail is stored exactly once with exactly one job, and no batch was
    ever half-committed."""
    mailbox.deliver(bulk_mails(3_000, tag="kill"))
    e = _env(env, mailbox.config, EMAIL_RAG_IMAP_FETCH_BATCH="10")
    proc = _start_poll(e, "--once")
    try:
        _wait_rows(db, 200)
    finally:
        proc.kill()  # SIGKILL: no cleanup, the lease stays held by a dead process
        proc.wait(10)
    at_kill = db.fetchone("SELECT COUNT(*) n FROM emails")["n"]
    assert 200 <= at_kill < 3_000, "killed too late to prove anything"
    assert at_kill % 10 == 0  # batches are all-or-nothing
    cursor = db.fetchone("SELECT last_uid FROM mailbox_cursors")["last_uid"]
    assert cursor == at_kill
    assert db.fetchone("SELECT lease_owner FROM mailboxes")["lease_owner"] is not None
    again = run_cli("poll", "--once", "--json", env_extra=e)
    assert again.returncode == 0, again.stdout + again.stderr
    totals = json.loads(again.stdout)["data"]["totals"]
    assert totals["fetched"] == 3_000 - at_kill and totals["duplicate"] == 0
    counts = db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT message_id) d FROM emails")
    assert counts == {"n": 3_000, "d": 3_000}
    assert db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT email_id) d FROM jobs") == {
        "n": 3_000, "d": 3_000}
    takeover = db.fetchone("SELECT detail FROM audit_log WHERE event = 'lease_taken_over'")
    assert json.loads(takeover["detail"])["why"] == "owner process is dead"


def test_two_poller_processes_started_at_once_store_each_mail_once(env, db, mailbox):
    mailbox.deliver(bulk_mails(1_000, tag="pair"))
    e = _env(env, mailbox.config, EMAIL_RAG_IMAP_FETCH_BATCH="50")
    procs = [_start_poll(e, "--once", "--json") for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(o)["data"] for o in outs]
    assert sum(r["totals"]["fetched"] for r in results) == 1_000  # never both on one mail
    assert sum(r["totals"]["new"] for r in results) == 1_000
    assert db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT message_id) d FROM emails") == {
        "n": 1_000, "d": 1_000}
    assert db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT email_id) d FROM jobs") == {
        "n": 1_000, "d": 1_000}


def test_sigterm_finishes_the_batch_in_hand_and_releases_the_lease(env, db, mailbox):
    mailbox.deliver(bulk_mails(3_000, tag="term"))
    e = _env(env, mailbox.config, EMAIL_RAG_IMAP_FETCH_BATCH="10",
             EMAIL_RAG_POLL_INTERVAL_SECONDS="60")
    proc = _start_poll(e, "--json")  # loop mode
    try:
        _wait_rows(db, 100)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the interrupted record (issue 43): exit 2, and the next poll continues at the cursor
    assert proc.returncode == 2, out + err
    result = json.loads(out)
    assert result["data"]["mailboxes"][0]["status"] == "interrupted"
    assert (result["status"], result["resumeAvailable"]) == ("interrupted", True)
    assert "Stopped on request" in result["message"]
    n = db.fetchone("SELECT COUNT(*) n FROM emails")["n"]
    assert n % 10 == 0 and n < 3_000
    assert db.fetchone("SELECT last_uid FROM mailbox_cursors")["last_uid"] == n
    assert db.fetchone("SELECT lease_owner FROM mailboxes")["lease_owner"] is None
    rest = run_cli("poll", "--once", "--json", env_extra=e)
    assert json.loads(rest.stdout)["data"]["totals"]["new"] == 3_000 - n
    # the two records account for every mail once
    assert result["processed"] + json.loads(rest.stdout)["processed"] == 3_000


def test_sample_mailbox_for_a_newcomer(env, db):
    """The README path: start the sample mailbox, poll it with the printed value, stop it."""
    folder = f"/dev/shm/email-rag-sample-test-{uuid.uuid4().hex[:8]}"
    if not os.path.isdir("/dev/shm"):
        folder = folder.replace("/dev/shm", "/tmp")
    try:
        started = run_cli("sample-mailbox", "--dir", folder, "--json", env_extra=env)
        assert started.returncode == 0, started.stdout + started.stderr
        data = json.loads(started.stdout)["data"]
        assert data["started"] and "export EMAIL_RAG_MAILBOXES=" in json.loads(
            started.stdout)["message"]
        value = json.dumps(data["mailboxes"])
        polled = run_cli("poll", "--once", "--json",
                         env_extra={**env, "EMAIL_RAG_MAILBOXES": value})
        assert polled.returncode == 0, polled.stdout + polled.stderr
        totals = json.loads(polled.stdout)["data"]["totals"]
        assert (totals["new"], totals["queued"], totals["skipped"]) == (8, 6, 2)
        again = run_cli("sample-mailbox", "--dir", folder, env_extra=env)
        assert again.returncode == 0 and "Already running" in again.stdout
    finally:
        stopped = run_cli("sample-mailbox", "--dir", folder, "--stop", env_extra=env)
    assert stopped.returncode == 0 and not os.path.exists(folder)


def test_status_shows_the_imap_mailbox_and_its_poll_health(env, db, mailbox):
    from pydantic import SecretStr

    ok = run_cli("status", "--json", env_extra=_env(env, mailbox.config))
    deps = {d["name"]: d for d in json.loads(ok.stdout)["data"]["dependencies"]}
    assert deps[f"imap:{mailbox.name}"]["ok"] and "Dovecot" in deps[f"imap:{mailbox.name}"]["version"]
    wrong = mailbox.config.model_copy(update={"password": SecretStr("Wr0ng-pass")})
    run_cli("poll", "--once", env_extra=_env(env, wrong))
    out = run_cli("status", "--json", env_extra=_env(env, wrong))
    assert "Wr0ng-pass" not in out.stdout
    data = json.loads(out.stdout)["data"]
    check = {d["name"]: d for d in data["dependencies"]}[f"imap:{mailbox.name}"]
    assert not check["ok"] and "refused" in check["detail"]
    [health] = data["counts"]["mailboxes"]
    assert health["needs_attention"] and health["alarm"] and health["consecutive_failures"] == 1
