"""Bounces linked back (issue 16): a bounce for a reply we sent, arriving in the private
Dovecot inbox and stored by the poller, moves its send attempt to `bounced` and puts the
mail back to review - in the poll's own transaction."""

from __future__ import annotations

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.core.records import SendAttempt
from email_rag.db.audit import events_for
from email_rag.ingest.poller import Poller
from email_rag.review.queue import QueueQuery, queue_page
from email_rag.sending import review
from email_rag.sending.outcome import send_outcome_text
from tests.integration.ingest_helpers import services_for
from tests.integration.test_send_outcomes import MemoryRunner, attempt_of
from tests.integration.test_sending import MemorySentFolder, draft_for, send_job


def dsn(original_message_id: str, rcpt: str = "alice@customer.example",
        action: str = "failed", diag: str = "smtp; 550 5.1.1 <alice@customer.example>: "
        "Recipient address rejected: User unknown") -> bytes:
    """A DSN as Postfix writes it (RFC 3464), with the original message's headers."""
    return f"""From: MAILER-DAEMON@mx.customer.example (Mail Delivery System)
To: support@example.com
Subject: Undelivered Mail Returned to Sender
Message-ID: <dsn-{abs(hash(original_message_id + action))}@mx.customer.example>
Date: Mon, 30 Nov 2026 10:00:00 +0000
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="B1"

--B1
Content-Type: text/plain; charset=us-ascii

I'm sorry to have to inform you that your message could not be delivered.

--B1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.customer.example

Final-Recipient: rfc822; {rcpt}
Original-Recipient: rfc822;{rcpt}
Action: {action}
Status: 5.1.1
Diagnostic-Code: {diag}

--B1
Content-Type: text/rfc822-headers

From: support@example.com
To: {rcpt}
Subject: Re: Printer broken
Message-ID: {original_message_id}

--B1--
""".replace("\n", "\r\n").encode()


def plain_bounce(quoted: str) -> bytes:
    """A common non-standard bounce: free text from MAILER-DAEMON quoting the original."""
    return f"""From: Mail Delivery Subsystem <mailer-daemon@old-mx.customer.example>
To: support@example.com
Subject: failure notice
Message-ID: <plain-{abs(hash(quoted))}@old-mx.customer.example>
Date: Mon, 30 Nov 2026 10:00:00 +0000

Hi. This is the qmail-send program at old-mx.customer.example.
I'm afraid I wasn't able to deliver your message to the following addresses.
This is a permanent error; I've given up. Sorry it didn't work out.

<alice@customer.example>:
mailbox is full

--- Below this line is a copy of the message.

{quoted}
""".replace("\n", "\r\n").encode()


@pytest.fixture
def world(settings, mailbox, db):
    sent = MemorySentFolder()
    with FaultSmtpServer(file_to=sent.append) as relay:
        svc = services_for(settings, mailbox, smtp_port=relay.port, smtp_timeout=5.0,
                           retry_jitter=0)
        try:
            yield svc, relay, sent
        finally:
            svc.close()


def sent_reply(svc, db, sent):
    mail, draft = draft_for(db)
    review.approve(svc, draft, "anna")
    assert MemoryRunner(svc, sent).run(send_job(db, draft)["id"]) == "done"
    assert attempt_of(db, draft)["status"] == "sent"
    return mail, draft


def test_dsn_for_a_sent_reply_marks_it_bounced_and_returns_the_mail_to_review(world, db, mailbox):
    """GIVEN a reply the relay accepted (sent, relay_250)
    WHEN a DSN naming its Message-ID arrives in the inbox and the poller stores it
    THEN the attempt is `bounced` with the diagnostic, the draft `stale` with the bounce as
    its reason (in the staff queue), the mail `draft_ready`; approving again sends it once
    more under a new Message-ID."""
    svc, relay, sent = world
    mail, draft = sent_reply(svc, db, sent)
    first = attempt_of(db, draft)
    mailbox.append(dsn(first["message_id"]))
    Poller(svc).poll()
    a = attempt_of(db, draft)
    assert (a["status"], a["verified_by"]) == ("bounced", "bounce")
    assert "5.1.1" in a["last_error"] and "User unknown" in a["last_error"]
    bounce_mail = db.fetchone("SELECT id, status, auto_reason FROM emails WHERE id = %s",
                              (a["bounce_email_id"],))
    assert bounce_mail["status"] == "no_reply" and bounce_mail["auto_reason"]  # kept as before
    d = db.fetchone("SELECT status, stale_reason FROM drafts WHERE id = %s", (draft,))
    assert d["status"] == "stale" and "bounced" in d["stale_reason"] and "5.1.1" in d["stale_reason"]
    m = db.fetchone("SELECT status, status_reason FROM emails WHERE id = %s", (mail,))
    assert m["status"] == "draft_ready" and "bounced" in m["status_reason"]
    assert [r.id for r in queue_page(svc, None, QueueQuery()).rows] == [draft]  # staff see it
    assert send_outcome_text(SendAttempt.from_row(a)).startswith("bounced — the reply did not arrive: ")
    assert "bounced" in [e["event"] for e in events_for(db, "send_attempt", a["id"])]
    # the same DSN delivered again changes nothing
    mailbox.append(dsn(first["message_id"]) + b"\r\n")
    Poller(svc).poll()
    assert attempt_of(db, draft)["status"] == "bounced"
    # approved again: a new Message-ID (the bounced copy is in the Sent folder), sent once
    again = review.approve(svc, draft, "anna")
    assert again.message_id != first["message_id"]
    assert MemoryRunner(svc, sent).run(send_job(db, draft)["id"]) == "done"
    a = attempt_of(db, draft)
    assert (a["status"], a["verified_by"]) == ("sent", "relay_250")
    assert relay.count(again.message_id) == 1 and relay.count(first["message_id"]) == 1


def test_non_standard_bounce_quoting_the_original_message_id_is_linked(world, db, mailbox):
    svc, _, sent = world
    _, draft = sent_reply(svc, db, sent)
    message_id = attempt_of(db, draft)["message_id"]
    mailbox.append(plain_bounce(f"From: support@example.com\nMessage-ID: {message_id}\n"
                                "Subject: Re: Printer broken\n\nDear Alice, ..."))
    Poller(svc).poll()
    a = attempt_of(db, draft)
    assert a["status"] == "bounced" and "mailbox is full" in a["last_error"]


def test_non_standard_bounce_without_message_id_is_linked_by_recipient(world, db, mailbox):
    svc, _, sent = world
    _, draft = sent_reply(svc, db, sent)
    mailbox.append(plain_bounce("Subject: Re: Printer broken\n\n(the body only)"))
    Poller(svc).poll()
    assert attempt_of(db, draft)["status"] == "bounced"


def test_delay_warning_is_no_bounce(world, db, mailbox):
    svc, _, sent = world
    _, draft = sent_reply(svc, db, sent)
    mailbox.append(dsn(attempt_of(db, draft)["message_id"], action="delayed",
                       diag="smtp; 451 4.4.1 try again later"))
    Poller(svc).poll()
    assert attempt_of(db, draft)["status"] == "sent"
