"""Pending/snooze, reopen and forward against the real MariaDB (and a local SMTP relay for
the forward): a snoozed mail leaves the queue and comes back by itself when its date has
passed, audited; a closed case moves back to manual through the mail store along the
transition table; a forward is sent exactly once through the send job, to its recipient,
without touching the case."""

from __future__ import annotations

import email
from datetime import UTC, datetime, timedelta

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.core.errors import BadInputError, StateRefused, TransitionRefused
from email_rag.core.states import Actor
from email_rag.review import queue, reopen, snooze
from email_rag.review.queue import QueueQuery
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import forward
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_mailbox


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@pytest.fixture
def services(settings):
    settings.retry_jitter = 0
    s = Services(settings)
    yield s
    s.close()


def _queue_ids(svc, view: str = "all") -> list[int]:
    return [r.id for r in queue.queue_page(svc, None, QueueQuery(view=view, me=1)).rows]


def _events(db, email_id: int, event: str) -> list[dict]:
    return db.fetchall("SELECT actor, detail, from_state, to_state FROM audit_log "
                       "WHERE entity_type = 'email' AND entity_id = %s AND event = %s "
                       "ORDER BY id", (str(email_id), event))


# --- pending / snooze ---


def test_a_snoozed_mail_leaves_the_queue_and_comes_back_when_its_date_passes(services, db):
    """GIVEN two waiting drafts WHEN one mail is snoozed until tomorrow THEN its draft is in
    no view but Snoozed (with the date), the other stays, the count says 1, and the event
    ``snoozed`` names the person and the date; WHEN the date has passed THEN the draft is
    back in All at once, and one wake pass (of two, racing) ends the snooze with one
    ``snooze_ended`` event."""
    box = make_mailbox(db)
    later, other = make_email(db, box, subject="Warte auf Kunde"), make_email(db, box)
    d_later, d_other = make_draft(db, later), make_draft(db, other)
    until = _now() + timedelta(days=1)
    snooze.snooze(services, later, until, "anna")
    assert _queue_ids(services) == [d_other]
    assert _queue_ids(services, "unassigned") == [d_other]
    page = queue.queue_page(services, None, QueueQuery(view="snoozed"))
    assert [r.id for r in page.rows] == [d_later] and page.total == 1
    assert abs((page.rows[0].snoozed_until - until).total_seconds()) < 1
    assert queue.queue_page(services, None, QueueQuery()).total == 1
    [ev] = _events(db, later, "snoozed")
    assert ev["actor"] == "user:anna" and until.isoformat(timespec="minutes") in ev["detail"]
    assert snooze.current(services, later).snoozed_by == "user:anna"

    db.execute("UPDATE mail_snoozes SET until_at = %s WHERE email_id = %s",
               (_now() - timedelta(seconds=5), later))
    assert sorted(_queue_ids(services)) == sorted([d_later, d_other])  # back by itself
    assert _queue_ids(services, "snoozed") == []
    assert snooze.current(services, later) is None
    assert snooze.wake_due(services, Actor.SCHEDULER) == [later]
    assert snooze.wake_due(services, Actor.SCHEDULER) == []
    [ended] = _events(db, later, "snooze_ended")
    assert ended["actor"] == "system:scheduler"
    assert db.fetchone("SELECT COUNT(*) AS n FROM mail_snoozes")["n"] == 0


def test_snoozing_refuses_a_past_date_a_far_date_and_a_closed_mail(services, db):
    """GIVEN a waiting mail and a sent one THEN a past date, a date more than a year ahead
    and words are refused; the sent mail cannot be put aside; nothing is written."""
    box = make_mailbox(db)
    waiting = make_email(db, box)
    make_draft(db, waiting)
    sent = make_email(db, box, status="sent")
    zone = "Europe/Berlin"
    with pytest.raises(BadInputError, match="passed"):
        snooze.parse_until("2020-01-01", zone)
    with pytest.raises(BadInputError, match="days ahead"):
        snooze.parse_until((_now() + timedelta(days=400)).strftime("%Y-%m-%d"), zone)
    with pytest.raises(BadInputError, match="not a date"):
        snooze.parse_until("morgen", zone)
    with pytest.raises(StateRefused):
        snooze.snooze(services, sent, _now() + timedelta(days=1), "anna")
    assert db.fetchone("SELECT COUNT(*) AS n FROM mail_snoozes")["n"] == 0
    assert db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE event = 'snoozed'")["n"] == 0


