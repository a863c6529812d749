"""What the history import makes of a prepared mail (email_rag/ingest/history.py's table)."""

from __future__ import annotations

from datetime import UTC, datetime

from email_rag_harness.testing.mails import mail, raw

from email_rag.core.ports import FetchedMail
from email_rag.core.states import MailStatus, ParseStatus
from email_rag.ingest.history import HistoryPlan, classify
from email_rag.ingest.store import PrepareOptions, prepare

CUTOFF = datetime(2026, 11, 15)  # naive UTC, as MariaDB returns it
OPTS = PrepareOptions(message_id_domain="example.com",
                      own_addresses=frozenset({"support@example.com"}), max_mail_bytes=50_000)


def _p(data: bytes, uid: int = 1):
    return prepare(FetchedMail(uid, data, len(data)), OPTS)


def test_inbound_before_the_cutoff_is_history_parsed_and_flag_answered():
    got = classify(_p(mail(1), uid=4), HistoryPlan(CUTOFF, frozenset({4})))
    assert (got.kind, got.status, got.direction, got.answered_via) == (
        "history", MailStatus.HISTORY, "in", "flag")
    assert got.parse_status == ParseStatus.PENDING  # the poller reads headers: the job parses
    assert got.needs_job and got.indexed
    assert classify(_p(mail(1), uid=5), HistoryPlan(CUTOFF, frozenset({4}))).answered_via is None


def test_at_or_after_the_cutoff_without_a_date_or_with_import_off_it_is_work():
    late = mail(2, date=datetime(2026, 11, 15, tzinfo=UTC))
    no_date = raw("From: a@example.org\nTo: support@example.com\nSubject: x\n"
                  "Message-ID: <nd@example.org>\n\nHallo\n")
    for data, plan in ((late, HistoryPlan(CUTOFF)), (no_date, HistoryPlan(CUTOFF)),
                       (mail(3), HistoryPlan(None))):
        got = classify(_p(data), plan)
        assert (got.kind, got.status) == ("normal", MailStatus.RECEIVED)


def test_a_reply_of_ours_in_sent_is_history_out_even_though_the_loop_guard_saw_our_address():
    ours = mail(4, sender="support@example.com", to="kunde@example.org",
                date=datetime(2026, 12, 1, tzinfo=UTC))
    prepared = _p(ours)
    assert prepared.kind == "no_reply"  # own mail: outside Sent it is never answered
    got = classify(prepared, HistoryPlan(CUTOFF, sent_folder=True))
    assert (got.kind, got.status, got.direction, got.auto_reason) == (
        "sent", MailStatus.HISTORY, "out", None)


def test_too_large_history_stays_for_a_human():
    big = prepare(FetchedMail(1, mail(5, size=80_000), 80_000), OPTS)
    assert classify(big, HistoryPlan(CUTOFF)).kind == "too_large"
    assert classify(big, HistoryPlan(CUTOFF, sent_folder=True)).kind == "too_large"
