"""Truthful send outcomes (issue 16) against real MariaDB, Redis and the fault SMTP relay:
what is said is what was verified, and how it was verified is recorded.
"""

from __future__ import annotations

import threading

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer
from email_rag_harness.testing.tcp_proxy import TcpFaultProxy

from email_rag.core.errors import DeliveryEvidenceError
from email_rag.core.records import SendAttempt
from email_rag.db.audit import events_for
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import admin, review
from email_rag.sending.outcome import send_outcome_text
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services
from tests.integration.test_sending import (
    SMTP_STALL,
    SMTP_TIMEOUT,
    MemorySentFolder,
    draft_for,
    send_job,
)


class MemoryRunner(JobRunner):
    """A job runner whose send handler searches an in-memory Sent folder, also after the
    handlers are rebuilt (a MariaDB outage rebuilds them)."""

    def __init__(self, svc, sent, name="w1"):
        super().__init__(svc, name, pipeline=[])
        self.sent = sent

    def _build_handlers(self):
        handlers = super()._build_handlers()
        handlers["send_draft"] = SendService(self.services, sent_folder=lambda _: self.sent).run
        return handlers


class LateSentFolder(MemorySentFolder):
    """A relay that files its copy late: what it files becomes visible only after the
    first search (deterministic, no timing luck)."""

    def __init__(self):
        super().__init__()
        self.pending: list[bytes] = []
        self.searches = 0

    def file_late(self, message: bytes) -> None:
        self.pending.append(message)

    def contains(self, message_id: str) -> bool:
        found = super().contains(message_id)
        self.searches += 1
        self.messages += self.pending  # filed meanwhile
        self.pending = []
        return found


def attempt_of(db, draft):
    return db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (draft,))


def send_with_lost_answer(base, db, sent) -> int:
    """Approve a draft and send it through a relay that takes the whole message and then
    stalls past the SMTP timeout (its answer is lost; it files nothing). Returns the draft."""
    with FaultSmtpServer() as relay:
        base.smtp_port = relay.port
        relay.add_fault("stall", stage="data", seconds=SMTP_STALL)
        svc = Services(base)
        try:
            _, draft = draft_for(db)
            review.approve(svc, draft, "anna")
            assert MemoryRunner(svc, sent).run(send_job(db, draft)["id"]) == "done"
        finally:
            svc.close()
    return draft


@pytest.fixture
def base(settings):
    settings.smtp_timeout = SMTP_TIMEOUT
    settings.retry_jitter = 0
    return settings


def test_relay_250_is_recorded_as_accepted_by_the_relay_and_said_so(base, db):
    sent = MemorySentFolder()
    with FaultSmtpServer(file_to=sent.append) as relay:
        base.smtp_port = relay.port
        svc = Services(base)
        try:
            _, draft = draft_for(db)
            review.approve(svc, draft, "anna")
            before = send_outcome_text(SendAttempt.from_row(attempt_of(db, draft)))
            assert before == "approved — queued to send, not sent yet"
            assert MemoryRunner(svc, sent).run(send_job(db, draft)["id"]) == "done"
        finally:
            svc.close()
    a = attempt_of(db, draft)
    assert (a["status"], a["verified_by"]) == ("sent", "relay_250")
    assert a["accepted_at"] is not None and a["smtp_response"].startswith("250")
    assert send_outcome_text(SendAttempt.from_row(a)).startswith("sent — accepted by the relay at ")


def test_relay_250_then_mariadb_lost_before_sent_is_committed_ends_sent_not_unknown(base, db):
    """GIVEN a relay that accepts the reply but files no copy (reconciliation cannot find it)
    WHEN MariaDB becomes unreachable between the relay's 250 and the commit of `sent`
    THEN after MariaDB is back the attempt ends `sent` (verified_by relay_250, from the send
    journal), not `unknown`, and the relay received it once."""
    base.reconcile_again_after_seconds = 0
    proxy = TcpFaultProxy("127.0.0.1", base.db_port)
    base.db_port = proxy.port
    sent = MemorySentFolder()  # the relay never files: only the 250 proves acceptance
    restored = threading.Event()

    def lose_mariadb(_message: bytes) -> None:  # the relay has the message; 250 follows
        proxy.down()
        # set before up(): the run cannot finish before it is set (nor before MariaDB is up)
        threading.Timer(1.5, lambda: (restored.set(), proxy.up())).start()

    try:
        with FaultSmtpServer(file_to=lose_mariadb) as relay:
            base.smtp_port = relay.port
            svc = Services(base)
            try:
                _, draft = draft_for(db)
                result = review.approve(svc, draft, "anna")
                runner = MemoryRunner(svc, sent)
                assert runner.run(send_job(db, draft)["id"]) == "done"
                assert restored.is_set() and runner.outages >= 1
            finally:
                svc.close()
            assert relay.count(result.message_id) == 1
    finally:
        proxy.close()
    a = attempt_of(db, draft)
    assert (a["status"], a["verified_by"]) == ("sent", "relay_250"), a
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "sent"
    sent_event = [e for e in events_for(db, "send_attempt", a["id"]) if e["event"] == "sent"]
    assert len(sent_event) == 1 and '"from_journal": true' in sent_event[0]["detail"]
    assert not list(base.send_journal_dir.glob("*.json"))  # cleared after the commit


