"""Approval and exactly-once sending against real MariaDB, Redis and the aiosmtpd relay."""

from __future__ import annotations

import email
import threading

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.core.errors import BadInputError, StateRefused
from email_rag.db.audit import events_for
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import review
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_mailbox

# seconds per SMTP command, and how long a stalled relay holds its answer: a healthy answer
# must come within the timeout on a busy 2-core machine (1 s left little room), a stalled
# one well after it
SMTP_TIMEOUT = 2.0
SMTP_STALL = 6.0


class MemorySentFolder:
    """Stands in for the IMAP Sent folder in these tests (the IMAP adapter has its own)."""

    def __init__(self):
        self.messages: list[bytes] = []
        self.fail = False

    def contains(self, message_id: str) -> bool:
        if self.fail:
            from email_rag.core.errors import ImapError

            raise ImapError("IMAP down")
        return any(email.message_from_bytes(m)["Message-ID"] == message_id for m in self.messages)

    def append(self, message: bytes) -> None:
        self.messages.append(message)


@pytest.fixture
def sent():
    return MemorySentFolder()


@pytest.fixture
def relay(sent):
    """The relay files every accepted message in the Sent folder (like Exchange/Gmail)."""
    with FaultSmtpServer(file_to=sent.append) as server:
        yield server


@pytest.fixture
def svc(settings, relay):
    settings.smtp_port = relay.port
    settings.smtp_timeout = SMTP_TIMEOUT
    settings.retry_jitter = 0
    s = Services(settings)
    yield s
    s.close()


def runner(svc, sent, name="w1"):
    r = JobRunner(svc, name, pipeline=[])
    r._handlers = {**r.handlers(), "send_draft": SendService(svc, sent_folder=lambda _: sent).run}
    return r


def draft_for(db, subject="Printer broken", **kw):
    mailbox = make_mailbox(db)
    mail = make_email(db, mailbox, subject=subject, thread_key="t" * 64,
                      references_header="<root@customer.example>", **kw)
    return mail, make_draft(db, mail)


def send_job(db, draft_id):
    return db.fetchone("SELECT * FROM jobs WHERE draft_id = %s", (draft_id,))


def force_due(db, job_id):
    db.execute("UPDATE jobs SET next_run_at = NOW(6) - INTERVAL 1 SECOND WHERE id = %s", (job_id,))


def test_approve_twice_gives_one_approval_and_one_attempt(svc, db):
    _, draft = draft_for(db)
    first = review.approve(svc, draft, "anna")
    second = review.approve(svc, draft, "ben")
    assert first.action == "approved" and second.action == "already_approved"
    assert second.send_attempt_id == first.send_attempt_id
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1
    assert db.fetchone("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'send_draft'")["n"] == 1
    approvals = [e for e in events_for(db, "draft", draft) if e["event"] == "approved"]
    assert len(approvals) == 1 and approvals[0]["actor"] == "user:anna"


