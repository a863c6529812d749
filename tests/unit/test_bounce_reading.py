"""Reading bounces (email_rag/ingest/bounces.py, pure): which of our messages failed, why."""

from __future__ import annotations

from email_rag.ingest.bounces import read_bounce

OURS = "email-rag.invalid"


def exim_with_original(message_id: str) -> bytes:
    """A DSN that carries the whole original message (message/rfc822), as Exim sends it."""
    return f"""From: Mail Delivery System <Mailer-Daemon@mx.customer.example>
To: support@example.com
Subject: Mail delivery failed: returning message to sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="X"

--X
Content-Type: text/plain

This message was created automatically by mail delivery software.

--X
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.customer.example

Action: failed
Final-Recipient: rfc822;bob@customer.example
Status: 5.0.0
Diagnostic-Code: smtp; 552 5.2.2 mailbox full

--X
Content-Type: message/rfc822

From: support@example.com
To: bob@customer.example
Message-ID: {message_id}
Subject: Re: Invoice

Dear Bob, ...
--X--
""".replace("\n", "\r\n").encode()


def test_dsn_with_the_whole_original_message_names_it_and_says_why():
    b = read_bounce(exim_with_original(f"<draft-7.abc@{OURS}>"), OURS)
    assert b is not None and b.standard
    assert b.message_ids == [f"<draft-7.abc@{OURS}>"]
    assert b.recipients == ["bob@customer.example"]
    assert "552 5.2.2 mailbox full" in b.diagnostic


def test_message_ids_of_other_domains_are_not_ours():
    b = read_bounce(exim_with_original("<someone-else@other.example>"), OURS)
    assert b is not None and b.message_ids == [] and b.recipients == ["bob@customer.example"]


def test_a_mail_that_names_nothing_is_no_bounce():
    raw = (b"From: MAILER-DAEMON@mx.example\r\nSubject: Undelivered\r\n\r\n"
           b"This is the mail system. Your message could not be delivered.\r\n")
    assert read_bounce(raw, OURS) is None
