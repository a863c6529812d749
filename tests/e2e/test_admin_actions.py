"""Admin actions on business state, through the real interfaces (issue 13, defects 1-7).

The CLI runs as a subprocess (``python -m email_rag``), the web console through its
routes (FastAPI TestClient), the send job through the job runner with the aiosmtpd
relay; MariaDB and Redis are the real servers. Each test is one defect of issue 13:
what an admin does, and what must follow.
"""

from __future__ import annotations

import json

import pytest
from email_rag_harness.testing.dovecot import mailboxes_json
from email_rag_harness.testing.mails import garbage
from email_rag_harness.testing.mails import mail as sample_mail

from email_rag.core.retry import retry_policy
from email_rag.core.states import Step
from email_rag.db.audit import events_for
from email_rag.jobs.store import JobStore
from email_rag.pipeline.contract import StepOutcome, StepSpec
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import review
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.helpers import run_cli
from tests.integration.test_sending import SMTP_STALL, relay, sent, svc  # noqa: F401 - fixtures
from tests.webutil import browsers, web_app

DEAD_REDIS = "redis://127.0.0.1:9/0"


@pytest.fixture
def web(settings, db):
    """``browser()``: a browser logged in as the admin root, and its CSRF token."""
    app = web_app(settings, db, {"root": "admin", "rita": "admin"})
    with browsers(app, log_in=True) as new:
        def browser():
            c = new("root")
            return c, c.csrf

        yield browser


def runner(svc, sent, name="w1", sender=None):
    r = JobRunner(svc, name, pipeline=[])
    r._handlers = {**r.handlers(),
                   "send_draft": SendService(svc, sent_folder=lambda _: sent, sender=sender).run}
    return r


def approved_draft(db, svc):
    mailbox = make_mailbox(db)
    mail = make_email(db, mailbox, thread_key="t" * 64)
    draft = make_draft(db, mail)
    review.approve(svc, draft, "anna")
    return mail, draft, db.fetchone("SELECT * FROM jobs WHERE draft_id = %s", (draft,))


def status(db, table, row_id):
    return db.fetchone(f"SELECT status FROM {table} WHERE id = %s", (row_id,))["status"]


def cli_json(*args, **kw):
    result = run_cli(*args, "--json", **kw)
    return result.returncode, json.loads(result.stdout)


# --- defect 1: a refused send goes back to review, with the refusal shown ---

def test_retry_of_a_refused_send_returns_the_mail_to_review_and_a_new_approval_sends_it(
        env, svc, db, relay, sent):
    """GIVEN the relay refused a send with 550 (entry dead, mail failed)
    WHEN an admin runs `failed retry` on the entry
    THEN the draft is pending review again with the refusal as the mail's reason,
    and the staff's next approval sends it once."""
    mail, draft, job = approved_draft(db, svc)
    relay.add_fault("550 5.1.1 user unknown", stage="rcpt")
    assert runner(svc, sent).run(job["id"]) == "dead"
    code, out = cli_json("failed", "retry", str(job["id"]), "--by", "root")
    assert code == 0, out
    assert "review" in out["message"]
    row = db.fetchone("SELECT status, status_reason FROM emails WHERE id = %s", (mail,))
    assert row["status"] == "draft_ready" and "550 5.1.1 user unknown" in row["status_reason"]
    assert status(db, "drafts", draft) == "pending_review"
    pending = json.loads(run_cli("drafts", "list", "--json").stdout)["data"]["drafts"]
    assert [d["id"] for d in pending] == [draft]
    code, out = cli_json("drafts", "approve", str(draft), "--by", "anna")
    assert code == 0 and out["data"]["action"] == "approved", out
    assert runner(svc, sent).run(job["id"]) == "done"
    assert len(relay.received) == 1 and status(db, "emails", mail) == "sent"


# --- defect 2: an unknown send is decided by `sends resolve`, never by a job retry ---

def test_failed_retry_refuses_an_unknown_send_and_names_sends_resolve(env, svc, db, relay, sent):
    """GIVEN a send ended unknown (timeout after DATA, not in the Sent folder)
    WHEN an admin runs `failed retry` on its entry
    THEN it is refused with exit 1 pointing to `sends resolve`, the mail stays manual,
    and `failed list` still lists it."""
    svc.settings.reconcile_sent_folder = False
    mail, draft, job = approved_draft(db, svc)
    relay.add_fault("stall", stage="data", seconds=SMTP_STALL)
    assert runner(svc, sent).run(job["id"]) == "done"
    assert status(db, "emails", mail) == "manual"
    code, out = cli_json("failed", "retry", str(job["id"]), "--by", "root")
    assert code == 1 and "sends resolve" in out["message"], out
    assert status(db, "emails", mail) == "manual"
    code, listed = cli_json("failed", "list")
    assert mail in [i["email_id"] for i in listed["data"]["items"]]


# --- defect 3: retry and resolve refuse resolved mails and finished jobs ---