def test_two_terminals_approving_at_once_give_one_approval(settings, db):
    _, draft = draft_for(db)
    results = []

    def approve(user):
        s = Services(settings)
        try:
            results.append(review.approve(s, draft, user).action)
        finally:
            s.close()

    threads = [threading.Thread(target=approve, args=(f"u{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["already_approved"] * 5 + ["approved"]
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1


def test_approved_draft_is_sent_once_with_reply_headers_and_filed(svc, db, relay, sent):
    mail, draft = draft_for(db)
    result = review.approve(svc, draft, "anna", edited_body="Dear Alice,\n\nplease restart it now.\n")
    job = send_job(db, draft)
    assert runner(svc, sent).run(job["id"]) == "done"
    assert relay.count(result.message_id) == 1
    msg = email.message_from_bytes(relay.received[0].data)
    original = db.fetchone("SELECT message_id FROM emails WHERE id = %s", (mail,))["message_id"]
    assert msg["Subject"] == "Re: Printer broken"
    assert msg["In-Reply-To"] == original
    assert msg["References"].split() == ["<root@customer.example>", original]
    assert msg["To"] == "alice@customer.example" and msg["Reply-To"] == "support@example.com"
    assert "restart it now" in msg.get_payload()
    assert len(sent.messages) == 1  # filed by the relay; our copy was not added twice
    row = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))
    assert (row["status"], row["tries"], row["reconciled"]) == ("sent", 1, 0)
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "sent"
    d = db.fetchone("SELECT status, edit_diff FROM drafts WHERE id = %s", (draft,))
    assert d["status"] == "sent" and "+please restart it now." in d["edit_diff"]
    # a duplicate delivery of the job sends nothing more
    db.execute("UPDATE jobs SET state = 'queued' WHERE id = %s", (job["id"],))
    runner(svc, sent).run(job["id"])
    assert relay.count(result.message_id) == 1


def test_we_file_the_copy_when_the_relay_does_not(svc, db, sent):
    with FaultSmtpServer() as plain:
        svc.settings.smtp_port = plain.port
        svc2 = Services(svc.settings)
        _, draft = draft_for(db)
        review.approve(svc2, draft, "anna")
        runner(svc2, sent).run(send_job(db, draft)["id"])
        svc2.close()
        assert len(plain.received) == 1 and len(sent.messages) == 1


def test_451_then_success_sends_once(svc, db, relay, sent):
    _, draft = draft_for(db)
    result = review.approve(svc, draft, "anna")
    relay.add_fault("451 4.3.0 greylisted", stage="rcpt")
    job = send_job(db, draft)
    assert runner(svc, sent).run(job["id"]) == "failed"
    attempt = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))
    assert attempt["status"] == "pending" and "451" in attempt["last_error"]
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "approved"
    force_due(db, job["id"])
    assert runner(svc, sent).run(job["id"]) == "done"
    assert relay.count(result.message_id) == 1
    assert db.fetchone("SELECT tries FROM send_attempts WHERE draft_id = %s", (draft,))["tries"] == 2


def test_four_transient_failures_leave_the_draft_approved_for_the_next_attempt(svc, db, relay, sent):
    _, draft = draft_for(db)
    review.approve(svc, draft, "anna")
    relay.add_fault("421 4.3.2 down", stage="mail", times=4)
    job = send_job(db, draft)
    for expected in ("failed", "failed", "failed", "dead"):
        force_due(db, job["id"])
        assert runner(svc, sent).run(job["id"]) == expected
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "approved"
    assert relay.received == []
    from email_rag.core.retry import RetryPolicy
    from email_rag.jobs.store import JobStore

    assert JobStore(db, RetryPolicy()).retry(job["id"], "cli:admin")
    assert db.fetchone("SELECT e.status FROM emails e JOIN drafts d ON d.email_id = e.id"
                       " WHERE d.id = %s", (draft,))["status"] == "approved"
    assert runner(svc, sent).run(job["id"]) == "done"
    assert len(relay.received) == 1


def test_550_fails_the_draft_with_the_server_answer_and_is_not_retried(svc, db, relay, sent):
    mail, draft = draft_for(db)
    review.approve(svc, draft, "anna")
    relay.add_fault("550 5.1.1 user unknown", stage="rcpt")
    assert runner(svc, sent).run(send_job(db, draft)["id"]) == "dead"
    attempt = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))
    assert attempt["status"] == "failed" and "550 5.1.1 user unknown" in attempt["smtp_response"]
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "failed"
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "failed"
    assert relay.received == []


def test_timeout_after_accept_is_reconciled_from_the_sent_folder(svc, db, relay, sent):
    _, draft = draft_for(db)
    result = review.approve(svc, draft, "anna")
    relay.add_fault("stall", stage="data", seconds=SMTP_STALL)
    assert runner(svc, sent).run(send_job(db, draft)["id"]) == "done"
    attempt = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))
    assert (attempt["status"], attempt["reconciled"]) == ("sent", 1)
    assert relay.count(result.message_id) == 1
    events = [e["event"] for e in events_for(db, "send_attempt", attempt["id"])]
    assert "send_outcome_unknown" in events and "reconciled_sent" in events


