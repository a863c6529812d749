"""IMAP failures: backoff state in the mailboxes row, and recovery gets every mail once."""

from __future__ import annotations

import json
import time

import pytest
from email_rag_harness.testing.mails import mail
from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

from email_rag.ingest.poller import Poller
from email_rag.ops.health import counts
from tests.integration.ingest_helpers import (
    closed_port,
    emails,
    events,
    jobs,
    mailbox_row,
    services_for,
    silent_server,
    with_port,
)


def _poll(settings, config, **overrides):
    svc = services_for(settings, config, **overrides)
    try:
        return Poller(svc).poll(), svc.settings
    finally:
        svc.close()


def test_imap_down_records_backoff_then_recovery_gets_everything_once(settings, db, mailbox):
    """GIVEN the server is unreachable WHEN polled THEN failure, backoff and last error are in
    the mailboxes row and shown by status; AFTER it is back every mail arrives exactly once."""
    mailbox.append_many([mail(i) for i in range(1, 4)])
    down = with_port(mailbox.config, closed_port())
    result, _ = _poll(settings, down)
    mb = result.mailboxes[0]
    assert mb.status == "failed" and "connect" in mb.error and mb.consecutive_failures == 1
    row = mailbox_row(db, mailbox.name)
    assert row["consecutive_failures"] == 1 and row["failing_since"] is not None
    assert row["backoff_until"] is not None and row["last_error_at"] is not None
    assert "ImapError" in row["last_error"] and not row["needs_attention"]
    # in backoff: skipped without touching the server, counters unchanged
    db.execute("UPDATE mailboxes SET backoff_until = NOW(6) + INTERVAL 60 SECOND")
    waiting, _ = _poll(settings, down)
    assert waiting.mailboxes[0].status == "backoff" and "backoff" in waiting.mailboxes[0].error
    assert mailbox_row(db, mailbox.name)["consecutive_failures"] == 1
    # due again: tried again, still down
    db.execute("UPDATE mailboxes SET backoff_until = NOW(6) - INTERVAL 1 SECOND")
    again, _ = _poll(settings, down)
    assert again.mailboxes[0].status == "failed"
    assert mailbox_row(db, mailbox.name)["consecutive_failures"] == 2
    db.execute("UPDATE mailboxes SET backoff_until = NOW(6) + INTERVAL 60 SECOND")
    # the status command shows it (the alarm is for a mailbox that never succeeded)
    svc = services_for(settings, mailbox, imap_alarm_after_seconds=0)
    [health] = counts(svc).mailboxes
    assert health.consecutive_failures == 2 and health.failing_since and health.alarm
    svc.close()
    # back up: forced poll (an operator, or the next run after backoff) gets all three once
    recovered, _ = _poll(settings, mailbox)
    assert recovered.mailboxes[0].status == "backoff"
    svc = services_for(settings, mailbox)
    ok = Poller(svc).poll(force=True)
    svc.close()
    assert ok.totals["new"] == 3 and len(emails(db)) == 3 and len(jobs(db)) == 3
    row = mailbox_row(db, mailbox.name)
    assert (row["consecutive_failures"], row["backoff_until"], row["failing_since"]) == (0, None, None)
    assert row["last_success_at"] is not None
    assert [e["attempt"] for e in events(db, "poll_failed")] == [1, 2]
    [recovered_event] = events(db, "poll_recovered")
    assert json.loads(recovered_event["detail"])["after_failures"] == 2


def test_backoff_grows_exponentially_and_is_capped(settings, db, mailbox):
    down = with_port(mailbox.config, closed_port())
    delays = []
    for _ in range(5):
        _poll(settings, down, imap_backoff_base=1.0, imap_backoff_cap=6.0)
        detail = json.loads(events(db, "poll_failed")[-1]["detail"])
        delays.append(detail["retry_in_seconds"])
        db.execute("UPDATE mailboxes SET backoff_until = NULL")  # let the next try happen now
    assert delays[0] < delays[1] < delays[2]  # 1, 2, 4 (+-20 % jitter)
    assert all(d <= 6.0 for d in delays) and delays[4] >= 4.8
    assert mailbox_row(db, mailbox.name)["consecutive_failures"] == 5  # never given up