def test_late_filing_relay_ends_sent_via_the_second_reconciliation(base, db):
    """GIVEN a relay that accepts the reply, answers too late (timeout after DATA) and files
    its copy in the Sent folder only after the first search
    THEN the sender waits (audited), searches again and ends `sent` (sent_folder)."""
    base.reconcile_again_after_seconds = 0.2
    sent = LateSentFolder()
    with FaultSmtpServer(file_to=sent.file_late) as relay:
        base.smtp_port = relay.port
        relay.add_fault("stall", stage="data", seconds=SMTP_STALL)
        svc = Services(base)
        try:
            _, draft = draft_for(db)
            result = review.approve(svc, draft, "anna")
            assert MemoryRunner(svc, sent).run(send_job(db, draft)["id"]) == "done"
        finally:
            svc.close()
        assert relay.count(result.message_id) == 1
    a = attempt_of(db, draft)
    assert (a["status"], a["verified_by"]) == ("sent", "sent_folder"), a
    assert sent.searches == 2
    events = {e["event"]: e for e in events_for(db, "send_attempt", a["id"])}
    assert '"wait_s": 0.2' in events["reconcile_wait"]["detail"]
    assert '"found": true' in events["reconcile_again"]["detail"]
    assert send_outcome_text(SendAttempt.from_row(a)).startswith("sent — found in the Sent folder at ")


def test_never_filed_is_unknown_after_two_searches_and_says_what_is_known(base, db):
    base.reconcile_again_after_seconds = 0.1
    sent = LateSentFolder()
    draft = send_with_lost_answer(base, db, sent)
    a = attempt_of(db, draft)
    assert a["status"] == "unknown" and a["verified_by"] is None
    assert sent.searches == 2 and "2 searches, 0.1 s apart" in a["last_error"]
    text = send_outcome_text(SendAttempt.from_row(a))
    assert text.startswith("unknown — a human decides. Known: ") and "not in the Sent folder" in text


def test_admin_mark_sent_is_recorded_as_belief_not_verification(base, db):
    svc = Services(base)
    try:
        _, draft = draft_for(db)
        review.approve(svc, draft, "anna")
        db.execute("UPDATE send_attempts SET status = 'unknown' WHERE draft_id = %s", (draft,))
        a = attempt_of(db, draft)
        admin.resolve_unknown(svc, a["id"], "root", "mark_sent", "customer confirmed by phone")
    finally:
        svc.close()
    a = attempt_of(db, draft)
    assert (a["status"], a["verified_by"], a["decided_by"]) == ("sent", "admin", "user:root")
    assert send_outcome_text(SendAttempt.from_row(a)) == "marked sent by root, not verified"


def test_resend_after_unknown_is_refused_while_there_is_evidence_of_delivery(base, db):
    """GIVEN an unknown send whose whole message was handed to the relay (its answer was lost)
    THEN `resend` is refused with that evidence, nothing changes; `despite_evidence` resends."""
    base.reconcile_sent_folder = False
    draft = send_with_lost_answer(base, db, MemorySentFolder())
    a = attempt_of(db, draft)
    assert a["status"] == "unknown"
    svc = Services(base)
    try:
        with pytest.raises(DeliveryEvidenceError, match="whole message was handed to the relay"):
            admin.resolve_unknown(svc, a["id"], "root", "resend", "not in her inbox")
        assert attempt_of(db, draft)["status"] == "unknown"
        assert admin.resolve_unknown(svc, a["id"], "root", "resend", "checked with her",
                                     despite_evidence=True) == "pending"
    finally:
        svc.close()
    decided = [e for e in events_for(db, "send_attempt", a["id"]) if e["event"] == "admin_resend"]
    assert len(decided) == 1 and "handed to the relay" in decided[0]["detail"]
