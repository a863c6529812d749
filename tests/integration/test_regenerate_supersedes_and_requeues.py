"""Regenerate a draft: supersede it, clear the retrieve/draft checkpoints, queue the mail again."""

from __future__ import annotations

import pytest
from rq import Queue

from email_rag.adapters.queue import rq_job_id
from email_rag.core.errors import StateRefused
from email_rag.core.states import Step
from email_rag.db import sql
from email_rag.db.audit import events_for
from email_rag.pipeline.contract import StepOutcome, StepSpec
from email_rag.runtime.job_runner import JobRunner
from email_rag.sending.regenerate import regenerate
from email_rag.sending.review import approve
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox

STEPS = ("parse", "classify", "index", "retrieve", "draft")


@pytest.fixture
def svc(settings):
    s = Services(settings)
    yield s
    s.close()


def drafted_mail(db):
    """A mail that went through every step: checkpoints, a done job, a pending draft."""
    mail = make_email(db, make_mailbox(db), category="technical")
    for step in STEPS:
        db.execute("INSERT INTO email_steps (email_id, step) VALUES (%s, %s)", (mail, step))
    job = make_job(db, mail, state="done")
    db.execute("UPDATE jobs SET attempts = 2, last_error = 'old' WHERE id = %s", (job,))
    return mail, job, make_draft(db, mail)


def rq_ids(svc, queue):
    return Queue(queue, connection=svc.queue.redis).job_ids


def test_regenerate_supersedes_clears_checkpoints_and_requeues(svc, db):
    """GIVEN a drafted mail WHEN staff regenerate THEN the draft is superseded, only the
    retrieve and draft checkpoints are gone, the job row is queued with a fresh cycle,
    the RQ job is in Redis, and all of it is audited with the acting user."""
    mail, job, draft = drafted_mail(db)
    result = regenerate(svc, draft, "anna", note="tone too formal")
    assert (result.action, result.job_id, result.enqueued) == ("requeued", job, True)
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "superseded"
    left = {r["step"] for r in db.fetchall("SELECT step FROM email_steps WHERE email_id = %s", (mail,))}
    assert left == {"parse", "classify", "index"}
    row = db.fetchone("SELECT * FROM jobs WHERE id = %s", (job,))
    assert (row["state"], row["attempts"], row["last_error"], row["worker"]) == ("queued", 0, None, None)
    assert row["queue"] == svc.settings.queue_name
    assert rq_ids(svc, row["queue"]) == [rq_job_id(job, row["queue"])]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "classified"
    events = {(e["entity_type"], e["event"], e["actor"]) for t, i in
              (("draft", draft), ("email", mail), ("job", job)) for e in events_for(db, t, i)}
    assert {("draft", "superseded", "user:anna"), ("email", "state_changed", "user:anna"),
            ("job", "regenerate_requested", "user:anna")} <= events


def test_second_regenerate_is_a_no_op(svc, db):
    """GIVEN a draft already regenerated (double click) WHEN regenerate again THEN nothing changes."""
    mail, job, draft = drafted_mail(db)
    regenerate(svc, draft, "anna")
    again = regenerate(svc, draft, "ben")
    assert again.action == "already_superseded" and again.job_id == job
    assert len(rq_ids(svc, svc.settings.queue_name)) == 1
    assert not [e for e in events_for(db, "draft", draft) if e["actor"] == "user:ben"]


def test_refused_for_an_approved_draft_and_while_the_job_runs(svc, db):
    mail, job, draft = drafted_mail(db)
    db.execute("UPDATE jobs SET state = 'processing', worker = 'w' WHERE id = %s", (job,))
    with pytest.raises(StateRefused, match="being processed"):
        regenerate(svc, draft, "anna")
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "pending_review"
    assert db.fetchone("SELECT COUNT(*) AS n FROM email_steps WHERE email_id = %s", (mail,))["n"] == 5
    db.execute("UPDATE jobs SET state = 'done', worker = NULL WHERE id = %s", (job,))
    approve(svc, draft, "anna")
    with pytest.raises(StateRefused, match="approved"):
        regenerate(svc, draft, "anna")


def test_without_a_job_row_one_is_created(svc, db):
    mail = make_email(db, make_mailbox(db))
    draft = make_draft(db, mail)
    result = regenerate(svc, draft, "anna")
    row = db.fetchone("SELECT * FROM jobs WHERE job_key = %s", (f"process_email:{mail}",))
    assert row["id"] == result.job_id and row["state"] == "queued"
    # no classify checkpoint: the mail starts over as received
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "received"


def test_redis_down_leaves_the_row_queued_for_redispatch(settings, db):
    settings.redis_url = "redis://127.0.0.1:1/0"
    svc = Services(settings)
    try:
        mail, job, draft = drafted_mail(db)
        result = regenerate(svc, draft, "anna")
    finally:
        svc.close()
    assert result.action == "requeued" and result.enqueued is False
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "queued"


def test_the_worker_reruns_retrieve_and_draft_and_makes_version_2(svc, db):
    """GIVEN a regenerated draft WHEN the worker runs the job THEN confirmed steps are skipped
    and the draft step writes version 2 (a stand-in draft step: the LLM one is not tested here)."""
    mail, job, draft = drafted_mail(db)
    ran = []

    def step(name):
        def run(ctx):
            ran.append(name)
            if name != "draft":
                return StepOutcome()

            def write(cur):
                v = cur.fetchone(sql("drafts_next_version"), {"email_id": ctx.email_id})["v"]
                cur.execute(sql("drafts_insert"), {
                    "email_id": ctx.email_id, "version": v, "subject": "Re: x",
                    "body": "new text", "sources": "[]", "language": "de",
                    "prompt_version": "t", "model": "t", "check_flags": None})
            return StepOutcome(write=write, mail_status="draft_ready")
        return StepSpec(Step(name), run)

    regenerate(svc, draft, "anna")
    runner = JobRunner(svc, "w1", pipeline=[step(s) for s in STEPS])
    assert runner.run(job) == "done"
    assert ran == ["retrieve", "draft"]
    rows = db.fetchall("SELECT version, status FROM drafts WHERE email_id = %s ORDER BY version", (mail,))
    assert [(r["version"], r["status"]) for r in rows] == [(1, "superseded"), (2, "pending_review")]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "draft_ready"
