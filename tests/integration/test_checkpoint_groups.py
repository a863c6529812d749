"""Grouped checkpoints: steps that run one after the other in one process share one
checkpoint transaction (email_rag.pipeline.runner), and the last group carries the
entry's finish or hand-off. Each row of the runner's failure table is tested here with
scripted steps against real MariaDB and Redis.
"""

from __future__ import annotations

import pytest

from email_rag.core.errors import TransientError
from email_rag.core.retry import RetryPolicy
from email_rag.core.states import MailStatus, Step
from email_rag.db.audit import events_for
from email_rag.jobs.store import JobStore
from email_rag.pipeline.registry import default_pipeline
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job
from tests.integration.test_job_runner_steps_retries_and_claims import Steps, force_due, job_row


class Crash(BaseException):
    """Stands for a SIGKILL: nothing after it runs, no except clause of the code sees it."""


@pytest.fixture
def services(settings):
    svc = Services(settings)
    yield svc
    svc.close()


def grouped(steps: Steps) -> list:
    """parse + classify in one group; index (an outside write) starts the second group,
    retrieve shares it - the default pipeline's shape."""
    return [steps.spec(Step.PARSE),
            steps.spec(Step.CLASSIFY, commit_before=False, mail_status=MailStatus.CLASSIFIED),
            steps.spec(Step.INDEX),
            steps.spec(Step.RETRIEVE, commit_before=False)]


def confirmed(db, email) -> list[str]:
    return sorted(r["step"] for r in db.fetchall(
        "SELECT step FROM email_steps WHERE email_id = %s", (email,)))


def names(db, entity, entity_id) -> list[str]:
    return [e["event"] for e in events_for(db, entity, entity_id)]


def crash_then_cleanup(db, job) -> None:
    """The worker died holding the entry: cleanup resets it into the retry cycle."""
    db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 700 SECOND WHERE id = %s", (job,))
    assert JobStore(db, RetryPolicy(jitter=0)).reset_stuck(600)
    force_due(db, job)


def test_the_default_pipeline_commits_before_the_vector_upsert_only():
    """classify's LLM call only reads (it may be repeated); index writes the vector store
    from the classification, so parse + classify are durable before it runs."""
    assert {s.step: s.commit_before for s in default_pipeline()} == {
        Step.PARSE: True, Step.CLASSIFY: False, Step.INDEX: True, Step.RETRIEVE: False,
        Step.DRAFT: False}


def test_two_groups_and_the_finish_take_two_checkpoint_commits(services, db):
    """GIVEN two groups WHEN the job runs THEN claim, the run's read, one commit per group
    (the second one also finishing the entry): 4 commits; every step confirmed once."""
    email, steps = make_email(db), Steps()
    job = make_job(db, email)
    before = services.db.commits
    assert JobRunner(services, "w1", grouped(steps)).run(job) == "done"
    assert services.db.commits - before == 4
    assert job_row(db, job)["state"] == "done"
    assert confirmed(db, email) == ["classify", "index", "parse", "retrieve"]
    assert names(db, "job", job) == ["claimed", "state_changed"]
    events = names(db, "email", email)
    assert events.count("step_confirmed") == 4 and events.count("state_changed") == 1
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (email,))["status"] == \
        "classified"


def killed_at_first_call(services, steps, job, step) -> None:
    """Worker w1 runs the entry and is killed (``Crash``) at the first call of ``step``."""
    def kill(ctx):
        if steps.calls[step] == 1:
            raise Crash()

    steps.hooks[step] = kill
    with pytest.raises(Crash):
        JobRunner(services, "w1", grouped(steps)).run(job)


