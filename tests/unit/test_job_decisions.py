"""JobStore's decisions, the real JobStore over the in-memory rows (tests/doubles).

Claim, finish, fail, retry, dead letter, stuck reset, admin retry and resolve, and the
console's questions (``rules.retry_refusal`` / ``resolve_refusal``) - each asserted on
the records and audit events the store wrote. SQL and concurrency: the MariaDB tests
(tests/integration/test_job_runner_steps_retries_and_claims.py, test_stuck_reset_locks.py, test_failure_console_lists_retries_and_resolves.py).
"""

from __future__ import annotations

import pytest

from email_rag.core.errors import LLMError, PermanentError, TransitionRefused
from email_rag.core.retry import RetryPolicy
from email_rag.core.states import (
    DraftStatus,
    JobKind,
    JobState,
    MailStatus,
    SendStatus,
)
from email_rag.core.timing import ALIVE
from email_rag.jobs import rules
from email_rag.jobs.store import JobStore
from tests.doubles.memory_db import MemoryDatabase

POLICY = RetryPolicy(delays=(30.0, 120.0), max_attempts=3, jitter=0)


@pytest.fixture
def rows() -> MemoryDatabase:
    return MemoryDatabase()


@pytest.fixture
def store(rows) -> JobStore:
    return JobStore.over(rows, POLICY)


def waiting(rows, status=MailStatus.RECEIVED, **kw):
    mail = rows.add_mail(status)
    return mail, rows.add_job(email_id=mail.id, **kw)


# --- claim / finish / hand-off ---

def test_a_claim_takes_a_waiting_entry_once_and_counts_the_attempt(rows, store):
    _, job = waiting(rows)
    claimed = store.claim(job.id, "w1")
    assert claimed is not None and claimed.state == JobState.PROCESSING
    assert claimed.attempts == 1 and claimed.worker == "w1"
    assert store.claim(job.id, "w2") is None  # a second delivery is a no-op
    assert rows.events_of("job", job.id) == ["claimed"]


def test_a_claim_refuses_an_entry_of_another_queue_or_not_due(rows, store):
    _, job = waiting(rows, queue="email-rag-vectors")
    assert store.claim(job.id, "w1", "email-rag") is None
    _, later = waiting(rows, next_run_at=rows.now.replace(hour=10))
    assert store.claim(later.id, "w1") is None
    rows.later(3600)
    assert store.claim(later.id, "w1") is not None
    assert store.claim(job.id, "w1", "email-rag-vectors") is not None


def test_finish_is_only_the_claiming_workers(rows, store):
    _, job = waiting(rows)
    claimed = store.claim(job.id, "w1")
    assert not store.finish(claimed, "late-worker")
    assert rows.jobs[job.id].state == JobState.PROCESSING
    assert store.finish(claimed, "w1")
    assert rows.jobs[job.id].state == JobState.DONE
    assert rows.events_of("job", job.id) == ["claimed", "state_changed"]


def test_a_handoff_moves_the_entry_without_counting_an_attempt(rows, store):
    _, job = waiting(rows)
    claimed = store.claim(job.id, "w1")
    assert store.handoff(claimed, "w1", "email-rag-vectors", "index step")
    moved = rows.jobs[job.id]
    assert (moved.state, moved.queue, moved.attempts, moved.worker) == (
        JobState.QUEUED, "email-rag-vectors", 0, None)
    assert store.claim(job.id, "w2", "email-rag-vectors").attempts == 1


# --- failure, retry cycle, dead letter ---

def test_a_transient_failure_schedules_a_retry_at_the_policys_delay(rows, store):
    mail, job = waiting(rows)
    decision = store.fail(store.claim(job.id, "w1"), "w1", LLMError("down"))
    failed = rows.jobs[job.id]
    assert decision.retry and failed.state == JobState.FAILED
    assert (failed.next_run_at - rows.now).total_seconds() == 30.0
    assert "LLMError: down" in failed.last_error
    assert store.claim(job.id, "w1") is None  # not due yet
    rows.later(30)
    assert store.claim(job.id, "w1").attempts == 2
    assert rows.mails[mail.id].status == MailStatus.RECEIVED


