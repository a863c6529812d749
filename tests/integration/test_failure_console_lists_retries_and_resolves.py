"""The failure console's domain (list, bulk retry, resolve) and the audit readers."""

from __future__ import annotations

import pytest
from rq import Queue

from email_rag.adapters.queue import rq_job_id
from email_rag.core.errors import BadInputError, PermanentError
from email_rag.db.audit import AuditEvent
from email_rag.review import console, timeline
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox


@pytest.fixture
def svc(settings):
    s = Services(settings)
    yield s
    s.close()


def job_with(db, mail, state, attempts=0, error=None, kind="process_email"):
    job = make_job(db, mail, state=state, kind=kind)
    db.execute("UPDATE jobs SET attempts = %s, last_error = %s WHERE id = %s",
               (attempts, error, job))
    return job


def unknown_send(db, mailbox):
    mail = make_email(db, mailbox, subject="sent?")
    draft = make_draft(db, mail, status="approved")
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status, tries, last_error)"
               " VALUES (%s, %s, 'unknown', 1, 'timeout after DATA; not in Sent')",
               (draft, f"<draft-{draft}@x>"))
    db.execute("UPDATE emails SET status = 'manual' WHERE id = %s", (mail,))
    job_with(db, mail, "done", 1, kind="send_draft")
    return mail


@pytest.fixture
def world(db):
    mb = make_mailbox(db)
    w = {}
    w["failed"] = make_email(db, mb, status="failed", subject="dead one")
    w["failed_job"] = job_with(db, w["failed"], "dead", 3, "LLMError: 503 from endpoint")
    w["manual"] = make_email(db, mb, status="manual", status_reason="LLM timed out twice")
    w["manual_job"] = job_with(db, w["manual"], "done", 1)
    w["retrying"] = make_email(db, mb, status="received")
    w["retrying_job"] = job_with(db, w["retrying"], "failed", 1, "StoreUnavailableError: x")
    w["partial"] = make_email(db, mb, status="sent", index_status="partially_indexed",
                              index_missing="arangodb")
    w["unknown"] = unknown_send(db, mb)
    ok = make_email(db, mb, status="sent")
    job_with(db, ok, "done", 1)
    resolved = make_email(db, mb, status="resolved")
    job_with(db, resolved, "dead", 3, "x [resolved: done by hand]")
    w["hidden"] = [ok, resolved]
    w["sending"] = make_email(db, mb, status="approved", subject="reply in its retry cycle")
    make_draft(db, w["sending"], status="approved")
    w["sending_job"] = job_with(db, w["sending"], "failed", 1, "SmtpTransientError: 451",
                                kind="send_draft")
    return w


def test_lists_every_kind_with_error_attempts_and_actions(svc, world):
    items = {i.email_id: i for i in console.attention_items(svc)}
    assert set(items) == {world[k] for k in ("failed", "manual", "retrying", "partial", "unknown",
                                             "sending")}
    f = items[world["failed"]]
    assert f.kinds == ["failed", "dead"] and f.attempts == 3
    assert f.last_error == "LLMError: 503 from endpoint" and f.can_retry and f.can_resolve
    m = items[world["manual"]]
    assert m.kinds == ["manual"] and m.last_error == "LLM timed out twice" and m.can_retry
    r = items[world["retrying"]]
    assert r.kinds == ["retrying"] and r.last_error.startswith("StoreUnavailableError")
    p = items[world["partial"]]
    assert p.kinds == ["partially_indexed"] and "arangodb" in p.last_error
    assert not (p.can_retry or p.can_resolve or p.can_decide_send)
    u = items[world["unknown"]]
    assert u.kinds == ["manual", "send_unknown"] and u.can_decide_send
    assert not u.can_retry and not u.can_resolve and "not in Sent" in u.last_error
    counts = console.counts_by_kind(list(items.values()))
    assert counts == {"failed": 1, "manual": 2, "dead": 1, "send_unknown": 1, "retrying": 2,
                      "partially_indexed": 1}
    assert [i.email_id for i in console.attention_items(svc, "dead")] == [world["failed"]]


def test_bulk_retry_queues_retryable_entries_on_redis_and_names_the_refused(svc, db, world):
    ids = [world["failed_job"], world["manual_job"], 999999]
    result = console.retry_jobs(svc, ids, "user:root", "LLM is back")
    assert result.retried == [world["failed_job"], world["manual_job"]]
    assert list(result.refused) == [999999] and "does not exist" in result.refused[999999]
    assert result.enqueued
    states = {r["id"]: (r["state"], r["attempts"]) for r in db.fetchall("SELECT * FROM jobs")}
    assert states[world["failed_job"]] == ("queued", 0) and states[world["manual_job"]] == ("queued", 0)
    assert set(Queue(svc.settings.queue_name, connection=svc.queue.redis).job_ids) == {
        rq_job_id(world["failed_job"], svc.settings.queue_name),
        rq_job_id(world["manual_job"], svc.settings.queue_name)}
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (world["failed"],))["status"] == "received"
    assert db.fetchone("SELECT actor FROM audit_log WHERE event = 'admin_retry' LIMIT 1")["actor"] == "user:root"


