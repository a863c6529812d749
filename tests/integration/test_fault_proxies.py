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
