"""There is no safeguards switch: the chaos counter-check is harness code.

The chaos run's naive column is built from harness classes (harness/email_rag_harness/chaos/naive.py)
that the harness injects into the processes it starts. These tests pin both sides:

- the product, with a leftover ``EMAIL_RAG_SAFEGUARDS=false`` in its environment,
  still dedups, claims, locks approvals and reconciles sends - and reports the
  variable as one that changes nothing;
- each naive class still shows the defect its safeguard prevents (the naive column
  of ``email-rag chaos`` depends on it).
"""

from __future__ import annotations

import logging

import pytest
from email_rag_harness.chaos.naive import (
    NaiveDraftStore,
    NaiveJobStore,
    NaiveServices,
)
from email_rag_harness.testing.mails import mail
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.core.retry import RetryPolicy
from email_rag.core.settings import Settings, get_settings, retired_variables
from email_rag.core.states import Actor, Step
from email_rag.db.queries import SQL_DIR
from email_rag.db.stores import DraftStore
from email_rag.jobs.store import JobStore
from email_rag.pipeline.contract import StepOutcome, StepSpec
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending import review
from email_rag.sending.sender import SendService, Unconfirmed
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.integration.ingest_helpers import FAST, emails

LEFTOVER = "EMAIL_RAG_SAFEGUARDS"


@pytest.fixture
def leftover(monkeypatch, env) -> Settings:
    """The test's settings, read with ``EMAIL_RAG_SAFEGUARDS=false`` in the environment."""
    monkeypatch.setenv(LEFTOVER, "false")
    get_settings.cache_clear()
    return get_settings()


class MemorySentFolder:
    """The IMAP Sent folder of these tests: searching it fails (the outcome stays open)."""

    def contains(self, message_id: str) -> bool:
        from email_rag.core.errors import ImapError

        raise ImapError("IMAP down")

    def append(self, message: bytes) -> None:
        pass


@pytest.fixture
def relay():
    with FaultSmtpServer() as server:
        yield server


def attempted_send(services: Services, db) -> tuple[int, str]:
    """An approved draft whose send was started and never confirmed (a worker died)."""
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    result = review.approve(services, draft, "anna")
    db.execute("UPDATE send_attempts SET status = 'attempted', tries = 1 WHERE id = %s",
               (result.send_attempt_id,))
    return result.job_id, result.message_id


def send_runner(services: Services) -> JobRunner:
    """A runner whose send service is the one ``services`` build (its ``Unconfirmed``
    policy), on a Sent folder whose search fails."""
    runner = JobRunner(services, "w1", pipeline=[])
    runner._handlers = {"send_draft": SendService(
        services, sent_folder=lambda _: MemorySentFolder(),
        unconfirmed=services.send_service().unconfirmed).run}
    return runner


def counting_pipeline(runs: list[int]) -> list[StepSpec]:
    def step(ctx):
        runs.append(ctx.email_id)
        return StepOutcome(detail={"ok": True})

    return [StepSpec(Step.PARSE, step)]


# --- the product: a leftover variable changes nothing -------------------------------------

def test_a_leftover_safeguards_variable_is_no_setting_and_is_reported(monkeypatch, caplog):
    monkeypatch.setenv(LEFTOVER, "false")
    assert not hasattr(Settings(), "safeguards")
    get_settings.cache_clear()
    with caplog.at_level(logging.WARNING, logger="email_rag.core.settings"):
        get_settings()
    [warning] = [r.getMessage() for r in caplog.records if LEFTOVER in r.getMessage()]
    assert "changes nothing" in warning and "Remove it" in warning


def test_a_leftover_safeguards_line_in_dot_env_is_reported_too(tmp_path):
    (tmp_path / ".env").write_text(f"{LEFTOVER}=false\n")
    [message] = retired_variables({}, tmp_path / ".env")
    assert message.startswith(f"{LEFTOVER} is set in {tmp_path / '.env'}")
    assert retired_variables({}, tmp_path / "missing.env") == []


