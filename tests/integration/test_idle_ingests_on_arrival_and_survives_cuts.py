"""IMAP IDLE against the private Dovecot: push ingestion through the normal poll path."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from email_rag_harness.testing.dovecot import Dovecot
from email_rag_harness.testing.imap_proxy import ImapHidingProxy
from email_rag_harness.testing.mails import mail
from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

from email_rag.core.settings import MailboxConfig, get_settings
from email_rag.ingest.idle import IdleWatcher
from email_rag.ops.health import MailboxHealth, counts
from email_rag.wiring.services import Services

QUIET = {  # no safety poll, no re-issue, no backoff worth waiting for, unless a test says so
    "EMAIL_RAG_POLL_INTERVAL_SECONDS": "3600",
    "EMAIL_RAG_IDLE_REFRESH_SECONDS": "1500",
    "EMAIL_RAG_IDLE_WAIT_SECONDS": "0.2",
    "EMAIL_RAG_IMAP_BACKOFF_BASE": "0.2",
    "EMAIL_RAG_IMAP_BACKOFF_CAP": "1",
    "EMAIL_RAG_IMAP_TIMEOUT": "3",
}


@pytest.fixture
def idle_env(env, monkeypatch):
    def configure(**overrides: str) -> None:
        for k, v in {**QUIET, **overrides}.items():
            monkeypatch.setenv(k, v)
        get_settings.cache_clear()
    configure()
    return configure


def until(predicate: Callable[[], object], timeout: float = 60.0, what: str = "") -> float:
    """Wait for ``predicate``; returns the seconds it took (fails the test on timeout: a
    generous one, the watcher thread and Dovecot share a busy machine with the test)."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.02)
    return time.monotonic() - started


@contextmanager
def watching(config: MailboxConfig) -> Iterator[IdleWatcher]:
    """An IDLE watcher in a thread with its own services; stopped and joined at the end."""
    svc = Services(get_settings())
    watcher = IdleWatcher(svc, config, keep_polls=True)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        watcher.stop.set()
        thread.join(60)
        svc.close()
        assert not thread.is_alive(), "the watcher did not stop"


def started(watcher: IdleWatcher) -> bool:
    """Holding the lease, IDLE connections open (or none: no IDLE) and the catch-up done."""
    return watcher.holding.is_set() and len(watcher.stats.polls) >= 1


def mailbox_health() -> MailboxHealth:
    svc = Services(get_settings())
    try:
        [health] = counts(svc).mailboxes
        return health
    finally:
        svc.close()


def mails(db) -> list[dict]:
    return db.fetchall("SELECT id, message_id FROM emails ORDER BY id")


def jobs(db) -> int:
    return int(db.fetchone("SELECT COUNT(*) AS n FROM jobs")["n"])


def test_a_mail_appended_while_idling_is_stored_without_a_scheduled_poll(idle_env, db, mailbox):
    """GIVEN a watcher IDLEing on INBOX, no safety poll and no re-issue due for an hour
    WHEN a mail is APPENDed THEN it is stored with its job by a poll the notification
    triggered (not a scheduled one), within a second or so."""
    with watching(mailbox.config) as watcher:
        until(lambda: started(watcher), what="watcher started")
        assert watcher.stats.idle_supported is True and watcher.stats.sessions == 1
        assert mailbox_health().held_by == watcher.owner  # `email-rag status` shows it
        mailbox.append(mail(1))
        took = until(lambda: len(mails(db)) == 1, what="mail stored")
        assert jobs(db) == 1
        until(lambda: watcher.stats.notifications >= 1, what="counted as a notification")
        assert watcher.stats.safety_polls == 0 and watcher.stats.refreshes == 0
        assert took < 10  # measured ~0.6 s; the benchmark reports the distribution


