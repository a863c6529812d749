"""settings.safeguards: on by default; off ONLY for the chaos harness's counter-check.

Each switch is one condition at the place of a guarantee; these tests pin what turning it
off does (the chaos run's naive column depends on it) and that the default keeps it on.
"""

from __future__ import annotations

from email_rag.core.retry import RetryPolicy
from email_rag.core.settings import Settings
from email_rag.jobs.store import JobStore
from email_rag.sending import review
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox


def test_safeguards_are_on_unless_switched_off(monkeypatch):
    assert Settings().safeguards is True
    monkeypatch.setenv("EMAIL_RAG_SAFEGUARDS", "false")
    assert Settings().safeguards is False


def test_claim_of_a_finished_entry_is_refused_with_safeguards_and_taken_without(db):
    """GIVEN a finished entry delivered again WHEN a worker claims it THEN the claim is
    refused (hardened) - or taken, re-running the job (naive)."""
    job = make_job(db, make_email(db))
    db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (job,))
    policy = RetryPolicy()
    assert JobStore(db, policy).claim(job, "w1") is None
    taken = JobStore(db, policy, claim_query="jobs_claim_naive").claim(job, "w1")
    assert taken is not None and taken["state"] == "processing"


def test_second_approval_is_a_no_op_with_safeguards_and_re_arms_the_send_without(settings, db):
    """GIVEN a draft approved and sent WHEN it is approved again THEN nothing happens
    (hardened) - or its send attempt goes back to pending and its job is queued (naive)."""
    svc = Services(settings)
    try:
        mail = make_email(db, make_mailbox(db))
        draft = make_draft(db, mail)
        first = review.approve(svc, draft, "anna")
        db.execute("UPDATE send_attempts SET status = 'sent' WHERE id = %s",
                   (first.send_attempt_id,))
        db.execute("UPDATE drafts SET status = 'sent' WHERE id = %s", (draft,))
        db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (first.job_id,))
        assert review.approve(svc, draft, "ben").action == "already_approved"
        assert db.fetchone("SELECT status FROM send_attempts")["status"] == "sent"

        settings.safeguards = False  # the variant is chosen when the services are built
        naive = Services(settings)
        try:
            again = review.approve(naive, draft, "ben")
        finally:
            naive.close()
        assert again.action == "approved" and again.send_attempt_id == first.send_attempt_id
        assert db.fetchone("SELECT status FROM send_attempts")["status"] == "pending"
        assert db.fetchone("SELECT state FROM jobs WHERE id = %s",
                           (first.job_id,))["state"] == "queued"
    finally:
        svc.close()
