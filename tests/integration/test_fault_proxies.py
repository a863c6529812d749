"""The IMAP fault proxies the IDLE tests and chaos runs use (email_rag_harness.testing)."""

from __future__ import annotations

import socket
import time

from email_rag_harness.testing.imap_proxy import ImapHidingProxy
from email_rag_harness.testing.mails import mail
from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

from email_rag.adapters.imap import IdleSession


def test_a_silenced_proxy_holds_the_servers_bytes_and_keeps_the_connection_open(mailbox):
    """GIVEN a TCP proxy in front of Dovecot WHEN it is silenced THEN a new connection gets
    no greeting but stays open; WHEN it speaks again THEN the held greeting arrives."""
    proxy = TcpFaultProxy(mailbox.host, mailbox.port)
    try:
        proxy.silence()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=0.5) as s:
            try:
                got = s.recv(100)
            except TimeoutError:
                got = None
            assert got is None  # silent, not closed (a closed one would give b"")
            proxy.speak()
            s.settimeout(30)  # the proxy's thread, then Dovecot's greeting: a busy machine
            assert s.recv(100).startswith(b"* OK")
    finally:
        proxy.close()


def test_a_mute_idle_proxy_drops_idle_notifications_but_answers_commands(mailbox):
    """GIVEN the IMAP proxy with mute_idle WHEN a mail arrives during IDLE THEN no
    notification comes through, yet DONE and later commands are answered (and the mail
    is visible to a SEARCH)."""
    with ImapHidingProxy(mailbox.host, mailbox.port) as proxy:
        proxy.mute_idle = True
        config = mailbox.config.model_copy(update={"port": proxy.port})
        session = IdleSession(config, "INBOX", timeout=30)
        try:
            assert session.start()
            mailbox.append(mail(1))
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                assert not session.wait(0.2).new_mail
            session.refresh()
            assert proxy.hidden >= 1
            proxy.mute_idle = False
            mailbox.append(mail(2))
            deadline = time.monotonic() + 60  # Dovecot notices and tells: generous on CI
            while not session.wait(0.2).new_mail:
                assert time.monotonic() < deadline, "notification after unmuting"
        finally:
            session.close()


def test_a_blackholed_client_hangs_while_every_other_client_of_the_proxy_is_served(settings):
    """GIVEN two MariaDB clients through one TCP proxy WHEN the proxy blackholes the first
    client (its open connection and its new ones) THEN its statement gets no answer and
    fails by its read timeout, the second client is served meanwhile, and once the
    blackhole ends the first client reconnects and is served again (chaos:
    db_blackhole_worker)."""
    from email_rag.core.errors import DatabaseUnavailableError
    from email_rag.db.connection import Database

    proxy = TcpFaultProxy(settings.db_host, settings.db_port)
    s = settings.model_copy(update={"db_port": proxy.port, "db_read_timeout": 2,
                                    "db_connect_timeout": 2})
    held, other = Database.from_settings(s), Database.from_settings(s)
    try:
        assert held.ping()
        [peer] = proxy._peers  # noqa: SLF001 - the first client's address, as the fault sees it
        assert proxy.blackhole(lambda p: p == peer) == [peer]
        assert other.ping()  # a new connection of another client is served
        started = time.monotonic()
        try:
            held.fetchone("SELECT 1 AS one")
            raise AssertionError("a blackholed connection answered")
        except DatabaseUnavailableError:
            pass
        assert time.monotonic() - started < 10
        assert other.fetchone("SELECT 2 AS two") == {"two": 2}
        proxy.blackhole(None)
        held.reconnect()
        assert held.fetchone("SELECT 3 AS three") == {"three": 3}
    finally:
        held.close()
        other.close()
        proxy.close()
