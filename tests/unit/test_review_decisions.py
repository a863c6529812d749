"""The review decisions, the status stores and the send decision, driven as the product runs
them (email_rag/sending/review.py, admin.py, db/stores.py) on the in-memory database port
(tests/doubles/memory_review.py): refusals, repeats and stale versions without MariaDB.
The SQL and the row locks themselves are proven against MariaDB in tests/integration."""

from __future__ import annotations

import pytest

from email_rag.core.errors import (
    BadInputError,
    DraftConflictError,
    StateRefused,
    TransitionRefused,
)
from email_rag.core.records import Draft, SendAttempt
from email_rag.core.states import DraftStatus, JobState, MailStatus, SendStatus
from email_rag.review import console
from email_rag.sending import admin, review, rules
from email_rag.sending.regenerate import regenerate
from tests.doubles.memory_db import MemoryDatabase
from tests.doubles.memory_review import memory_services, review_world


@pytest.fixture
def svc():
    return memory_services()


def statuses(svc, email_id, draft_id):
    rows = svc.rows
    send = rows.send_of_draft(draft_id)
    return (rows.row("emails", email_id)["status"], rows.row("drafts", draft_id)["status"],
            send and send.status)


# --- the status stores ---

def test_a_move_outside_the_table_is_refused_and_writes_nothing(svc):
    """A closed mail moves only where its table row says (reopen: to manual), never to
    approved."""
    email_id, _ = review_world(svc, mail_status="rejected")
    with pytest.raises(TransitionRefused, match="from rejected only manual may follow"):
        with svc.db.transaction() as cur:
            svc.stores.mails.move(cur, email_id, MailStatus.APPROVED, actor="user:anna")
    assert svc.rows.row("emails", email_id)["status"] == "rejected" and svc.rows.events == []


def test_a_move_from_a_status_the_caller_does_not_act_on_is_refused(svc):
    _, draft_id = review_world(svc)
    with pytest.raises(TransitionRefused, match="applies to approved"):
        svc.stores.drafts.move(None, draft_id, DraftStatus.STALE, actor="worker",
                               expect=(DraftStatus.APPROVED,))
    assert svc.rows.row("drafts", draft_id)["status"] == "pending_review"


def test_the_same_status_again_is_a_no_op_without_an_event(svc):
    email_id, _ = review_world(svc)
    svc.stores.mails.move(None, email_id, MailStatus.DRAFT_READY, actor="worker")
    assert svc.rows.events == []


def test_a_row_changed_since_it_was_read_is_refused(svc):
    email_id, _ = review_world(svc, mail_status="approved")
    with pytest.raises(TransitionRefused, match="changed meanwhile"):  # read draft_ready earlier
        svc.stores.mails.move(None, email_id, MailStatus.APPROVED, actor="user:anna",
                              current=MailStatus.DRAFT_READY)
    assert svc.rows.events == []


def test_an_allowed_move_writes_the_status_and_its_event(svc):
    email_id, _ = review_world(svc)
    svc.stores.mails.move(None, email_id, MailStatus.APPROVED, actor="user:anna", reason="ok")
    [event] = svc.rows.events
    assert (event.entity_type, event.from_state, event.to_state, event.detail) == (
        "email", "draft_ready", "approved", {"reason": "ok"})
    assert svc.rows.row("emails", email_id)["status_reason"] == "ok"


# --- approve ---

def test_approve_moves_draft_and_mail_creates_one_attempt_and_queues_its_send(svc):
    email_id, draft_id = review_world(svc)
    r = review.approve(svc, draft_id, "anna")
    assert (r.action, r.status) == ("approved", DraftStatus.APPROVED)
    assert statuses(svc, email_id, draft_id) == ("approved", "approved", SendStatus.PENDING)
    attempt = svc.rows.send_of_draft(draft_id)
    assert (attempt.id, attempt.message_id, attempt.recipients) == (
        r.send_attempt_id, r.message_id, "kunde@example.org")
    assert svc.queue.put == [("default", r.job_id)]
    assert [(e.entity_type, e.event) for e in svc.rows.events] == [
        ("job", "queued_for_send"), ("draft", "approved"), ("email", "state_changed"),
        ("send_attempt", "created")]  # the real JobStore audits the entry it creates
    job = svc.jobs.get(r.job_id)  # one memory world: JobStore reads the entry approve queued
    assert (job.state, job.kind, job.draft_id, job.queue) == (
        JobState.QUEUED, "send_draft", draft_id, "default")
    assert svc.rows.row("drafts", draft_id)["approved_by"] == "user:anna"
    assert svc.rows.labelled_examples == [(email_id, "approval")]  # the team learns from it