def test_with_the_leftover_variable_a_finished_entry_is_not_claimed_again(leftover, db):
    job = make_job(db, make_email(db))
    db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (job,))
    svc = Services(leftover)
    try:
        assert type(svc.jobs) is JobStore and svc.jobs.claim(job, "w1") is None
    finally:
        svc.close()
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "done"


def test_with_the_leftover_variable_a_second_approval_is_a_no_op(leftover, db):
    svc = Services(leftover)
    try:
        draft = make_draft(db, make_email(db, make_mailbox(db)))
        first = review.approve(svc, draft, "anna")
        db.execute("UPDATE send_attempts SET status = 'sent' WHERE id = %s",
                   (first.send_attempt_id,))
        db.execute("UPDATE drafts SET status = 'sent' WHERE id = %s", (draft,))
        db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (first.job_id,))
        assert review.approve(svc, draft, "ben").action == "already_approved"
    finally:
        svc.close()
    assert db.fetchone("SELECT status FROM send_attempts")["status"] == "sent"
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (first.job_id,))["state"] == "done"


def test_with_the_leftover_variable_a_duplicate_delivery_is_stored_once(leftover, db, mailbox):
    mailbox.append_many([mail(1), b"Received: from mx2.example\r\n" + mail(1)])
    svc = Services(leftover.model_copy(update={"mailboxes": [mailbox.config], **FAST}))
    try:
        totals = svc.poller().poll().totals
    finally:
        svc.close()
    assert (totals["new"], totals["duplicate"]) == (1, 1) and len(emails(db)) == 1


def test_with_the_leftover_variable_an_attempted_send_is_reconciled_not_resent(
        leftover, db, relay):
    svc = Services(leftover.model_copy(update={"smtp_port": relay.port, "retry_jitter": 0}))
    try:
        job, _ = attempted_send(svc, db)
        assert svc.send_service().unconfirmed is Unconfirmed.RECONCILE
        assert send_runner(svc).run(job) == "failed"  # the search failed
    finally:
        svc.close()
    assert relay.received == []
    assert db.fetchone("SELECT status FROM send_attempts")["status"] == "attempted"


def test_with_the_leftover_variable_a_confirmed_step_is_not_run_again(leftover, db):
    email = make_email(db)
    job = make_job(db, email)
    runs: list[int] = []
    svc = Services(leftover)
    try:
        assert JobRunner(svc, "w1", counting_pipeline(runs)).run(job) == "done"
        db.execute("UPDATE jobs SET state = 'queued' WHERE id = %s", (job,))
        assert JobRunner(svc, "w1", counting_pipeline(runs)).run(job) == "done"
    finally:
        svc.close()
    assert runs == [email]


# --- the harness's naive classes: each shows its defect ------------------------------------

def test_the_naive_queries_live_in_the_harness_not_in_the_product():
    from email_rag.db import sql

    product = "".join(p.read_text() for p in SQL_DIR.iterdir() if p.name.endswith(".sql"))
    for name in ("jobs_claim_naive", "sends_insert_naive", "sends_mark_attempted_naive"):
        assert sql(name) and name not in product


def test_the_naive_claim_takes_a_finished_entry_again(db):
    """GIVEN a finished entry delivered again WHEN a worker claims it THEN the claim is
    refused (product) - or taken, re-running the job (naive)."""
    job = make_job(db, make_email(db))
    db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (job,))
    policy = RetryPolicy()
    assert JobStore(db, policy).claim(job, "w1") is None
    taken = NaiveJobStore(db, policy).claim(job, "w1")
    assert taken is not None and taken.state == "processing"