def test_a_typed_local_date_is_stored_in_utc():
    """GIVEN a Berlin user who types 2030-07-01 14:30 (summer time, UTC+2) THEN 12:30 UTC;
    a date alone means 08:00 that morning."""
    now = datetime(2030, 6, 1)
    assert snooze.parse_until("2030-07-01T14:30", "Europe/Berlin", now) == datetime(2030, 7, 1,
                                                                                     12, 30)
    assert snooze.parse_until("2030-07-01", "Europe/Berlin", now) == datetime(2030, 7, 1, 6, 0)


def test_waking_by_hand_puts_it_back_at_once(services, db):
    box = make_mailbox(db)
    mail = make_email(db, box)
    draft = make_draft(db, mail)
    snooze.snooze(services, mail, _now() + timedelta(days=3), "anna")
    assert _queue_ids(services) == []
    assert snooze.unsnooze(services, mail, "bob") is True
    assert snooze.unsnooze(services, mail, "bob") is False
    assert _queue_ids(services) == [draft]
    assert [e["actor"] for e in _events(db, mail, "unsnoozed")] == ["user:bob"]


# --- reopen ---


@pytest.mark.parametrize("closed", ["sent", "rejected", "resolved", "no_reply"])
def test_a_closed_case_is_reopened_to_manual_through_its_store(services, db, closed):
    """GIVEN a closed mail (closed_at set by the trigger) WHEN anna reopens it with a
    reason THEN it is manual, open again (closed_at NULL), the reason is its status reason,
    and one ``reopened`` event says from and to, under user:anna."""
    mail = make_email(db, make_mailbox(db), status=closed)
    assert db.fetchone("SELECT closed_at FROM emails WHERE id = %s", (mail,))["closed_at"]
    assert reopen.reopen(services, mail, "anna", "Kunde meldet sich erneut") == closed
    row = db.fetchone("SELECT status, status_reason, closed_at FROM emails WHERE id = %s",
                      (mail,))
    assert row["status"] == "manual" and row["closed_at"] is None
    assert row["status_reason"] == "reopened by user:anna: Kunde meldet sich erneut"
    [ev] = _events(db, mail, "reopened")
    assert (ev["actor"], ev["from_state"], ev["to_state"]) == ("user:anna", closed, "manual")


@pytest.mark.parametrize("status", ["draft_ready", "approved", "received", "manual", "history"])
def test_an_open_or_history_mail_is_not_reopened(services, db, status):
    mail = make_email(db, make_mailbox(db), status=status)
    with pytest.raises((StateRefused, TransitionRefused)):
        reopen.reopen(services, mail, "anna", "why not")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == status
    assert _events(db, mail, "reopened") == []


def test_reopen_needs_a_reason(services, db):
    mail = make_email(db, make_mailbox(db), status="rejected")
    with pytest.raises(BadInputError):
        reopen.reopen(services, mail, "anna", "   ")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "rejected"


# --- forward ---


class SentFolder:
    def __init__(self):
        self.messages: list[bytes] = []

    def contains(self, message_id: str) -> bool:
        return any(email.message_from_bytes(m)["Message-ID"] == message_id
                   for m in self.messages)

    def append(self, message: bytes) -> None:
        self.messages.append(message)


@pytest.fixture
def relay():
    with FaultSmtpServer() as server:
        yield server


def _run_send_jobs(services, draft_id: int, sent: SentFolder, times: int = 2) -> None:
    job = services.db.fetchone("SELECT id FROM jobs WHERE draft_id = %s AND kind = 'send_draft'",
                               (draft_id,))
    worker = JobRunner(services, "w1", pipeline=[])
    worker._handlers = {**worker.handlers(),
                        "send_draft": SendService(services, sent_folder=lambda _: sent).run}
    assert worker.run(job["id"]) == "done"
    for _ in range(times - 1):  # duplicate deliveries of the entry
        worker.run(job["id"])