def test_retry_from_an_old_console_tab_refuses_a_mail_another_admin_resolved(
        env, settings, db, web):
    """GIVEN admin A has the failure console open on a dead entry
    WHEN admin B resolves the mail and A then clicks Retry (or posts by hand)
    THEN A is told it is resolved, nothing is queued, and a worker given the id does nothing."""
    mailbox = make_mailbox(db)
    mail = make_email(db, mailbox, status="failed")
    job = make_job(db, mail, state="dead")
    a, token_a = web()
    assert f"#{mail}" in a.get("/admin/failures").text
    b, token_b = web()
    r = b.post("/admin/failures/resolve", data={"csrf_token": token_b, "email_id": str(mail),
                                                 "note": "customer called"})
    assert f"Mail #{mail} resolved" in r.text
    r = a.post("/admin/failures/retry", data={"csrf_token": token_a, "job_id": str(job)})
    assert "Queued again" not in r.text and "resolved" in r.text
    assert status(db, "emails", mail) == "resolved"
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "dead"
    code, out = cli_json("failed", "retry", str(job), "--by", "root")
    assert code == 1 and "resolved" in out["message"], out
    code, out = cli_json("failed", "resolve", str(job), "--by", "root", "--note", "again")
    assert code == 1 and "resolved" in out["message"], out
    svc = Services(settings)
    try:
        assert JobRunner(svc, "w1", pipeline=[]).run(job) == "skipped"
    finally:
        svc.close()
    assert status(db, "emails", mail) == "resolved"


def test_a_hand_made_retry_post_refuses_a_finished_job(env, db, web):
    """GIVEN a process_email entry that is done and whose draft waits for review
    WHEN someone posts a retry of it by hand
    THEN it is refused and says why; the mail and its entry are unchanged."""
    mail = make_email(db, make_mailbox(db))
    draft = make_draft(db, mail)
    job = make_job(db, mail, state="done")
    a, token = web()
    r = a.post("/admin/failures/retry", data={"csrf_token": token, "job_id": str(job)})
    assert "Queued again" not in r.text and "done" in r.text
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "done"
    assert status(db, "drafts", draft) == "pending_review"


# --- defect 4: a late worker cannot overwrite an unknown send ---

class LateSender:
    """The relay accepts, but only after the entry was reset as stuck and another
    worker has settled the attempt as unknown (its Sent-folder check ran before the
    relay filed the copy)."""

    def __init__(self, real, meanwhile):
        self.real, self.meanwhile = real, meanwhile

    def send(self, *args):
        self.meanwhile()
        return self.real.send(*args)


def test_a_late_worker_does_not_overwrite_an_unknown_send(env, svc, db, relay, sent):
    """GIVEN worker A is slow in SMTP; cleanup resets its entry, worker B settles the
    attempt as unknown
    WHEN A's relay answer arrives
    THEN the attempt stays unknown (an admin decides) and A's answer is in the audit log."""
    svc.settings.reconcile_sent_folder = False
    mail, draft, job = approved_draft(db, svc)

    def meanwhile():
        JobStore(svc.db, retry_policy(svc.settings)).reset_stuck(0)
        db.execute("UPDATE jobs SET next_run_at = NOW(6) WHERE id = %s", (job["id"],))
        assert runner(svc, sent, "w2").run(job["id"]) == "done"
        assert status(db, "send_attempts", attempt) == "unknown"

    attempt = db.fetchone("SELECT id FROM send_attempts WHERE draft_id = %s", (draft,))["id"]
    real = svc.mail_sender
    runner(svc, sent, "w1", sender=LateSender(real, meanwhile)).run(job["id"])
    assert status(db, "send_attempts", attempt) == "unknown"
    assert status(db, "emails", mail) == "manual"
    events = [e["event"] for e in events_for(db, "send_attempt", attempt)]
    assert "late_outcome" in events


# --- defect 5: re-approval while the send entry is still finishing leads to a send ---

def test_reapproval_of_a_stale_draft_while_its_entry_is_processing_still_sends(
        env, svc, db, relay, sent):
    """GIVEN the send job found a newer mail and marked the draft stale, and has not
    finished its entry yet
    WHEN staff approve the stale draft again in that moment
    THEN the entry runs again afterwards and the reply is sent once."""
    mail, draft, job = approved_draft(db, svc)
    mailbox = db.fetchone("SELECT mailbox_id FROM emails WHERE id = %s", (mail,))["mailbox_id"]
    make_email(db, mailbox, subject="Re: Printer broken", thread_key="t" * 64)
    service = SendService(svc, sent_folder=lambda _: sent)
    real_mark = service._mark_stale

    def mark_then_reapprove(*args):
        real_mark(*args)
        again = review.approve(svc, draft, "anna")
        assert again.action == "approved"

    service._mark_stale = mark_then_reapprove
    w1 = JobRunner(svc, "w1", pipeline=[])
    w1._handlers = {**w1.handlers(), "send_draft": service.run}
    w1.run(job["id"])
    assert relay.received == []
    state = db.fetchone("SELECT state FROM jobs WHERE id = %s", (job["id"],))["state"]
    assert state == "queued", "the re-approved draft's entry must run again"
    assert runner(svc, sent, "w2").run(job["id"]) == "done"
    assert len(relay.received) == 1 and status(db, "emails", mail) == "sent"