def test_a_cut_idle_connection_is_reestablished_and_nothing_is_lost_or_doubled(
        idle_env, db, mailbox):
    """GIVEN a watcher IDLEing through a proxy WHEN every connection is cut and a mail
    arrives while it is cut THEN the failure is recorded with backoff, the connection is
    opened again, the mail is stored by the catch-up poll, a later mail by the
    notification, and each mail exists exactly once with exactly one job."""
    proxy = TcpFaultProxy(mailbox.host, mailbox.port)
    try:
        config = mailbox.config.model_copy(update={"port": proxy.port})
        with watching(config) as watcher:
            until(lambda: started(watcher), what="watcher started")
            mailbox.append(mail(1))
            until(lambda: len(mails(db)) == 1, what="first mail stored")
            proxy.sever()
            mailbox.append(mail(2))  # straight into Dovecot while the watcher is cut off
            until(lambda: len(mails(db)) == 2, what="mail of the cut stored after reconnect")
            assert watcher.stats.failures >= 1 and watcher.stats.sessions >= 2
            until(lambda: watcher.holding.is_set() and watcher.stats.sessions >= 2
                  and len(watcher.stats.polls) >= 3, what="IDLE again after the catch-up")
            mailbox.append(mail(3))
            until(lambda: len(mails(db)) == 3, what="mail after the reconnect stored")
        rows = mails(db)
        assert len({r["message_id"] for r in rows}) == 3 and jobs(db) == 3
        failed = db.fetchall("SELECT event FROM audit_log WHERE event = 'poll_failed'")
        assert failed, "the cut is audited as a mailbox failure"
        assert db.fetchone("SELECT consecutive_failures AS n FROM mailboxes")["n"] == 0
    finally:
        proxy.close()


def test_two_idlers_on_one_mailbox_one_holds_the_lease_the_other_takes_over(
        idle_env, db, mailbox, caplog):
    """GIVEN two IDLE processes (watchers with their own owners and connections) on one
    mailbox THEN exactly one holds the lease and the other waits; a mail is stored once;
    WHEN the holder stops THEN the waiting one takes over and stores the next mail."""
    def waits_seen() -> int:  # only a watcher that finds the lease held logs this line
        return sum(f"lease held by {first.owner}; waiting" in r.getMessage()
                   for r in list(caplog.records))

    with caplog.at_level(logging.DEBUG, logger="email_rag.ingest.idle"), \
            watching(mailbox.config) as first:
        until(lambda: started(first), what="first watcher started")
        with watching(mailbox.config) as second:
            # the second one tried several times (idle_wait_seconds 0.2) and found it held
            until(lambda: waits_seen() >= 3, what="the second watcher waited for the lease")
            assert not second.holding.is_set() and second.stats.leases == 0
            assert second.stats.sessions == 0
            mailbox.append(mail(1))
            until(lambda: len(mails(db)) == 1, what="mail stored")
            first.stop.set()
            until(lambda: started(second), what="second watcher took over")
            mailbox.append(mail(2))
            until(lambda: len(mails(db)) == 2, what="mail stored by the second watcher")
            until(lambda: second.stats.new == 1, what="counted by the second watcher")
    assert first.stats.new == 1 and jobs(db) == 2


def test_a_server_without_idle_is_polled_instead(idle_env, db):
    """GIVEN a server whose CAPABILITY has no IDLE WHEN the watcher runs THEN it opens no
    IDLE connection, says so, and polls every poll_interval_seconds: the mail is stored."""
    idle_env(EMAIL_RAG_POLL_INTERVAL_SECONDS="1")
    with Dovecot(capability="IMAP4rev1 LITERAL+ UIDPLUS") as server:
        user = server.add_user()
        with watching(user.config) as watcher:
            until(lambda: started(watcher), what="watcher started")
            assert watcher.stats.idle_supported is False and watcher.stats.sessions == 0
            user.append(mail(1))
            until(lambda: len(mails(db)) == 1, what="mail stored by polling")
            assert watcher.stats.safety_polls >= 1 and watcher.stats.missed == 0


