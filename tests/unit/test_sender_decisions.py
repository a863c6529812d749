"""The send job (email_rag/sending/sender.py) as the worker runs it, on the in-memory
database port: what each answer of the relay does to attempt, draft and mail. The
relay, the Sent folder and the SMTP protocol themselves are proven in
tests/integration/test_sending.py against real servers."""

from __future__ import annotations

import pytest

from email_rag.core.errors import SmtpOutcomeUnknownError, SmtpPermanentError, SmtpTransientError
from email_rag.core.states import SendStatus
from email_rag.sending import review
from email_rag.sending.sender import SendService
from tests.doubles.memory_review import memory_services, review_world


class Relay:
    """A MailSender that answers as told and keeps what it was handed."""

    def __init__(self, answer: object = "250 2.0.0 queued as 1") -> None:
        self.answer, self.sent = answer, []

    def send(self, message: bytes, mail_from: str, rcpt_to: list[str]) -> str:
        self.sent.append((message, mail_from, rcpt_to))
        if isinstance(self.answer, Exception):
            raise self.answer
        return str(self.answer)


class Folder:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def contains(self, message_id: str) -> bool:
        return message_id in self.ids

    def append(self, message: bytes) -> None:
        self.ids.append(next(line.split(b":", 1)[1].strip().decode()
                             for line in message.splitlines() if line.startswith(b"Message-ID")))


def approved(tmp_path, relay):
    svc = memory_services(journal_dir=tmp_path, mail_sender=relay)
    email_id, draft_id = review_world(svc)
    r = review.approve(svc, draft_id, "anna")
    job = svc.jobs.claim(r.job_id, "w1", "default")  # the entry approve queued, claimed
    assert job is not None and job.attempts == 1  # by the real JobStore on the same rows
    return svc, email_id, draft_id, r, job


def states(svc, email_id, draft_id):
    return (svc.rows.row("emails", email_id)["status"], svc.rows.row("drafts", draft_id)["status"],
            svc.rows.send_of_draft(draft_id).status)


def test_the_relays_250_makes_attempt_draft_and_mail_sent_and_files_one_copy(tmp_path):
    relay, folder = Relay(), Folder()
    svc, email_id, draft_id, r, job = approved(tmp_path, relay)
    SendService(svc, sent_folder=lambda _: folder).run(job, "w1")
    assert states(svc, email_id, draft_id) == ("sent", "sent", SendStatus.SENT)
    [(message, mail_from, rcpt)] = relay.sent
    assert (mail_from, rcpt) == ("support@example.com", ["kunde@example.org"])
    assert b"In-Reply-To: <m1@example.org>" in message and folder.ids == [r.message_id]
    attempt = svc.rows.send_of_draft(draft_id)
    assert (attempt.tries, attempt.verified_by, attempt.smtp_response) == (
        1, "relay_250", "250 2.0.0 queued as 1")
    assert not list(tmp_path.iterdir())  # the journal entry is cleared once MariaDB has it


def test_a_temporary_refusal_leaves_the_attempt_pending_for_the_next_try(tmp_path):
    svc, email_id, draft_id, _, job = approved(tmp_path, Relay(SmtpTransientError("451 later")))
    with pytest.raises(SmtpTransientError):
        SendService(svc, sent_folder=lambda _: Folder()).run(job, "w1")
    assert states(svc, email_id, draft_id) == ("approved", "approved", SendStatus.PENDING)
    assert svc.rows.send_of_draft(draft_id).tries == 1


def test_a_permanent_refusal_fails_draft_and_mail_with_the_answer(tmp_path):
    refused = SmtpPermanentError("550 no such user", answer="550 5.1.1 no such user")
    svc, email_id, draft_id, _, job = approved(tmp_path, Relay(refused))
    with pytest.raises(SmtpPermanentError):
        SendService(svc, sent_folder=lambda _: Folder()).run(job, "w1")
    assert states(svc, email_id, draft_id) == ("failed", "failed", SendStatus.FAILED)
    assert "550 5.1.1" in svc.rows.row("emails", email_id)["status_reason"]


def test_a_lost_answer_is_never_sent_again_blindly_a_human_decides(tmp_path):
    relay = Relay(SmtpOutcomeUnknownError("timeout after DATA"))
    svc, email_id, draft_id, _, job = approved(tmp_path, relay)
    service = SendService(svc, sent_folder=lambda _: Folder())
    service.run(job, "w1")  # reconciliation is off here: unknown at once
    assert states(svc, email_id, draft_id) == ("manual", "approved", SendStatus.UNKNOWN)
    service.run(job, "w1")  # a second run of the entry sends nothing
    assert len(relay.sent) == 1


def test_an_answer_found_in_the_sent_folder_settles_an_attempt_started_earlier(tmp_path):
    relay = Relay()
    svc, email_id, draft_id, r, job = approved(tmp_path, relay)
    svc.settings.reconcile_sent_folder = True
    svc.rows.row("send_attempts", r.send_attempt_id)["status"] = "attempted"  # killed mid-send
    folder = Folder()
    folder.ids.append(r.message_id)  # the relay filed it
    SendService(svc, sent_folder=lambda _: folder).run(job, "w1")
    assert states(svc, email_id, draft_id) == ("sent", "sent", SendStatus.SENT)
    assert relay.sent == [] and svc.rows.send_of_draft(draft_id).verified_by == "sent_folder"


def test_a_newer_mail_in_the_thread_makes_the_approved_draft_stale_unsent(tmp_path):
    relay = Relay()
    svc, email_id, draft_id, _, job = approved(tmp_path, relay)
    svc.rows.add("emails", status="received", mailbox_id=svc.rows.row("emails", email_id)[
        "mailbox_id"], thread_key="t1", subject="Nachtrag")
    SendService(svc, sent_folder=lambda _: Folder()).run(job, "w1")
    assert states(svc, email_id, draft_id) == ("draft_ready", "stale", SendStatus.PENDING)
    assert relay.sent == []
    assert "arrived in the thread" in svc.rows.row("drafts", draft_id)["stale_reason"]