def test_a_second_approval_changes_nothing_and_names_the_first(svc):
    email_id, draft_id = review_world(svc)
    first = review.approve(svc, draft_id, "anna")
    events = len(svc.rows.events)
    again = review.approve(svc, draft_id, "ben")
    assert (again.action, again.send_attempt_id, again.message_id) == (
        "already_approved", first.send_attempt_id, first.message_id)
    assert again.detail == {"approved_by": "user:anna"}
    assert len(svc.rows.tables["send_attempts"]) == 1 and len(svc.rows.events) == events


def test_approve_of_a_version_the_agent_did_not_see_is_refused(svc):
    email_id, draft_id = review_world(svc)
    seen = svc.rows.draft(draft_id).seen
    review.reject(svc, draft_id, "ben", "wrong customer")  # another agent acts first
    with pytest.raises(DraftConflictError) as refused:
        review.approve(svc, draft_id, "anna", seen=seen)
    assert refused.value.draft.status == DraftStatus.REJECTED
    assert statuses(svc, email_id, draft_id) == ("rejected", "rejected", None)


def test_approve_with_the_version_the_agent_saw_goes_through(svc):
    _, draft_id = review_world(svc)
    seen = svc.rows.draft(draft_id).seen
    assert review.approve(svc, draft_id, "anna", seen=seen).action == "approved"


def test_a_flagged_draft_is_approved_only_edited(svc):
    email_id, draft_id = review_world(svc, check_flags="names a price")
    with pytest.raises(StateRefused, match="FLAGGED"):
        review.approve(svc, draft_id, "anna")
    assert statuses(svc, email_id, draft_id) == ("draft_ready", "pending_review", None)
    r = review.approve(svc, draft_id, "anna", edited_body="Guten Tag, wir melden uns.")
    assert r.detail == {"edited": True}
    assert svc.rows.row("drafts", draft_id)["body_final"] == "Guten Tag, wir melden uns."
    assert svc.rows.row("drafts", draft_id)["edit_diff"].startswith("--- draft")


def test_nobody_to_reply_to_and_an_empty_text_are_refused_before_anything_is_written(svc):
    email_id, draft_id = review_world(svc, reply_addr=None)
    with pytest.raises(BadInputError, match="nobody to send the reply to"):
        review.approve(svc, draft_id, "anna")
    email_id, draft_id = review_world(svc)
    with pytest.raises(BadInputError, match="empty"):
        review.approve(svc, draft_id, "anna", edited_body="  \n")
    assert statuses(svc, email_id, draft_id) == ("draft_ready", "pending_review", None)
    assert svc.rows.events == [] and svc.queue.put == []


def test_a_rejected_or_superseded_draft_is_not_approved(svc):
    for status in ("rejected", "superseded", "failed"):
        _, draft_id = review_world(svc, draft_status=status)
        with pytest.raises(StateRefused, match=f"is {status}"):
            review.approve(svc, draft_id, "anna")
    assert svc.rows.tables["send_attempts"] == {}


def test_approval_after_a_bounce_arms_the_attempt_again_with_a_new_message_id(svc):
    email_id, draft_id = review_world(svc)
    first = review.approve(svc, draft_id, "anna")
    attempt = svc.rows.row("send_attempts", first.send_attempt_id)
    attempt["status"] = "bounced"  # the bounce path (ingest/bounces.py) put it back to review
    svc.rows.row("drafts", draft_id)["status"] = "stale"
    svc.rows.row("emails", email_id)["status"] = "draft_ready"
    again = review.approve(svc, draft_id, "anna")
    assert again.action == "approved" and again.send_attempt_id == first.send_attempt_id
    assert again.message_id != first.message_id
    assert svc.rows.send(first.send_attempt_id).message_id == again.message_id
    [rearmed] = [e for e in svc.rows.events if e.event == "rearmed"]
    assert rearmed.detail["old_message_id"] == first.message_id


# --- how much staff changed the draft (the review figures) ---

@pytest.mark.parametrize("generated, approved, distance, outcome", [
    ("Hello Anna,\nit is done.", "Hello Anna,\nit is done.", 0.0, "unchanged"),
    ("Hello Anna,\nit is done.\n", "Hello Anna,  \r\nit is done.", 0.0, "unchanged"),
    ("abcdefghij", "abcdefghiX", 0.1, "light_edit"),
    ("abcdefghij", "abcdefgXYZ", 0.3, "light_edit"),  # the limit is still light
    ("abcdefghij", "abcdefXYZW", 0.4, "rewritten"),
    ("abcdefghij", "abcdefghijKLMNO", 0.3333, "rewritten"),  # 5 added / 15
    ("Guten Tag", "Hoy", 1.0, "rewritten"),  # nothing in common
])
def test_the_edit_distance_is_normalised_and_classed(generated, approved, distance, outcome):
    assert rules.edit_distance(generated, approved) == distance
    assert rules.edit_outcome(distance) == outcome