def test_a_second_approval_re_arms_the_send_with_the_naive_services(settings, db):
    """GIVEN a draft approved and sent WHEN it is approved again THEN nothing happens
    (product) - or its send attempt goes back to pending and its job is queued (naive)."""
    svc = Services(settings)
    try:
        mail_id = make_email(db, make_mailbox(db))
        draft = make_draft(db, mail_id)
        first = review.approve(svc, draft, "anna")
        db.execute("UPDATE send_attempts SET status = 'sent' WHERE id = %s",
                   (first.send_attempt_id,))
        db.execute("UPDATE drafts SET status = 'sent' WHERE id = %s", (draft,))
        db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (first.job_id,))
        assert review.approve(svc, draft, "ben").action == "already_approved"
        assert db.fetchone("SELECT status FROM send_attempts")["status"] == "sent"

        naive = NaiveServices(settings)
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


def test_the_naive_poller_stores_a_duplicate_delivery_again(settings, db, mailbox):
    mailbox.append_many([mail(1), b"Received: from mx2.example\r\n" + mail(1)])
    svc = NaiveServices(settings.model_copy(update={"mailboxes": [mailbox.config], **FAST}))
    try:
        totals = svc.poller().poll().totals
    finally:
        svc.close()
    assert (totals["new"], totals["duplicate"]) == (2, 0) and len(emails(db)) == 2


def test_the_naive_sender_sends_an_attempted_send_again_blindly(settings, db, relay):
    svc = NaiveServices(settings.model_copy(update={"smtp_port": relay.port, "retry_jitter": 0}))
    try:
        job, message_id = attempted_send(svc, db)
        assert svc.send_service().unconfirmed is Unconfirmed.RESEND
        assert send_runner(svc).run(job) == "done"
    finally:
        svc.close()
    assert relay.count(message_id) == 1  # sent although the earlier try's outcome is unknown
    attempt = db.fetchone("SELECT status, tries, reconciled FROM send_attempts")
    assert (attempt["status"], attempt["tries"], attempt["reconciled"]) == ("sent", 2, 0)


def test_the_naive_runner_runs_a_confirmed_step_again(settings, db):
    email = make_email(db)
    job = make_job(db, email)
    runs: list[int] = []
    svc = NaiveServices(settings)
    try:
        assert JobRunner(svc, "w1", counting_pipeline(runs)).run(job) == "done"
        db.execute("UPDATE jobs SET state = 'queued' WHERE id = %s", (job,))
        assert JobRunner(svc, "w1", counting_pipeline(runs)).run(job) == "done"
    finally:
        svc.close()
    assert runs == [email, email]


def open_drafts(db, email: int, n: int = 2) -> list[int]:
    ids = []
    for version in range(1, n + 1):
        ids.append(make_draft(db, email))
        db.execute("UPDATE drafts SET version = %s WHERE id = %s", (version * 10, ids[-1]))
    return ids


def test_the_naive_draft_store_leaves_open_drafts_open_for_the_worker(db):
    """GIVEN two open drafts of a mail WHEN the worker writes a newer one THEN the product
    supersedes them - the naive store leaves them open (duplicate drafts); staff's
    Regenerate supersedes in both."""
    mailbox = make_mailbox(db)
    product_mail, naive_mail = make_email(db, mailbox), make_email(db, mailbox)
    product_drafts = sorted(open_drafts(db, product_mail))
    naive_drafts = sorted(open_drafts(db, naive_mail))
    status = "SELECT status FROM drafts WHERE email_id = %s"
    with db.transaction() as cur:
        assert sorted(DraftStore().supersede_open(cur, product_mail, Actor.WORKER,
                                                  "newer")) == product_drafts
        assert NaiveDraftStore().supersede_open(cur, naive_mail, Actor.WORKER, "newer") == []
    assert {r["status"] for r in db.fetchall(status, (product_mail,))} == {"superseded"}
    assert {r["status"] for r in db.fetchall(status, (naive_mail,))} == {"pending_review"}
    with db.transaction() as cur:
        assert sorted(NaiveDraftStore().supersede_open(cur, naive_mail, "user:anna",
                                                       "regenerate")) == naive_drafts
    assert {r["status"] for r in db.fetchall(status, (naive_mail,))} == {"superseded"}
