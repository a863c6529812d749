"""`email-rag idle` as a real process: push ingestion, one holder per mailbox, take-over."""

from __future__ import annotations

import os
import signal

from email_rag_harness.testing.dovecot import mailboxes_json
from email_rag_harness.testing.mails import mail

from tests.helpers import run_cli, spawn, stop, wait_for


def _env(env: dict, config) -> dict:
    return {**env, "EMAIL_RAG_MAILBOXES": mailboxes_json([config]),
            "EMAIL_RAG_POLL_INTERVAL_SECONDS": "3600", "EMAIL_RAG_IDLE_WAIT_SECONDS": "0.3"}


def _holder(db) -> str | None:
    row = db.fetchone("SELECT lease_owner FROM mailboxes")
    return row["lease_owner"] if row else None


def _count(db) -> int:
    return int(db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"])


def test_idle_processes_one_holds_the_mailbox_a_killed_holder_is_replaced(env, db, mailbox,
                                                                         tmp_path):
    """GIVEN two `email-rag idle` processes on one mailbox THEN one holds the lease and a
    mail APPENDed is stored once; WHEN the holder is SIGKILLed THEN the other one takes
    over (dead owner seen) and stores the next mail; SIGTERM ends it with exit 0."""
    extra = _env(env, mailbox.config)
    first = spawn("idle", env_extra=extra, log=tmp_path / "first.log")
    second = None
    try:
        wait_for(lambda: _holder(db) and f":{first.pid}:" in _holder(db), what="first holds")
        second = spawn("idle", env_extra=extra, log=tmp_path / "second.log")
        mailbox.append(mail(1))
        wait_for(lambda: _count(db) == 1, what="mail stored")
        assert f":{first.pid}:" in _holder(db)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        wait_for(lambda: _holder(db) and f":{second.pid}:" in _holder(db), what="take-over")
        mailbox.append(mail(2))
        wait_for(lambda: _count(db) == 2, what="second mail stored")
        assert stop(second) == 0
        out = (tmp_path / "second.log").read_text()
        assert "IDLE stopped on request" in out, out
        assert _holder(db) is None  # released on SIGTERM
        assert int(db.fetchone("SELECT COUNT(*) AS n FROM jobs")["n"]) == 2
    finally:
        for p in (first, second):
            if p is not None:
                stop(p)


def test_idle_refuses_a_reissue_interval_beyond_the_rfc_limit(env, mailbox):
    result = run_cli("idle", env_extra={**_env(env, mailbox.config),
                                        "EMAIL_RAG_IDLE_REFRESH_SECONDS": "1800"})
    assert result.returncode == 1
    assert "RFC 2177" in result.stdout + result.stderr