# --- defect 6: a failed enqueue is audited, at approval and at hand-off ---

def test_approval_with_redis_down_is_audited_as_enqueue_failed(env, db):
    """GIVEN Redis is unreachable
    WHEN staff approve a draft with the CLI
    THEN the approval stands (re-dispatch will enqueue) and the failed enqueue is audited."""
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    code, out = cli_json("drafts", "approve", str(draft), "--by", "anna",
                         env_extra={"EMAIL_RAG_REDIS_URL": DEAD_REDIS})
    assert code == 0 and out["data"]["action"] == "approved", out
    job = db.fetchone("SELECT * FROM jobs WHERE draft_id = %s", (draft,))
    assert job["state"] == "queued"
    failed = [e for e in events_for(db, "job", job["id"]) if e["event"] == "enqueue_failed"]
    assert failed and "connection refused" in failed[0]["detail"].lower()
    assert "re-dispatch" in failed[0]["detail"]


def test_handoff_with_redis_down_is_audited_as_enqueue_failed(env, settings, db):
    """GIVEN a job whose next step runs on the vector queue, and Redis unreachable
    WHEN the worker hands it off
    THEN the entry is queued on the vector queue in MariaDB and the failed enqueue is audited."""
    settings.qdrant_url = None
    mail = make_email(db, make_mailbox(db))
    job = make_job(db, mail)
    svc = Services(settings)
    try:
        svc.queue.redis_url = DEAD_REDIS
        step = StepSpec(Step.INDEX, lambda ctx: StepOutcome(), needs_vectors=True)
        assert JobRunner(svc, "w1", pipeline=[step]).run(job) == "handed_off"
    finally:
        svc.close()
    row = db.fetchone("SELECT state, queue FROM jobs WHERE id = %s", (job,))
    assert row["state"] == "queued" and row["queue"] == settings.vector_queue_name
    assert "enqueue_failed" in [e["event"] for e in events_for(db, "job", job)]


# --- defect 7: every mail a human must look at is in `failed list` and can be closed ---

def test_failed_list_shows_poller_failures_and_too_large_mails_and_resolve_takes_a_mail_id(
        env, db, mailbox):
    """GIVEN the poller stored an unparseable mail and a too-large mail (no queue entry)
    WHEN an admin runs `failed list` and `failed resolve --mail ID`
    THEN both are listed, and each can be closed by its mail id."""
    big = sample_mail(2, body="x" * 5000)
    mailbox.append_many([garbage(), big])
    poll_env = {"EMAIL_RAG_MAILBOXES": mailboxes_json([mailbox.config]),
                "EMAIL_RAG_MAX_MAIL_BYTES": "2000"}
    run_cli("poll", "--once", env_extra=poll_env)
    mails = {r["parse_status"]: r["id"] for r in
             db.fetchall("SELECT id, parse_status FROM emails")}
    assert set(mails) == {"failed", "too_large"}
    assert db.fetchone("SELECT COUNT(*) AS n FROM jobs")["n"] == 0
    code, out = cli_json("failed", "list")
    assert code == 0
    assert {i["email_id"] for i in out["data"]["items"]} == set(mails.values())
    for mail_id in mails.values():
        code, out = cli_json("failed", "resolve", "--mail", str(mail_id), "--by", "root",
                             "--note", "forwarded to the customer by phone")
        assert code == 0, out
        assert status(db, "emails", mail_id) == "resolved"
    code, out = cli_json("failed", "list")
    assert out["data"]["items"] == []


# --- found by the 500-mail chaos run: resolving a retrying entry stranded its mail ---

def test_resolve_of_a_retrying_send_entry_is_refused_and_the_mail_is_not_stranded(
        env, svc, db, relay, sent):
    """GIVEN an approved draft whose send entry failed with a 4xx and waits for its retry
    (listed in `failed list`) WHEN a second admin runs `failed resolve` on that entry
    THEN it is refused - the mail does not wait for a human, it is being sent - and the
    entry stays in its retry cycle, so the next run sends it once. Before: the entry was
    closed dead, the mail rested in `approved` and the reply was never sent."""
    mail, draft, job = approved_draft(db, svc)
    relay.add_fault("451 4.7.1 try later", stage="rcpt")
    assert runner(svc, sent).run(job["id"]) == "failed"
    code, out = cli_json("failed", "resolve", str(job["id"]), "--note", "closing", "--by", "rita")
    assert code == 1, out
    assert "approved" in out["message"] and "retry" in out["message"], out["message"]
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job["id"],))["state"] == "failed"
    db.execute("UPDATE jobs SET next_run_at = NOW(6) WHERE id = %s", (job["id"],))
    assert runner(svc, sent).run(job["id"]) == "done"
    assert len(relay.received) == 1 and status(db, "emails", mail) == "sent"