def test_approve_and_reject_count_the_decision_in_the_same_transaction(svc):
    _, unchanged = review_world(svc)
    review.approve(svc, unchanged, "anna")
    _, edited = review_world(svc)
    review.approve(svc, edited, "anna", edited_body="Guten Tag, anbei die Rechnung. Anna")
    _, rejected = review_world(svc)
    review.reject(svc, rejected, "anna", "spam")
    assert svc.rows.reviews == {unchanged: ("unchanged", 0.0),
                                edited: ("light_edit", 0.1429),  # 5 of 35 characters
                                rejected: ("rejected", None)}
    approved = [e for e in svc.rows.events if e.event == "approved"]
    assert [(e.detail["edit"], e.detail["edit_distance"]) for e in approved] == [
        ("unchanged", 0.0), ("light_edit", 0.1429)]


def test_a_refused_approval_counts_nothing(svc):
    _, draft_id = review_world(svc, check_flags="names a price")
    with pytest.raises(StateRefused):
        review.approve(svc, draft_id, "anna")
    assert svc.rows.reviews == {}


# --- reject, regenerate ---

def test_reject_closes_draft_and_mail_and_a_repeat_is_a_no_op(svc):
    email_id, draft_id = review_world(svc)
    assert review.reject(svc, draft_id, "anna", "spam").action == "rejected"
    assert statuses(svc, email_id, draft_id) == ("rejected", "rejected", None)
    assert svc.rows.row("drafts", draft_id)["reject_reason"] == "spam"
    events = len(svc.rows.events)
    assert review.reject(svc, draft_id, "anna", "spam").action == "already_rejected"
    assert len(svc.rows.events) == events


def test_reject_needs_a_reason_and_an_open_draft(svc):
    _, draft_id = review_world(svc)
    with pytest.raises(BadInputError, match="reason"):
        review.reject(svc, draft_id, "anna", "  ")
    review.approve(svc, draft_id, "anna")
    with pytest.raises(StateRefused, match="only a pending or stale draft can be rejected"):
        review.reject(svc, draft_id, "anna", "too late")


def test_regenerate_rules_refuse_a_running_job_and_repeat_as_a_no_op():
    draft = Draft(7, 3, DraftStatus.PENDING_REVIEW)
    with pytest.raises(StateRefused, match="being processed right now"):
        rules.already_superseded(draft, JobState.PROCESSING, 11)
    assert rules.already_superseded(draft, JobState.DONE, 11) is False
    assert rules.already_superseded(Draft(7, 3, DraftStatus.SUPERSEDED), None, None) is True
    with pytest.raises(StateRefused, match="is approved"):
        rules.already_superseded(Draft(7, 3, DraftStatus.APPROVED), None, None)


def test_regenerate_of_an_approved_draft_changes_nothing(svc):
    email_id, draft_id = review_world(svc)
    review.approve(svc, draft_id, "anna")
    before = (statuses(svc, email_id, draft_id), len(svc.rows.events))

    class NoJobs:  # the mail's job row is read with a cursor; none exists here
        def fetchone(self, *a):
            return None

    svc.db = _CursorDb(svc.rows, NoJobs())
    with pytest.raises(StateRefused, match="only a pending or stale draft can be regenerated"):
        regenerate(svc, draft_id, "anna")
    assert (statuses(svc, email_id, draft_id), len(svc.rows.events)) == before


class _CursorDb:
    """A memory database whose transaction hands out a cursor for the job row's read."""

    def __init__(self, rows: MemoryDatabase, cur) -> None:
        self.rows, self.cur = rows, cur

    def transaction(self):
        from contextlib import contextmanager

        @contextmanager
        def tx():
            with self.rows.transaction():
                yield self.cur
        return tx()


# --- the admin's send decision ---

def unknown_send(svc) -> tuple[int, int, int]:
    email_id, draft_id = review_world(svc)
    r = review.approve(svc, draft_id, "anna")
    svc.rows.row("send_attempts", r.send_attempt_id)["status"] = "unknown"
    svc.rows.row("emails", email_id)["status"] = "manual"
    return email_id, draft_id, r.send_attempt_id


