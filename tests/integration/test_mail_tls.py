"""Verified TLS to real servers: aiosmtpd (STARTTLS, implicit TLS) and Dovecot (IMAPS,
STARTTLS) with certificates made by the test. A self-signed, wrong-host or expired
certificate is refused with a message naming the host and the reason; a certificate of a
private CA is accepted once that CA is configured (``ca_file``)."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from email_rag.adapters.imap import ImapMailbox
from email_rag.adapters.smtp import SmtpConfig, SmtpSender
from email_rag.core.errors import ConfigError, ImapTlsError, SmtpTlsError
from email_rag.core.settings import MailboxConfig
from tests.mailtls import TestCA, TlsDovecot, TlsSmtpServer, free_port, self_signed

MSG = (b"Message-ID: <tls1@email-rag.invalid>\r\nFrom: support@example.com\r\n"
       b"To: alice@example.org\r\nSubject: Re: hi\r\n\r\nHello.\r\n")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pki")
    ca = TestCA(folder)
    return {"ca": ca, "good": ca.issue(["127.0.0.1", "localhost"]),
            "wrong_host": ca.issue(["mail.example.org"]),
            "expired": ca.issue(["127.0.0.1"], expired=True),
            "self_signed": self_signed(folder)}


def send(port: int, **kw) -> str:
    return SmtpSender(SmtpConfig("127.0.0.1", port, timeout=5, **kw)).send(
        MSG, "support@example.com", ["alice@example.org"])


def test_smtp_starttls_refuses_a_self_signed_certificate(pki):
    """smtplib's starttls() without a context accepts any certificate: a man in the middle
    would read the password and every reply. The adapter must refuse it."""
    with TlsSmtpServer(pki["self_signed"], "starttls") as server:
        with pytest.raises(SmtpTlsError) as refused:
            send(server.port, starttls=True)
    assert "127.0.0.1" in str(refused.value) and "certificate" in str(refused.value)
    assert server.received == []


@pytest.mark.parametrize("mode", ["starttls", "tls"])
@pytest.mark.parametrize("cert,reason", [("self_signed", "self-signed"),
                                         ("wrong_host", "mismatch"),
                                         ("expired", "expired")])
def test_smtp_refuses_a_bad_certificate_with_the_host_and_reason(pki, mode, cert, reason):
    with TlsSmtpServer(pki[cert], mode) as server:
        with pytest.raises(SmtpTlsError) as refused:
            send(server.port, security=mode, ca_file=str(pki["ca"].ca_file))
    text = str(refused.value)
    assert f"127.0.0.1:{server.port}" in text and reason in text.lower()
    assert server.received == []


@pytest.mark.parametrize("mode", ["starttls", "tls"])
def test_smtp_accepts_a_private_ca_certificate_once_the_ca_file_is_configured(pki, mode):
    with TlsSmtpServer(pki["good"], mode) as server:
        with pytest.raises(SmtpTlsError, match="unable to get local issuer"):
            send(server.port, security=mode)  # the system store does not know the test CA
        assert send(server.port, security=mode,
                    ca_file=str(pki["ca"].ca_file)).startswith("250")
    assert len(server.received) == 1


def test_smtp_plaintext_to_another_host_is_refused_before_connecting():
    with pytest.raises(ConfigError, match="plaintext is allowed only for a loopback host"):
        SmtpSender(SmtpConfig("mail.example.org", 25, security="plain"))


def test_smtp_without_security_setting_uses_starttls_for_a_remote_host():
    cfg = SmtpConfig("mail.example.org", 587)
    assert cfg.mode == "starttls"
    assert SmtpConfig("mail.example.org", 465).mode == "tls"
    assert SmtpConfig("127.0.0.1", 25).mode == "starttls"  # plaintext only when configured
    assert SmtpConfig("127.0.0.1", 25, security="plain").mode == "plain"


def test_auto_refuses_a_plaintext_loopback_smtp_server_naming_the_setting(settings):
    """'auto' (the default) means TLS for every host: a loopback relay without STARTTLS is
    refused, and the message says which setting makes plaintext explicit."""
    from email_rag_harness.testing.smtp_server import FaultSmtpServer

    with FaultSmtpServer() as relay:
        with pytest.raises(SmtpTlsError) as refused:
            send(relay.port)
        text = str(refused.value)
        assert f"127.0.0.1:{relay.port}" in text and "STARTTLS" in text
        assert "EMAIL_RAG_SMTP_SECURITY" in text and "'plain'" in text
        assert relay.received == []
        assert send(relay.port, security="plain").startswith("250")


# --- IMAP ---
@pytest.fixture(scope="module")
def dovecots(pki):
    started = {}
    try:
        for name in ("good", "wrong_host", "self_signed"):
            started[name] = TlsDovecot(pki[name]).start()
            started[name].add_user("support@example.com", "pw-1") if name == "good" else None
        yield started
    finally:
        for d in started.values():
            d.stop()


def imap_config(dovecot: TlsDovecot, mode: str, ca_file: str = "") -> MailboxConfig:
    port = dovecot.tls_port if mode == "tls" else dovecot.port
    return MailboxConfig(name="support", host="127.0.0.1", port=port, security=mode,
                         ca_file=ca_file, username="support@example.com",
                         password=SecretStr("pw-1"))


@pytest.mark.parametrize("mode", ["starttls", "tls"])
@pytest.mark.parametrize("cert,reason", [("self_signed", "self-signed"),
                                         ("wrong_host", "mismatch")])
def test_imap_refuses_a_bad_certificate_with_the_host_and_reason(pki, dovecots, mode, cert,
                                                                 reason):
    config = imap_config(dovecots[cert], mode, str(pki["ca"].ca_file))
    with pytest.raises(ImapTlsError) as refused:
        ImapMailbox(config, timeout=5).connect()
    text = str(refused.value)
    assert f"127.0.0.1:{config.port}" in text and reason in text.lower()


@pytest.mark.parametrize("mode", ["starttls", "tls"])
def test_imap_accepts_a_private_ca_certificate_once_the_ca_file_is_configured(pki, dovecots,
                                                                              mode):
    with pytest.raises(ImapTlsError, match="unable to get local issuer"):
        ImapMailbox(imap_config(dovecots["good"], mode), timeout=5).connect()
    with ImapMailbox(imap_config(dovecots["good"], mode, str(pki["ca"].ca_file)), 5) as imap:
        assert imap.select("INBOX").uidvalidity > 0
        assert imap.tls_version().startswith("TLSv1.")


def test_imap_plaintext_to_another_host_is_refused_by_the_settings():
    with pytest.raises(ValueError, match="plaintext is allowed only for a loopback host"):
        MailboxConfig(name="x", host="imap.example.org", port=143, security="plain",
                      username="u")


def test_auto_refuses_a_plaintext_loopback_imap_server_naming_the_setting(dovecot):
    """The harness's plain Dovecot on 127.0.0.1: without an explicit security 'plain' the
    mailbox wants STARTTLS, which that server does not offer: refused, nothing sent in clear."""
    user = dovecot.add_user()
    config = user.config.model_copy(update={"security": "auto"})
    assert config.mode == "starttls"
    with pytest.raises(ImapTlsError) as refused:
        ImapMailbox(config, timeout=5).connect()
    text = str(refused.value)
    assert f"127.0.0.1:{config.port}" in text and "STARTTLS" in text
    assert "security" in text and "'plain'" in text and config.name in text
    with ImapMailbox(user.config, timeout=5) as imap:  # the double configures 'plain'
        assert imap.select("INBOX").uidvalidity > 0


def test_an_unreadable_ca_file_is_a_tls_configuration_error(pki, dovecots, tmp_path):
    missing = str(tmp_path / "no-such-ca.pem")
    with pytest.raises(ImapTlsError, match="no-such-ca.pem"):
        ImapMailbox(imap_config(dovecots["good"], "tls", missing), 5).connect()
    with pytest.raises(SmtpTlsError, match="no-such-ca.pem"):
        send(free_port(), security="tls", ca_file=missing)


def test_status_checks_the_relay_the_way_a_send_opens_it(pki, settings):
    from email_rag.ops.health import check_smtp
    from tests.integration.ingest_helpers import services_for

    with TlsSmtpServer(pki["good"], "tls") as good, TlsSmtpServer(pki["self_signed"],
                                                                  "tls") as bad:
        trusted = services_for(settings, smtp_port=good.port, smtp_security="tls",
                               smtp_ca_file=str(pki["ca"].ca_file))
        untrusted = services_for(settings, smtp_port=bad.port, smtp_security="tls",
                                 smtp_ca_file=str(pki["ca"].ca_file))
        ok, refused = check_smtp(trusted), check_smtp(untrusted)
    assert ok.ok and ok.version.startswith("tls TLSv1.")
    assert not refused.ok and "self-signed" in refused.detail
