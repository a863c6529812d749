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


# --- what a bounce does to the attempt it names (email_rag/ingest/bounces.py match, pure) ---

def _attempt(status: str, message_id: str = f"<draft-7.abc@{OURS}>"):
    from email_rag.ingest.bounces import NamedAttempt

    return NamedAttempt.from_row({"id": 5, "draft_id": 7, "email_id": 3, "status": status,
                                  "message_id": message_id, "smtp_response": "250 ok",
                                  "recipients": "bob@customer.example"})


def _bounce(message_ids=(), recipients=("bob@customer.example",)):
    from email_rag.ingest.bounces import Bounce

    return Bounce(message_ids=list(message_ids), recipients=list(recipients))


def test_a_sent_or_unknown_attempt_named_by_its_message_id_bounces():
    from email_rag.ingest.bounces import BounceAction, match

    for status in ("sent", "unknown"):
        m = match(_attempt(status), _bounce([f"<draft-7.abc@{OURS}>"]))
        assert (m.action, m.matched_by) == (BounceAction.APPLY, "original Message-ID")


def test_an_attempt_found_by_recipient_says_so():
    from email_rag.ingest.bounces import BounceAction, match

    m = match(_attempt("sent"), _bounce([]))
    assert (m.action, m.matched_by) == (BounceAction.APPLY, "recipient")


def test_a_bounced_attempt_is_left_alone_and_others_are_not_applied():
    from email_rag.ingest.bounces import BounceAction, match

    assert match(_attempt("bounced"), _bounce()).action == BounceAction.ALREADY
    for status in ("pending", "attempted", "failed"):
        assert match(_attempt(status), _bounce()).action == BounceAction.NOT_APPLIED


def test_named_attempt_refuses_an_unknown_status():
    import pytest

    with pytest.raises(ValueError):
        _attempt("teleported")
