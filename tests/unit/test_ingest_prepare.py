"""What the poller makes of each fetched mail before storing it (pure)."""

from email_rag_harness.testing.mails import garbage, mail, zoo

from email_rag.adapters.imap import FetchedMail
from email_rag.core.states import MailStatus, ParseStatus
from email_rag.ingest.store import PrepareOptions, prepare

OPTS = PrepareOptions("email-rag.invalid", frozenset({"support@example.com"}),
                      max_mail_bytes=100_000, max_attachment_bytes=50_000)


def test_normal_mail_is_received_with_a_job_and_parse_pending():
    p = prepare(FetchedMail(1, mail(1), 500), OPTS)
    assert (p.kind, p.status, p.parse_status, p.needs_job) == (
        "normal", MailStatus.RECEIVED, ParseStatus.PENDING, True)


def test_loop_guarded_mail_is_no_reply_without_job_but_parsed():
    raw = mail(2, extra={"Auto-Submitted": "auto-replied"})
    p = prepare(FetchedMail(2, raw, len(raw)), OPTS)
    assert (p.kind, p.status, p.needs_job) == ("no_reply", MailStatus.NO_REPLY, False)
    assert p.auto_reason == "auto_submitted:auto-replied"
    assert p.parse_status == ParseStatus.OK and "Bestellung 2" in p.body_text


def test_too_large_mail_waits_for_a_human_without_job():
    head = zoo()["huge"].split(b"\r\n\r\n")[0] + b"\r\n\r\n"
    p = prepare(FetchedMail(3, head, 300_000, headers_only=True), OPTS)
    assert (p.kind, p.status, p.parse_status, p.needs_job) == (
        "too_large", MailStatus.MANUAL, ParseStatus.TOO_LARGE, False)
    assert "300000 bytes" in p.parse_error and p.headers.subject == "Riesige Mail"


def test_garbage_is_failed_with_reason_and_no_job():
    p = prepare(FetchedMail(4, garbage(), 2051), OPTS)
    assert (p.kind, p.status, p.parse_status, p.needs_job) == (
        "failed", MailStatus.FAILED, ParseStatus.FAILED, False)
    assert "no header fields" in p.status_reason


def test_a_reused_message_id_is_a_new_record_for_a_human_and_the_original_is_unchanged():
    from email_rag.ingest.store import reused

    p = prepare(FetchedMail(5, mail(5), 500), OPTS)
    r = reused(p, 41)
    assert (r.kind, r.status, r.reused_of, r.needs_job) == ("reused_id", MailStatus.MANUAL, 41,
                                                            False)
    assert "mail #41" in r.status_reason and r.parse_status == ParseStatus.OK
    assert "Bestellung 5" in r.body_text
    assert (p.kind, p.status, p.reused_of, p.parse_status) == (
        "normal", MailStatus.RECEIVED, None, ParseStatus.PENDING)
    assert p.legacy is p.legacy  # computed once
