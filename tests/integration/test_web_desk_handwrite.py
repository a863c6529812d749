"""A reply written by hand for a mail kept for a human (real MariaDB, Redis and a local
SMTP relay): staff of the mailbox write it on the mail page to a typed address; it becomes
a draft of source ``manual`` that goes through the same approval and exactly-once send as
a generated draft; a bad address is refused with the typed text kept; nobody outside the
mailbox gets near it."""

from __future__ import annotations

import email
import html as htmllib

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.auth import users
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services
from tests.factories import make_email, make_mailbox
from tests.webutil import web_app

RAW = (
    b"From: <>\r\nTo: support@example.com\r\nSubject: Bestellung 4711\r\n"
    b"Message-ID: <manual-hand@example.org>\r\n\r\nBitte rufen Sie mich an.\r\n"
)
TEXT = "Guten Tag,\n\nwir haben Ihre Bestellung 4711 gefunden.\n\nIhr Support-Team\n"


class SentFolder:
    def __init__(self):
        self.messages: list[bytes] = []

    def contains(self, message_id: str) -> bool:
        return any(email.message_from_bytes(m)["Message-ID"] == message_id for m in self.messages)

    def append(self, message: bytes) -> None:
        self.messages.append(message)


@pytest.fixture
def sent():
    return SentFolder()


@pytest.fixture
def relay(sent):
    with FaultSmtpServer(file_to=sent.append) as server:
        yield server


@pytest.fixture
def app(settings, db, relay):
    settings.smtp_port = relay.port
    settings.retry_jitter = 0
    return web_app(settings, db, {"anna": "staff", "otto": "staff", "root": "admin"})


@pytest.fixture
def manual(db) -> int:
    """A mail kept for a human in anna's mailbox: no sender address, no draft."""
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    assert sales
    users.set_mailbox(db, "anna", "support", True, "test")
    users.set_mailbox(db, "otto", "sales", True, "test")
    return make_email(
        db,
        support,
        status="manual",
        subject="Bestellung 4711",
        body="Bitte rufen Sie mich an.",
        from_addr=None,
        from_name=None,
        raw=RAW,
        message_id="<manual-hand@example.org>",
        reply_addr=None,
        reply_rule="no sender address in From: nobody to reply to",
    )


def _count(db, query, *args) -> int:
    return int(db.fetchone(query, args)["n"])


def test_a_manual_mail_gets_a_hand_written_reply_approved_and_sent_once(
    client, db, manual, settings, relay, sent
):
    """GIVEN a manual mail without a sender WHEN anna writes a reply on its page to a typed
    address and approves the draft THEN it is a draft of source manual, the mail moved
    manual -> draft_ready audited as user:anna, the send job delivers exactly one message
    to the typed address (a second approval and a second run of the job send nothing
    more), approved by user:anna."""
    anna = client("anna")
    page = anna.get(f"/mails/{manual}").text
    assert f'action="/mails/{manual}/reply"' in page and 'name="to" value=""' in page
    r = anna.post(
        f"/mails/{manual}/reply",
        data={"csrf_token": anna.csrf, "to": "Klara Kunde <klara@kunde.example>", "body": TEXT},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    draft = int(r.headers["location"].rsplit("/", 1)[1])
    row = db.fetchone(
        "SELECT status, source, body_draft, subject FROM drafts WHERE id = %s", (draft,)
    )
    assert row == {
        "status": "pending_review",
        "source": "manual",
        "body_draft": TEXT,
        "subject": "Re: Bestellung 4711",
    }
    mail = db.fetchone("SELECT status, reply_addr, reply_rule FROM emails WHERE id = %s", (manual,))
    assert mail == {
        "status": "draft_ready",
        "reply_addr": "klara@kunde.example",
        "reply_rule": "typed by user:anna",
    }
    moved = db.fetchone(
        "SELECT actor, from_state, to_state FROM audit_log WHERE entity_id = %s"
        " AND event = 'reply_written_by_hand'",
        (str(manual),),
    )
    assert moved == {"actor": "user:anna", "from_state": "manual", "to_state": "draft_ready"}
    assert "klara@kunde.example" not in str(db.fetchall("SELECT detail FROM audit_log"))
    assert "klara@kunde.example" in anna.get(f"/drafts/{draft}").text

    for _ in range(2):  # a double click
        r = anna.post(
            f"/drafts/{draft}/approve",
            data={"csrf_token": anna.csrf, "body": TEXT},
            follow_redirects=False,
        )
        assert r.status_code == 303
    job = db.fetchone("SELECT id FROM jobs WHERE draft_id = %s AND kind = 'send_draft'", (draft,))
    svc = Services(settings)
    try:
        worker = JobRunner(svc, "w1", pipeline=[])
        worker._handlers = {
            **worker.handlers(),
            "send_draft": SendService(svc, sent_folder=lambda _: sent).run,
        }
        assert worker.run(job["id"]) == "done"
        worker.run(job["id"])  # a duplicate delivery of the job
    finally:
        svc.close()
    assert len(relay.received) == 1
    msg = email.message_from_bytes(relay.received[0].data)
    assert msg["To"] == "klara@kunde.example" and msg["In-Reply-To"] == "<manual-hand@example.org>"
    assert "Bestellung 4711 gefunden" in msg.get_payload(decode=True).decode()
    assert _count(db, "SELECT COUNT(*) AS n FROM send_attempts WHERE draft_id = %s", draft) == 1
    approved = db.fetchall(
        "SELECT actor FROM audit_log WHERE entity_type = 'draft' AND "
        "entity_id = %s AND event = 'approved'",
        (str(draft),),
    )
    assert approved == [{"actor": "user:anna"}]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (manual,))["status"] == "sent"