def test_auth_failure_needs_attention_and_keeps_the_password_secret(settings, db, mailbox):
    from pydantic import SecretStr

    wrong = mailbox.config.model_copy(update={"password": SecretStr("Hunter2-wrong")})
    result, _ = _poll(settings, wrong)
    mb = result.mailboxes[0]
    assert mb.status == "failed" and mb.needs_attention and "refused" in mb.error
    row = mailbox_row(db, mailbox.name)
    assert row["needs_attention"] == 1 and "ImapAuthError" in row["last_error"]
    assert "Hunter2" not in row["last_error"]
    assert "Hunter2" not in json.dumps([dict(e) for e in events(db, "poll_failed")], default=str)
    # still on the schedule: not retried before backoff_until, retried after it
    db.execute("UPDATE mailboxes SET backoff_until = NOW(6) + INTERVAL 60 SECOND")
    assert _poll(settings, wrong)[0].mailboxes[0].status == "backoff"
    db.execute("UPDATE mailboxes SET backoff_until = NULL")
    mailbox.append(mail(1))
    fixed, _ = _poll(settings, mailbox)
    assert fixed.totals["new"] == 1 and mailbox_row(db, mailbox.name)["needs_attention"] == 0


def test_timeout_of_a_silent_server_is_a_failure_with_backoff(settings, db, mailbox):
    with silent_server() as port:
        started = time.monotonic()
        result, _ = _poll(settings, with_port(mailbox.config, port), imap_timeout=0.3)
    assert time.monotonic() - started < 5
    assert result.mailboxes[0].status == "failed" and "timed out" in result.mailboxes[0].error
    assert mailbox_row(db, mailbox.name)["consecutive_failures"] == 1


def test_connection_cut_mid_fetch_keeps_committed_batches_and_resumes(settings, db, mailbox):
    """GIVEN a proxy that cuts the server off after ~40 KB WHEN polling 60 mails of ~2 KB in
    batches of 5 THEN the first batches are committed, the failure recorded, and after the
    network heals the next poll stores the rest: every mail exactly once."""
    mailbox.deliver([mail(i, size=2000) for i in range(60)])
    proxy = TcpFaultProxy(mailbox.host, mailbox.port)
    try:
        proxy.cut_after(40_000)
        via_proxy = with_port(mailbox.config, proxy.port)
        cut, _ = _poll(settings, via_proxy, imap_fetch_batch=5)
        mb = cut.mailboxes[0]
        assert mb.status == "failed"
        stored = len(emails(db, "id"))
        assert 0 < stored < 60  # some batches committed before the cut, not all
        assert db.fetchone("SELECT last_uid FROM mailbox_cursors")["last_uid"] == stored
        proxy.cut_after(None)
        svc = services_for(settings, via_proxy, imap_fetch_batch=5)
        healed = Poller(svc).poll(force=True)
        svc.close()
    finally:
        proxy.close()
    assert healed.totals["fetched"] == 60 - stored and healed.totals["duplicate"] == 0
    assert db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT message_id) d FROM emails") == {
        "n": 60, "d": 60}
    assert len(jobs(db)) == 60


@pytest.mark.parametrize("folders", [["INBOX", "Missing"]])
def test_a_missing_folder_fails_the_mailbox_visibly(settings, db, mailbox, folders):
    mailbox.append(mail(1))
    result, _ = _poll(settings, mailbox.config.model_copy(update={"folders": folders}))
    mb = result.mailboxes[0]
    assert mb.status == "failed" and "Missing" in mb.error
    assert len(emails(db)) == 1  # INBOX before it was stored
    assert "Missing" in mailbox_row(db, mailbox.name)["last_error"]