def test_the_last_attempt_dead_letters_the_entry_and_fails_the_mail(rows, store):
    mail, job = waiting(rows)
    for _ in range(POLICY.max_attempts):
        rows.later(600)
        store.fail(store.claim(job.id, "w1"), "w1", LLMError("down"))
    dead = rows.jobs[job.id]
    assert dead.state == JobState.DEAD and dead.attempts == POLICY.max_attempts
    assert rows.mails[mail.id].status == MailStatus.FAILED
    assert rows.events_of("job", job.id).count("retry_scheduled") == 2
    assert rows.events_of("job", job.id)[-1] == "dead_letter"
    assert rows.events_of("email", mail.id) == ["state_changed"]


def test_a_permanent_error_is_dead_at_once_and_a_final_mail_stays_as_it_is(rows, store):
    mail, job = waiting(rows, MailStatus.SENT)
    decision = store.fail(store.claim(job.id, "w1"), "w1", PermanentError("bad"))
    assert not decision.retry and rows.jobs[job.id].state == JobState.DEAD
    assert rows.mails[mail.id].status == MailStatus.SENT and not rows.events_of("email", mail.id)


def test_a_failure_of_a_worker_that_lost_its_claim_writes_nothing(rows, store):
    _, job = waiting(rows)
    claimed = store.claim(job.id, "w1")
    rows.row("jobs", job.id)["worker"] = "w2"  # another worker took it over
    store.fail(claimed, "w1", LLMError("late"))
    assert rows.jobs[job.id].state == JobState.PROCESSING
    assert rows.events_of("job", job.id) == ["claimed"]


def test_a_stuck_entry_is_reset_unless_its_worker_still_beats(rows, store):
    _, job = waiting(rows)
    _, beating = waiting(rows)
    store.claim(job.id, "gone")
    store.claim(beating.id, "alive")
    assert store.reset_stuck(600) == []  # just started
    rows.later(700)
    seen = []

    def liveness(claims):
        seen.extend(claims)
        return {i: ALIVE if i == beating.id else "worker alive but hung: step parse"
                for i, _ in claims}

    [reset] = store.reset_stuck(600, liveness=liveness)
    assert sorted(seen) == sorted([(job.id, "gone"), (beating.id, "alive")])
    assert reset.id == job.id and reset.state == JobState.FAILED
    assert rows.jobs[beating.id].state == JobState.PROCESSING
    assert "stuck_reset" in rows.events_of("job", job.id)


# --- admin retry ---

def test_an_admin_retry_requeues_a_dead_entry_and_resumes_its_failed_mail(rows, store):
    mail, job = waiting(rows, MailStatus.FAILED, state=JobState.DEAD, attempts=3)
    rows.steps[mail.id] = {"parse", "classify"}
    assert store.retry(job.id, "user:anna", "LLM back") == "queued"
    again = rows.jobs[job.id]
    assert (again.state, again.attempts) == (JobState.QUEUED, 0)
    assert rows.mails[mail.id].status == MailStatus.CLASSIFIED
    assert rows.events_of("job", job.id) == ["admin_retry"]


def test_an_admin_retry_of_a_done_entry_whose_mail_waits_for_a_human_runs_it_again(rows,
                                                                                   store):
    mail, job = waiting(rows, MailStatus.MANUAL, state=JobState.DONE, attempts=1)
    assert store.retry(job.id, "user:anna") == "queued"
    assert rows.jobs[job.id].state == JobState.QUEUED
    assert rows.mails[mail.id].status == MailStatus.RECEIVED  # nothing confirmed yet