@pytest.mark.parametrize(
    "typed",
    [
        "klara@kunde.example\r\nBcc: all@victim.example",
        "klara@kunde.example\nSubject: x",
        "klara@kunde.example, zweite@kunde.example",
        "keine adresse",
        "",
    ],
)
def test_a_bad_address_is_refused_with_the_text_kept_and_nothing_written(client, db, manual, typed):
    """GIVEN the manual mail WHEN anna types a recipient with a line break (header
    injection), two addresses, no address or none at all THEN the page answers 400 with
    the reason and her text still in the form; no draft, no change of the mail."""
    anna = client("anna")
    r = anna.post(
        f"/mails/{manual}/reply", data={"csrf_token": anna.csrf, "to": typed, "body": TEXT}
    )
    assert r.status_code == 400
    page = htmllib.unescape(r.text)
    assert "Not saved:" in page and "Bestellung 4711 gefunden" in page
    assert ("line break" in page) == ("\n" in typed)
    assert _count(db, "SELECT COUNT(*) AS n FROM drafts") == 0
    mail = db.fetchone("SELECT status, reply_addr FROM emails WHERE id = %s", (manual,))
    assert mail == {"status": "manual", "reply_addr": None}


def test_a_user_without_the_mailbox_gets_404_and_writes_nothing(client, db, manual):
    """GIVEN the manual mail in anna's mailbox WHEN otto (another mailbox) opens it or
    posts a reply THEN 404 both times, nothing written; anonymous: the login page."""
    otto = client("otto")
    assert otto.get(f"/mails/{manual}").status_code == 404
    r = otto.post(
        f"/mails/{manual}/reply",
        data={"csrf_token": otto.csrf, "to": "klara@kunde.example", "body": TEXT},
    )
    assert r.status_code == 404
    assert _count(db, "SELECT COUNT(*) AS n FROM drafts") == 0
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (manual,))["status"] == "manual"


def test_a_mail_whose_reply_is_under_way_is_not_written_again(client, db, manual):
    """GIVEN a mail already approved (its send under way) WHEN anna posts a reply by hand
    THEN it is refused (400, nothing written) and its page offers no form."""
    db.execute("UPDATE emails SET status = 'approved' WHERE id = %s", (manual,))
    anna = client("anna")
    assert f'action="/mails/{manual}/reply"' not in anna.get(f"/mails/{manual}").text
    r = anna.post(
        f"/mails/{manual}/reply",
        data={"csrf_token": anna.csrf, "to": "klara@kunde.example", "body": TEXT},
    )
    assert r.status_code == 400
    assert _count(db, "SELECT COUNT(*) AS n FROM drafts") == 0