def test_a_crash_inside_a_group_repeats_the_group_and_doubles_nothing(services, db):
    """GIVEN a worker killed in classify, after parse ran in the same group WHEN cleanup
    resets the entry and it runs again THEN nothing of the group had been written, the run
    starts at parse again, and every step, status change and event exists once."""
    email, steps = make_email(db), Steps()
    job = make_job(db, email)

    killed_at_first_call(services, steps, job, Step.CLASSIFY)
    assert confirmed(db, email) == []
    assert job_row(db, job)["state"] == "processing"
    crash_then_cleanup(db, job)
    assert JobRunner(services, "w2", grouped(steps)).run(job) == "done"
    assert steps.calls == {Step.PARSE: 2, Step.CLASSIFY: 2, Step.INDEX: 1, Step.RETRIEVE: 1}
    assert confirmed(db, email) == ["classify", "index", "parse", "retrieve"]
    events = names(db, "email", email)
    assert events.count("step_confirmed") == 4 and events.count("state_changed") == 1


def test_a_crash_in_the_last_group_resumes_after_the_committed_group(services, db):
    """GIVEN a worker killed in retrieve, after index (whose group it shares) WHEN the
    entry runs again THEN parse and classify are not repeated (committed before index),
    index runs again (an idempotent upsert) and is confirmed once; the entry is done."""
    email, steps = make_email(db), Steps()
    job = make_job(db, email)

    killed_at_first_call(services, steps, job, Step.RETRIEVE)
    assert confirmed(db, email) == ["classify", "parse"]
    crash_then_cleanup(db, job)
    assert JobRunner(services, "w2", grouped(steps)).run(job) == "done"
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 1, Step.INDEX: 2, Step.RETRIEVE: 2}
    assert names(db, "email", email).count("step_confirmed") == 4
    assert job_row(db, job)["state"] == "done"


def test_a_step_that_raises_commits_the_steps_before_it_in_its_group(services, db):
    """GIVEN classify failing (a transient error) after parse in the same group THEN parse
    is committed with the failure, and the retry starts at classify."""
    email = make_email(db)
    job = make_job(db, email)
    steps = Steps({Step.CLASSIFY: [TransientError("LLM 503")]})
    runner = JobRunner(services, "w1", grouped(steps))
    assert runner.run(job) == "failed"
    assert confirmed(db, email) == ["parse"]
    force_due(db, job)
    assert runner.run(job) == "done"
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 2, Step.INDEX: 1, Step.RETRIEVE: 1}


def test_a_claim_lost_during_a_group_writes_nothing_not_even_the_finish(services, db):
    """GIVEN cleanup resetting the entry while the last group runs THEN its commit is refused
    by the claim fence: no step of it is confirmed and the entry is not finished."""
    email, steps = make_email(db), Steps()
    job = make_job(db, email)
    steps.hooks[Step.RETRIEVE] = lambda ctx: db.execute(
        "UPDATE jobs SET state = 'failed', worker = NULL WHERE id = %s", (job,))
    assert JobRunner(services, "w1", grouped(steps)).run(job) == "lost"
    assert confirmed(db, email) == ["classify", "parse"]
    assert job_row(db, job)["state"] == "failed"
    assert "state_changed" not in names(db, "job", job)


def test_a_hand_off_is_committed_with_the_group_before_it(services, db):
    """GIVEN a plain worker (no vector store) WHEN the next step needs the vector queue THEN
    the group and the entry's move to that queue are one commit; the hand-off is enqueued;
    the vector worker then runs index and finishes the entry."""
    email, steps = make_email(db), Steps()
    job = make_job(db, email)
    pipeline = [steps.spec(Step.PARSE),
                steps.spec(Step.CLASSIFY, commit_before=False, mail_status=MailStatus.CLASSIFIED),
                steps.spec(Step.INDEX, needs_vectors=True)]
    before = services.db.commits
    assert JobRunner(services, "w1", pipeline).run(job) == "handed_off"
    assert services.db.commits - before == 3  # claim, read, group + hand-off
    row = job_row(db, job)
    assert (row["state"], row["queue"], row["attempts"]) == ("queued", "email-rag-vectors", 0)
    assert confirmed(db, email) == ["classify", "parse"]
    assert services.queue.queue("email-rag-vectors").count == 1
    assert JobRunner(services, "w2", pipeline).run(job, "email-rag-vectors") == "done"
    assert names(db, "job", job) == ["claimed", "handed_off", "claimed", "state_changed"]
    assert steps.calls == {Step.PARSE: 1, Step.CLASSIFY: 1, Step.INDEX: 1}
