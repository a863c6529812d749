"""Running processes pick up mailboxes added, changed, disabled or removed with `email-rag
mailboxes ...` (MariaDB) within one poll interval, without a restart; no mailbox
environment variable is set. Real poller, IDLE and worker processes, real Dovecot."""

from __future__ import annotations

import os
import signal

import pytest
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from tests.helpers import run_cli, spawn, stop, wait_for

KEY = "test-key-for-mailbox-secrets-0123456789"


def mail(tag: str) -> bytes:
    return (f"Message-ID: <{tag}@customer.example>\r\nFrom: Carla <carla@customer.example>\r\n"
            f"To: support@example.com\r\nSubject: Question {tag}\r\n"
            "Date: Mon, 30 Nov 2026 08:00:00 +0000\r\n\r\n"
            f"Hello, where is my order {tag}? Carla\r\n").encode()


@pytest.fixture
def procs(env, tmp_path):
    extra = {**env, "EMAIL_RAG_OAUTH_TOKEN_KEY": KEY, "EMAIL_RAG_POLL_INTERVAL_SECONDS": "1",
             "EMAIL_RAG_IDLE_WAIT_SECONDS": "0.5"}
    started = []

    class Procs:
        env = extra

        def start(self, *args: str, **more: str):
            p = spawn(*args, env_extra={**extra, **more}, log=tmp_path / f"{args[0]}.log")
            started.append(p)
            return p

        def cli(self, *args: str):
            result = run_cli(*args, env_extra=extra)
            assert result.returncode == 0, result.stdout + result.stderr
            return result

    yield Procs()
    for p in started:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)


def add(procs, box, *extra: str) -> None:
    result = run_cli("mailboxes", "add", box.name, "--host", box.host, "--port",
                     str(box.port), "--security", "plain", "--username", box.username,
                     "--password", box.password, "--no-check", *extra, env_extra=procs.env)
    assert result.returncode == 0, result.stdout + result.stderr


def stored(db, tag: str) -> bool:
    return db.fetchone("SELECT id FROM emails WHERE message_id = %s",
                       (f"<{tag}@customer.example>",)) is not None


@pytest.mark.parametrize("command", [("poll",), ("idle",)])
def test_running_process_polls_an_added_mailbox_and_stops_for_a_removed_one(
        procs, db, dovecot, command):
    """GIVEN a poller (or IDLE watcher) started with no mailbox at all WHEN a mailbox is added
    THEN its mail is stored without a restart; WHEN it is removed (or disabled) and another
    one added THEN the other's mail is stored and the removed one's new mail is not."""
    first, second = dovecot.add_user(), dovecot.add_user()
    process = procs.start(*command)
    first.append(mail("first-1"))
    add(procs, first)
    wait_for(lambda: stored(db, "first-1"), 60, what="the added mailbox's mail")
    procs.cli("mailboxes", "disable" if command == ("idle",) else "remove", first.name)
    second.append(mail("second-1"))
    add(procs, second)
    # the cycle (or supervisor pass) that took up the second mailbox read the first one's
    # removal in the same read: from then on nothing of the first one is fetched
    wait_for(lambda: stored(db, "second-1"), 60, what="the second mailbox's mail")
    first.append(mail("first-2"))
    second.append(mail("second-2"))
    wait_for(lambda: stored(db, "second-2"), 60, what="a poll after the first one's new mail")
    assert not stored(db, "first-2")
    assert db.fetchone("SELECT COUNT(*) n FROM emails WHERE message_id = %s",
                       ("<first-1@customer.example>",))["n"] == 1  # its mail stays
    assert stop(process) == 0


def test_worker_uses_changed_settings_and_finishes_a_removed_mailboxs_jobs(procs, db, mailbox):
    """GIVEN a mailbox whose team name is 'Team One' and a running worker WHEN a mail is drafted
    THEN the sign-off names Team One; WHEN the team name is changed and another mail arrives
    THEN its draft names Team Two (no restart); WHEN the mailbox is removed with a mail's job
    still queued THEN the worker still drafts it (its job is not lost)."""
    llm = ScriptedLLMServer().start()
    try:
        more = {"EMAIL_RAG_LLM_BASE_URL": llm.url, "EMAIL_RAG_LLM_TIMEOUT": "30"}
        procs.env.update(more)
        add(procs, mailbox, "--team-name", "Team One")
        worker = procs.start("worker", "--with-vectors", **more)
        mailbox.append(mail("one"))
        procs.cli("poll", "--once")
        wait_for(lambda: draft_of(db, "one"), 180, what="the first draft")
        assert "Team One" in draft_of(db, "one")
        procs.cli("mailboxes", "edit", mailbox.name, "--team-name", "Team Two", "--no-check")
        mailbox.append(mail("two"))
        procs.cli("poll", "--once")
        wait_for(lambda: draft_of(db, "two"), 180, what="the second draft")
        assert "Team Two" in draft_of(db, "two") and "Team One" not in draft_of(db, "two")
        assert stop(worker) == 0
        mailbox.append(mail("three"))
        procs.cli("poll", "--once")
        procs.cli("mailboxes", "remove", mailbox.name)
        worker = procs.start("worker", "--with-vectors", **more)
        wait_for(lambda: draft_of(db, "three"), 180, what="the removed mailbox's queued job")
        assert "Team Two" in draft_of(db, "three")
        assert stop(worker) == 0
    finally:
        llm.stop()


def draft_of(db, tag: str) -> str | None:
    row = db.fetchone("SELECT d.body_draft FROM drafts d JOIN emails e ON e.id = d.email_id "
                      "WHERE e.message_id = %s", (f"<{tag}@customer.example>",))
    return row and row["body_draft"]