def test_idle_is_reissued_before_the_server_limit_and_each_reissue_counts_as_alive(
        idle_env, db, mailbox):
    """GIVEN a short re-issue interval WHEN the watcher runs THEN it ends and re-issues
    IDLE repeatedly, polls after each re-issue and records the mailbox's success (what the
    liveness alarm watches)."""
    idle_env(EMAIL_RAG_IDLE_REFRESH_SECONDS="0.3")
    with watching(mailbox.config) as watcher:
        until(lambda: watcher.stats.refreshes >= 3, what="three re-issues")
        first = db.fetchone("SELECT last_success_at FROM mailboxes")["last_success_at"]
        until(lambda: db.fetchone("SELECT last_success_at FROM mailboxes")["last_success_at"]
              > first, what="success recorded again after a re-issue")
        mailbox.append(mail(1))
        until(lambda: len(mails(db)) == 1, what="mail stored")
    assert watcher.stats.alarms == 0 and watcher.stats.failures == 0


def test_a_silent_idle_connection_raises_an_alarm_and_is_opened_again(
        idle_env, db, mailbox, caplog):
    """GIVEN a watcher IDLEing through a proxy WHEN the server goes silent without closing
    (nothing comes back) THEN the next re-issue is not answered: an ALARM line, the failure
    recorded on the mailbox (status shows it failing); WHEN the server speaks again THEN
    IDLE is re-established and a mail that arrived meanwhile is stored once."""
    idle_env(EMAIL_RAG_IDLE_REFRESH_SECONDS="1", EMAIL_RAG_IMAP_TIMEOUT="1")
    proxy = TcpFaultProxy(mailbox.host, mailbox.port)
    try:
        config = mailbox.config.model_copy(update={"port": proxy.port})
        with caplog.at_level(logging.ERROR, logger="email_rag.ingest.idle"), \
                watching(config) as watcher:
            until(lambda: started(watcher), what="watcher started")
            proxy.silence()
            mailbox.append(mail(1))
            until(lambda: watcher.stats.alarms >= 1, what="silent connection noticed")
            # the watcher counts the alarm, then logs it: wait for the line, not just the count
            until(lambda: any(r.getMessage().startswith("ALARM") for r in list(caplog.records)),
                  what="ALARM logged")
            until(lambda: db.fetchone("SELECT failing_since FROM mailboxes")["failing_since"],
                  what="the failure recorded on the mailbox")
            assert db.fetchone("SELECT last_error FROM mailboxes")["last_error"]
            assert mailbox_health().failing_since  # what `email-rag status` shows
            proxy.speak()
            until(lambda: len(mails(db)) == 1, what="mail stored after the server spoke again")
            until(lambda: watcher.holding.is_set() and watcher.stats.refreshes >= 1
                  and db.fetchone("SELECT failing_since FROM mailboxes")["failing_since"]
                  is None, what="IDLE healthy again")
        assert len(mails(db)) == 1 and jobs(db) == 1
    finally:
        proxy.close()


def test_a_server_that_stops_notifying_loses_latency_not_mail(idle_env, db, mailbox):
    """GIVEN a server that keeps answering commands but sends no IDLE notifications
    WHEN a mail arrives THEN the safety poll stores it and counts it as not announced."""
    idle_env(EMAIL_RAG_POLL_INTERVAL_SECONDS="2")
    with ImapHidingProxy(mailbox.host, mailbox.port) as proxy:
        proxy.mute_idle = True
        config = mailbox.config.model_copy(update={"port": proxy.port})
        with watching(config) as watcher:
            until(lambda: started(watcher), what="watcher started")
            mailbox.append(mail(1))
            until(lambda: len(mails(db)) == 1, what="mail stored by the safety poll")
            until(lambda: watcher.stats.missed == 1, what="counted as not announced")
            # the server's notification may reach the proxy after the safety poll stored the
            # mail: wait until the proxy has held it back, then check nothing got through
            until(lambda: proxy.hidden >= 1, what="the notification held back by the proxy")
            assert watcher.stats.notifications == 0