def test_a_forward_is_sent_exactly_once_to_its_recipient_and_leaves_the_case_alone(
        settings, db, relay):
    """GIVEN a mail in review WHEN anna forwards it twice (a double click) to a colleague
    with a note THEN one forward draft (approved by user:anna, source forward) with one
    send attempt; the send job (run twice) hands exactly one message to the relay: To the
    colleague, Subject "Fwd: ...", the note and the quoted mail, no In-Reply-To; the
    attempt is sent (relay_250), the mail is still draft ready with its draft waiting; the
    audit log has ``forwarded`` without the address."""
    settings.smtp_port = relay.port
    settings.retry_jitter = 0
    services = Services(settings)
    try:
        box = make_mailbox(db)
        mail = make_email(db, box, subject="Rechnung 4711 doppelt", from_name="Carla Kunde",
                          from_addr="carla@kunde.example", body="Ich wurde doppelt belastet.")
        waiting = make_draft(db, mail)
        first = forward.forward(services, mail, "anna", "Buchhaltung <buha@firma.example>",
                                "Bitte prüfen.")
        again = forward.forward(services, mail, "anna", "buha@firma.example", "Bitte prüfen.")
        assert (first.action, again.action) == ("forwarded", "already_forwarded")
        assert again.draft_id == first.draft_id
        row = db.fetchone("SELECT status, source, approved_by, subject FROM drafts "
                          "WHERE id = %s", (first.draft_id,))
        assert row == {"status": "approved", "source": "forward", "approved_by": "user:anna",
                       "subject": "Fwd: Rechnung 4711 doppelt"}
        sent = SentFolder()
        _run_send_jobs(services, first.draft_id, sent)
    finally:
        services.close()
    assert len(relay.received) == 1
    msg = email.message_from_bytes(relay.received[0].data)
    assert msg["To"] == "buha@firma.example" and msg["Subject"] == "Fwd: Rechnung 4711 doppelt"
    assert msg["In-Reply-To"] is None and msg["Message-ID"] == first.message_id
    text = msg.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert text.startswith("Bitte prüfen.\n\n" + forward.SEPARATOR)
    assert "From: Carla Kunde <carla@kunde.example>" in text
    assert "Ich wurde doppelt belastet." in text
    attempt = db.fetchone("SELECT status, verified_by, recipients FROM send_attempts "
                          "WHERE draft_id = %s", (first.draft_id,))
    assert attempt == {"status": "sent", "verified_by": "relay_250",
                       "recipients": "buha@firma.example"}
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] \
        == "draft_ready"
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (waiting,))["status"] \
        == "pending_review"
    assert len(sent.messages) == 1
    [ev] = _events(db, mail, "forwarded")
    assert ev["actor"] == "user:anna"
    assert "buha@firma.example" not in str(db.fetchall("SELECT detail FROM audit_log"))


def test_a_refused_forward_fails_its_attempt_but_not_the_case(settings, db, relay):
    """GIVEN the relay refuses the recipient (550) WHEN the forward's send job runs THEN
    its attempt and draft are failed with the answer, the mail stays as it was."""
    settings.smtp_port = relay.port
    settings.retry_jitter = 0
    relay.add_fault("550 5.1.1 no such user", stage="data", times=1)
    services = Services(settings)
    try:
        mail = make_email(db, make_mailbox(db), status="sent")
        f = forward.forward(services, mail, "anna", "weg@firma.example")
        job = db.fetchone("SELECT id FROM jobs WHERE draft_id = %s", (f.draft_id,))
        worker = JobRunner(services, "w1", pipeline=[])
        worker._handlers = {**worker.handlers(), "send_draft": SendService(
            services, sent_folder=lambda _: SentFolder()).run}
        worker.run(job["id"])
    finally:
        services.close()
    assert db.fetchone("SELECT status FROM send_attempts WHERE draft_id = %s",
                       (f.draft_id,))["status"] == "failed"
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (f.draft_id,))["status"] \
        == "failed"
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "sent"


@pytest.mark.parametrize("typed", ["a@x.example\r\nBcc: b@y.example", "a@x.example, b@y.example",
                                   "", "keine adresse"])
def test_a_forward_to_a_bad_address_is_refused_and_writes_nothing(services, db, typed):
    mail = make_email(db, make_mailbox(db))
    with pytest.raises(BadInputError):
        forward.forward(services, mail, "anna", typed, "x")
    assert db.fetchone("SELECT COUNT(*) AS n FROM drafts")["n"] == 0
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 0