def test_mark_sent_moves_attempt_draft_and_mail_to_sent_as_the_admins_word(svc):
    email_id, draft_id, attempt_id = unknown_send(svc)
    assert admin.resolve_unknown(svc, attempt_id, "root", "mark_sent", "phoned") == "sent"
    assert statuses(svc, email_id, draft_id) == ("sent", "sent", SendStatus.SENT)
    attempt = svc.rows.send(attempt_id)
    assert (attempt.verified_by, attempt.decided_by) == ("admin", "user:root")


def test_give_up_fails_the_draft_and_resolves_the_mail(svc):
    email_id, draft_id, attempt_id = unknown_send(svc)
    assert admin.resolve_unknown(svc, attempt_id, "root", "give_up", "called her") == "failed"
    assert statuses(svc, email_id, draft_id) == ("resolved", "failed", SendStatus.FAILED)


def test_a_send_decision_on_an_attempt_that_is_not_unknown_is_refused(svc):
    email_id, draft_id = review_world(svc)
    r = review.approve(svc, draft_id, "anna")
    events = len(svc.rows.events)
    with pytest.raises(TransitionRefused, match="not unknown: there is nothing to decide"):
        admin.resolve_unknown(svc, r.send_attempt_id, "root", "mark_sent", "?")
    assert statuses(svc, email_id, draft_id) == ("approved", "approved", SendStatus.PENDING)
    assert len(svc.rows.events) == events
    with pytest.raises(BadInputError, match="decision must be"):
        admin.resolve_unknown(svc, r.send_attempt_id, "root", "shrug")


def test_a_resend_with_delivery_evidence_needs_the_admins_confirmation():
    attempt = SendAttempt(5, 7, SendStatus.UNKNOWN, message_id="<x@y>")
    with pytest.raises(Exception, match="was NOT resent"):
        rules.check_resend(attempt, ["the relay answered: 250 OK"], despite_evidence=False)
    rules.check_resend(attempt, ["the relay answered: 250 OK"], despite_evidence=True)
    rules.check_resend(attempt, [], despite_evidence=False)


# --- the failure console asks the store's rules ---

def console_row(**kw):
    row = {"email_id": 1, "status": "approved", "status_reason": None, "job_id": 9,
           "job_kind": "send_draft", "job_state": "failed", "job_error": "421 try later",
           "attempts": 2, "send_id": 4, "send_status": "pending", "send_error": None,
           "send_tries": 2, "index_status": "complete", "index_missing": None}
    return console.AttentionItem.from_row({**row, **kw})


def test_the_console_offers_no_resolve_while_a_send_is_in_its_retry_cycle():
    item = console.describe(console_row())
    assert item.kinds == ["retrying"]
    assert item.can_resolve is False and item.can_retry is True


def test_the_console_offers_the_send_decision_not_retry_or_resolve_for_an_unknown_send():
    item = console.describe(console_row(status="manual", job_state="done",
                                         send_status="unknown", send_error="timeout"))
    assert item.kinds == ["manual", "send_unknown"] and item.last_error == "timeout"
    assert (item.can_retry, item.can_resolve, item.can_decide_send) == (
        False, False, True)


def test_the_console_offers_resolve_for_a_failed_mail_whose_entry_is_dead():
    item = console.describe(console_row(status="failed", job_state="dead", job_kind="process_email",
                                         send_id=None, send_status=None))
    assert item.kinds == ["failed", "dead"]
    assert item.can_resolve is True and item.can_retry is True


def test_a_draft_outside_the_users_mailboxes_is_not_found():
    from email_rag.review.access import in_scope

    assert in_scope(frozenset({1, 2}), 2) and in_scope(None, 7)
    assert not in_scope(frozenset({1, 2}), 3) and not in_scope(None, None)
    assert not in_scope(frozenset(), 1)


def test_approval_after_a_relay_refusal_arms_the_same_attempt_and_message_id(svc):
    email_id, draft_id = review_world(svc)
    first = review.approve(svc, draft_id, "anna")
    svc.rows.row("send_attempts", first.send_attempt_id)["status"] = "failed"  # 550, then
    svc.rows.row("drafts", draft_id)["status"] = "pending_review"  # an admin's retry: review
    svc.rows.row("emails", email_id)["status"] = "draft_ready"
    again = review.approve(svc, draft_id, "anna")
    assert (again.send_attempt_id, again.message_id) == (first.send_attempt_id, first.message_id)
    assert statuses(svc, email_id, draft_id) == ("approved", "approved", SendStatus.PENDING)
    [rearmed] = [e for e in svc.rows.events if e.event == "rearmed"]
    assert "relay refused" in rearmed.detail["why"] and "old_message_id" not in rearmed.detail