def test_an_admin_retry_of_an_entry_that_ran_every_step_is_refused_and_strands_nothing(
        rows, store):
    """GIVEN a mail the pipeline itself left for a human (every step confirmed, e.g. no
    sender address) WHEN an admin retries its done entry THEN it is refused: the entry
    would run nothing and the mail would rest in classified (chaos seed 15, 2026-12-01:
    `failed retry` of everything listed stranded such a mail)."""
    mail, job = waiting(rows, MailStatus.MANUAL, state=JobState.DONE, attempts=2)
    rows.steps[mail.id] = {"parse", "classify", "index", "retrieve", "draft"}
    with pytest.raises(TransitionRefused, match="every step"):
        store.retry(job.id, "user:anna")
    assert rows.jobs[job.id].state == JobState.DONE
    assert rows.mails[mail.id].status == MailStatus.MANUAL


def test_an_admin_retry_requeues_a_dead_history_index_entry_and_leaves_the_mail_history(
        rows, store):
    """GIVEN a history mail (final: it is memory, never work) whose index_history entry went
    dead (a store refused) WHEN an admin retries the entry THEN it is queued again and the
    mail stays history; the console offers the retry; a process_email entry of a history
    mail is still refused."""
    mail, job = waiting(rows, MailStatus.HISTORY, state=JobState.DEAD, attempts=3,
                        kind=JobKind.INDEX_HISTORY, queue="email-rag-history")
    assert rules.retry_refusal(MailStatus.HISTORY, JobState.DEAD, None,
                               job_kind=JobKind.INDEX_HISTORY) is None
    assert store.retry(job.id, "user:anna", "store back") == "queued"
    assert rows.jobs[job.id].state == JobState.QUEUED
    assert rows.mails[mail.id].status == MailStatus.HISTORY
    _, other = waiting(rows, MailStatus.HISTORY, state=JobState.DEAD)
    with pytest.raises(TransitionRefused, match="final"):
        store.retry(other.id, "user:anna")


@pytest.mark.parametrize(("mail_status", "job_state", "record"), [
    (MailStatus.SENT, JobState.DEAD, "email"),  # final mail
    (MailStatus.RECEIVED, JobState.QUEUED, "job"),  # waiting already
    (MailStatus.RECEIVED, JobState.PROCESSING, "job"),  # running
    (MailStatus.DRAFT_READY, JobState.DONE, "job"),  # nothing failed
])
def test_an_admin_retry_is_refused_by_the_business_state(rows, store, mail_status, job_state,
                                                         record):
    mail, job = waiting(rows, mail_status, state=job_state)
    with pytest.raises(TransitionRefused) as refused:
        store.retry(job.id, "user:anna")
    assert refused.value.record == record  # names the record that refuses
    assert rows.jobs[job.id].state == job_state and not rows.events


def test_an_admin_retry_of_an_unknown_send_is_refused_for_the_send_decision(rows, store):
    mail, job = waiting(rows, MailStatus.APPROVED, state=JobState.DEAD,
                        kind=JobKind.SEND_DRAFT, draft_id=7)
    attempt = rows.add_send(7, SendStatus.UNKNOWN, email_id=mail.id)
    with pytest.raises(TransitionRefused, match="sends resolve") as refused:
        store.retry(job.id, "user:anna")
    assert refused.value.record == "send_attempt" and str(attempt.id) in str(refused.value)


def test_an_admin_retry_of_a_refused_send_returns_the_draft_to_review(rows, store):
    mail, job = waiting(rows, MailStatus.APPROVED, state=JobState.DEAD,
                        kind=JobKind.SEND_DRAFT, draft_id=7)
    rows.add_send(7, SendStatus.FAILED, email_id=mail.id, smtp_response="550 no such user")
    rows.row("drafts", 7)["status"] = "failed"  # the sender marked the refused draft
    assert store.retry(job.id, "user:anna", "fix address") == "back_to_review"
    assert rows.drafts[7] == DraftStatus.PENDING_REVIEW
    assert rows.mails[mail.id].status == MailStatus.DRAFT_READY
    assert "550 no such user" in rows.mails[mail.id].status_reason
    assert rows.jobs[job.id].state == JobState.DONE