def test_resolve_closes_the_dead_entry_or_the_mail_with_a_note(svc, db, world):
    with pytest.raises(BadInputError):
        console.resolve_mail(svc, world["failed"], "user:root", "  ")
    r = console.resolve_mail(svc, world["failed"], "user:root", "answered by phone")
    assert r["resolved_jobs"] == [world["failed_job"]] and r["mail_status"] == "resolved"
    r = console.resolve_mail(svc, world["manual"], "user:root", "not a support case")
    assert r["resolved_jobs"] == [] and r["mail_status"] == "resolved"
    assert db.fetchone("SELECT status_reason FROM emails WHERE id = %s",
                       (world["manual"],))["status_reason"] == "not a support case"
    with pytest.raises(PermanentError, match="resolved already, which is final"):
        console.resolve_mail(svc, world["manual"], "user:root", "again")
    with pytest.raises(PermanentError, match="unknown outcome"):
        console.resolve_mail(svc, world["unknown"], "user:root", "x")
    listed = {i.email_id for i in console.attention_items(svc)}
    assert world["failed"] not in listed and world["manual"] not in listed


def test_timeline_merges_mail_job_draft_and_send_events_in_time_order(svc, db, world):
    mail = world["unknown"]
    draft = db.fetchone("SELECT id FROM drafts WHERE email_id = %s", (mail,))["id"]
    send = db.fetchone("SELECT id FROM send_attempts WHERE draft_id = %s", (draft,))["id"]
    job = db.fetchone("SELECT id FROM jobs WHERE email_id = %s", (mail,))["id"]
    other = world["manual"]
    svc.audit.record(
        AuditEvent("worker", "email", mail, "state_changed", "received", "classified"),
        AuditEvent("user:anna", "draft", draft, "approved", "pending_review", "approved"),
        AuditEvent("worker", "job", job, "claimed", None, "processing", attempt=1),
        AuditEvent("worker", "send_attempt", send, "send_unknown", "attempted", "unknown",
                   detail={"error": "timeout"}),
        AuditEvent("worker", "email", other, "state_changed", "received", "manual"))
    data = timeline.mail_timeline(svc, mail)
    assert [(e.entity_type, e.event) for e in data.events] == [
        ("email", "state_changed"), ("draft", "approved"), ("job", "claimed"),
        ("send_attempt", "send_unknown")]
    assert data.events[-1].detail == {"error": "timeout"}
    assert [d.id for d in data.drafts] == [draft] and [s.id for s in data.sends] == [send]
    with pytest.raises(PermanentError):
        timeline.mail_timeline(svc, 987654)


def test_audit_search_filters(svc, db):
    svc.audit.record(
        AuditEvent("user:anna", "draft", 1, "approved"),
        AuditEvent("user:ann_x", "draft", 2, "approved"),
        AuditEvent("worker", "job", 5, "retry_scheduled", attempt=1))
    assert [e.entity_id for e in timeline.search_audit(svc, event="approved")] == ["2", "1"]
    assert [e.actor for e in timeline.search_audit(svc, actor="user:ann_")] == ["user:ann_x"]
    assert [e.event for e in timeline.search_audit(svc, entity_type="job", entity_id="5")] == [
        "retry_scheduled"]
    assert timeline.search_audit(svc, since="2999-01-01T00:00") == []
    assert len(timeline.search_audit(svc, until="2999-01-01T00:00:00+02:00")) == 3
    with pytest.raises(BadInputError):
        timeline.search_audit(svc, since="yesterday")
    assert {"approved", "retry_scheduled"} <= set(timeline.event_names(svc))


def test_retry_with_redis_down_leaves_rows_queued_for_redispatch(settings, db, world):
    settings.redis_url = "redis://127.0.0.1:1/0"
    svc = Services(settings)
    try:
        result = console.retry_jobs(svc, [world["failed_job"]], "user:root")
    finally:
        svc.close()
    assert result.retried == [world["failed_job"]] and result.enqueued is False
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (world["failed_job"],))["state"] == "queued"


@pytest.mark.parametrize("action", ["resolve", "retry"])
def test_the_console_offers_exactly_what_the_store_then_does(svc, world, action):
    """GIVEN every kind of listed mail (an approved mail whose send is in its retry cycle
    among them) WHEN an admin takes the action the console offers, or not THEN the store
    agrees with the offer for every row: offered -> done, not offered -> refused."""
    disagree = []
    for item in console.attention_items(svc):
        offered = getattr(item, f"can_{action}")
        try:
            if action == "resolve":
                console.resolve_mail(svc, item.email_id, "user:root", "checked by hand")
            elif item.job_id:
                svc.jobs.retry(item.job_id, "user:root", "again")
            else:
                raise PermanentError("no entry to retry")
            done = True
        except PermanentError:
            done = False
        if offered != done:
            disagree.append((item.subject, item.status, item.job_state, offered, done))
    assert disagree == []


def test_a_dead_history_index_entry_is_listed_retried_and_its_mail_stays_history(svc, db):
    """GIVEN a history mail whose index_history entry went dead WHEN the console lists it
    THEN it offers the retry; WHEN the admin retries it THEN the entry is queued on its own
    queue again and the mail is still history (memory, never work)."""
    mb = make_mailbox(db)
    mail = make_email(db, mb, status="history", subject="old case")
    job = job_with(db, mail, "dead", attempts=3, error="vector store refused",
                   kind="index_history")
    db.execute("UPDATE jobs SET queue = 'email-rag-history' WHERE id = %s", (job,))
    item = next(i for i in console.attention_items(svc) if i.job_id == job)
    assert item.can_retry is True
    result = console.retry_jobs(svc, [job], "user:root")
    assert result.retried == [job]
    row = db.fetchone("SELECT state, queue FROM jobs WHERE id = %s", (job,))
    assert (row["state"], row["queue"]) == ("queued", "email-rag-history")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "history"
