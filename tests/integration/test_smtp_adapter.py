"""The SMTP adapter against the real aiosmtpd fault server: each row of its failure table."""

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer, free_port

from email_rag.adapters.smtp import SmtpConfig, SmtpSender
from email_rag.core.errors import SmtpOutcomeUnknownError, SmtpPermanentError, SmtpTransientError

MSG = (b"Message-ID: <m1@email-rag.invalid>\r\nFrom: support@example.com\r\n"
       b"To: alice@example.org\r\nSubject: Re: hi\r\n\r\nHello.\r\n.leading dot line\r\n")


@pytest.fixture
def smtp():
    with FaultSmtpServer() as server:
        yield server


def sender(server, timeout=2.0):
    return SmtpSender(SmtpConfig("127.0.0.1", server.port, timeout=timeout, security="plain"))


def test_accepted_message_is_recorded_once_with_dot_stuffing_undone(smtp):
    answer = sender(smtp).send(MSG, "support@example.com", ["alice@example.org"])
    assert answer.startswith("250")
    assert smtp.count("<m1@email-rag.invalid>") == 1
    assert b"\r\n.leading dot line" in smtp.received[0].data


@pytest.mark.parametrize("stage", ["mail", "rcpt", "data"])
def test_4xx_is_transient_and_nothing_was_received(smtp, stage):
    smtp.add_fault("451 4.3.0 try again later", stage=stage)
    with pytest.raises(SmtpTransientError, match="451"):
        sender(smtp).send(MSG, "support@example.com", ["alice@example.org"])
    assert smtp.received == []


def test_421_service_not_available_is_transient(smtp):
    smtp.add_fault("421 4.3.2 shutting down", stage="mail")
    with pytest.raises(SmtpTransientError, match="421"):
        sender(smtp).send(MSG, "support@example.com", ["alice@example.org"])


@pytest.mark.parametrize("stage", ["rcpt", "data"])
def test_5xx_is_permanent_with_the_server_answer(smtp, stage):
    smtp.add_fault("550 5.1.1 mailbox unavailable", stage=stage)
    with pytest.raises(SmtpPermanentError, match="550 5.1.1 mailbox unavailable"):
        sender(smtp).send(MSG, "support@example.com", ["alice@example.org"])
    assert smtp.received == []


def test_dropped_connection_before_data_is_transient(smtp):
    smtp.add_fault("drop", stage="rcpt")
    with pytest.raises(SmtpTransientError):
        sender(smtp).send(MSG, "support@example.com", ["alice@example.org"])
    assert smtp.received == []


def test_timeout_after_the_server_accepted_is_outcome_unknown(smtp):
    smtp.add_fault("stall", stage="data", seconds=6.0)  # well past the timeout; and the
    with pytest.raises(SmtpOutcomeUnknownError, match="may have accepted"):  # commands before
        sender(smtp, timeout=2.0).send(MSG, "support@example.com", ["alice@example.org"])
    assert smtp.count("<m1@email-rag.invalid>") == 1  # it was received after all


def test_connection_refused_is_transient():
    with pytest.raises(SmtpTransientError, match="cannot connect"):
        SmtpSender(SmtpConfig("127.0.0.1", free_port(), timeout=1)).send(MSG, "a@b", ["c@d"])