def test_a_refused_retry_rolls_back_everything(rows, store):
    mail, job = waiting(rows, MailStatus.FAILED, state=JobState.DEAD)
    rows.row("emails", mail.id)["status"] = "resolved"
    with pytest.raises(TransitionRefused):
        store.retry(job.id, "user:anna")
    assert rows.jobs[job.id].state == JobState.DEAD and not rows.events


# --- admin resolve ---

def test_resolve_closes_the_open_entries_and_resolves_the_mail(rows, store):
    mail, job = waiting(rows, MailStatus.MANUAL, state=JobState.FAILED)
    result = store.resolve_mail(mail.id, "user:rita", "answered by phone")
    assert result["resolved_jobs"] == [job.id]
    assert rows.jobs[job.id].state == JobState.DEAD
    assert "[resolved: answered by phone]" in rows.jobs[job.id].last_error
    assert rows.mails[mail.id].status == MailStatus.RESOLVED
    assert rows.events_of("job", job.id) == ["admin_resolved"]
    assert rows.open_of_mail(mail.id) == []


@pytest.mark.parametrize(("mail_status", "job_state", "why"), [
    (MailStatus.RESOLVED, JobState.DEAD, "final"),
    (MailStatus.MANUAL, JobState.PROCESSING, "running right now"),
    (MailStatus.APPROVED, JobState.FAILED, "retry cycle"),  # the console's old mistake
    (MailStatus.CLASSIFIED, None, "nothing failed"),
])
def test_resolve_is_refused_by_the_business_state(rows, store, mail_status, job_state, why):
    if job_state is None:
        mail = rows.add_mail(mail_status)
    else:
        mail, _ = waiting(rows, mail_status, state=job_state)
    with pytest.raises(TransitionRefused, match=why):
        store.resolve_mail(mail.id, "user:rita", "note")
    assert rows.mails[mail.id].status == mail_status and not rows.events


def test_resolve_needs_a_note_and_an_unknown_send_is_decided_instead(rows, store):
    mail, job = waiting(rows, MailStatus.FAILED, state=JobState.DEAD,
                        kind=JobKind.SEND_DRAFT, draft_id=3)
    with pytest.raises(PermanentError, match="note is required"):
        store.resolve_mail(mail.id, "user:rita", "  ")
    rows.add_send(3, SendStatus.UNKNOWN, email_id=mail.id)
    with pytest.raises(TransitionRefused, match="unknown outcome"):
        store.resolve_mail(mail.id, "user:rita", "note")


def test_resolve_of_an_entry_without_a_mail_closes_only_the_entry(rows, store):
    job = rows.add_job(state=JobState.DEAD, kind=JobKind.INDEX_SYNC)
    assert store.resolve(job.id, "user:rita", "not needed") is None
    assert rows.jobs[job.id].state == JobState.DEAD
    assert rows.events_of("job", job.id) == ["admin_resolved"]


# --- the console asks the same rules ---

def test_the_console_questions_agree_with_what_the_store_does(rows, store):
    """Every (mail status, entry state) pair: retry_refusal / resolve_refusal say allowed
    exactly when the store's retry / resolve goes through."""
    for mail_status in MailStatus:
        for job_state in JobState:
            world = MemoryDatabase()
            s = JobStore.over(world, POLICY)
            mail, job = waiting(world, mail_status, state=job_state)
            offered = rules.retry_refusal(mail_status, job_state, None) is None
            try:
                s.retry(job.id, "user:anna")
                done = True
            except TransitionRefused:
                done = False
            assert offered == done, (mail_status, job_state)
            world = MemoryDatabase()
            s = JobStore.over(world, POLICY)
            mail, job = waiting(world, mail_status, state=job_state)
            open_jobs = world.open_of_mail(mail.id)
            offered = rules.resolve_refusal(mail_status, False, open_jobs) is None
            try:
                s.resolve_mail(mail.id, "user:anna", "note")
                done = True
            except TransitionRefused:
                done = False
            assert offered == done, ("resolve", mail_status, job_state)