def test_timeout_after_accept_without_reconciliation_ends_unknown_and_is_not_resent(svc, db, relay, sent):
    svc.settings.reconcile_sent_folder = False
    mail, draft = draft_for(db)
    result = review.approve(svc, draft, "anna")
    relay.add_fault("stall", stage="data", seconds=SMTP_STALL)
    job = send_job(db, draft)
    assert runner(svc, sent).run(job["id"]) == "done"
    attempt = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))
    assert attempt["status"] == "unknown" and "switched off" in attempt["last_error"]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "manual"
    db.execute("UPDATE jobs SET state = 'queued' WHERE id = %s", (job["id"],))
    runner(svc, sent).run(job["id"])
    assert relay.count(result.message_id) == 1


class CrashAfterSend:
    """The relay accepts, then the worker process dies before it can record it."""

    def __init__(self, real):
        self.real = real

    def send(self, *args):
        self.real.send(*args)
        raise SystemExit("killed between SMTP accept and marking sent")


def test_crash_between_accept_and_marking_is_reconciled_not_resent(svc, db, relay, sent):
    _, draft = draft_for(db)
    result = review.approve(svc, draft, "anna")
    job = send_job(db, draft)
    crashing = JobRunner(svc, "w1", pipeline=[])
    crashing._handlers = {"send_draft": SendService(svc, sent_folder=lambda _: sent,
                                                    sender=CrashAfterSend(svc.mail_sender)).run}
    with pytest.raises(SystemExit):
        crashing.run(job["id"])
    assert db.fetchone("SELECT status FROM send_attempts WHERE draft_id = %s", (draft,))["status"] == "attempted"
    # the stuck-job reset puts the entry back into the cycle; the next run reconciles
    db.execute("UPDATE jobs SET state = 'failed', next_run_at = NOW(6) WHERE id = %s", (job["id"],))
    assert runner(svc, sent, "w2").run(job["id"]) == "done"
    assert relay.count(result.message_id) == 1
    attempt = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))
    assert (attempt["status"], attempt["reconciled"]) == ("sent", 1)


def test_sent_folder_search_failing_is_retried_never_resent_blindly(svc, db, relay, sent):
    _, draft = draft_for(db)
    review.approve(svc, draft, "anna")
    db.execute("UPDATE send_attempts SET status = 'attempted', tries = 1 WHERE draft_id = %s", (draft,))
    sent.fail = True
    job = send_job(db, draft)
    assert runner(svc, sent).run(job["id"]) == "failed"
    assert relay.received == []
    assert db.fetchone("SELECT status FROM send_attempts WHERE draft_id = %s", (draft,))["status"] == "attempted"


def test_newer_mail_in_thread_marks_approved_draft_stale_instead_of_sending(svc, db, relay, sent):
    mail, draft = draft_for(db)
    review.approve(svc, draft, "anna")
    mailbox = db.fetchone("SELECT mailbox_id FROM emails WHERE id = %s", (mail,))["mailbox_id"]
    make_email(db, mailbox, subject="Re: Printer broken", body="It works again, thanks!",
               thread_key="t" * 64)
    assert runner(svc, sent).run(send_job(db, draft)["id"]) == "done"
    assert relay.received == []
    d = db.fetchone("SELECT status, stale_reason FROM drafts WHERE id = %s", (draft,))
    assert d["status"] == "stale" and "newer mail" in d["stale_reason"]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "draft_ready"
    # staff take a new look and approve again: now it is sent, once
    again = review.approve(svc, draft, "anna")
    assert again.action == "approved"
    assert runner(svc, sent).run(send_job(db, draft)["id"]) == "done"
    assert len(relay.received) == 1


def test_header_injection_is_refused_and_nothing_is_sent(svc, db, relay, sent):
    _, draft = draft_for(db, subject="Hi\r\nBcc: everyone@example.org")
    review.approve(svc, draft, "anna")
    assert runner(svc, sent).run(send_job(db, draft)["id"]) == "dead"
    assert relay.received == []
    assert "line break" in send_job(db, draft)["last_error"]


def test_reject_needs_a_reason_and_is_final(svc, db):
    mail, draft = draft_for(db)
    with pytest.raises(BadInputError):
        review.reject(svc, draft, "anna", " ")
    assert review.reject(svc, draft, "anna", "customer already called").action == "rejected"
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "rejected"
    with pytest.raises(StateRefused):
        review.approve(svc, draft, "anna")
