"""The result record of long commands (core/run_result.py): the end states, the exit-code
table, the ``--json`` keys and the human printer (issue 43, seed 004)."""

from __future__ import annotations

import io
import json
import random

import pytest

from email_rag.cli.output import ExitCode, Outcome
from email_rag.cli.poll import render
from email_rag.core.retry import ExponentialBackoff
from email_rag.core.run_result import EXIT_CODES, EndState, RunResult
from email_rag.core.settings import Settings
from email_rag.ingest.poller import FolderResult, MailboxResult, PollResult


@pytest.mark.parametrize(("counts", "state", "code"), [
    ({"processed": 184}, EndState.COMPLETED, 0),
    ({"processed": 184, "verified": True}, EndState.COMPLETED, 0),
    ({}, EndState.NOTHING_TO_DO, 0),
    ({"skipped": 3}, EndState.NOTHING_TO_DO, 0),
    ({"processed": 183, "failed": 1}, EndState.COMPLETED_WITH_FAILURES, 2),
    ({"processed": 117, "remaining": 67}, EndState.PARTIAL, 2),
    ({"processed": 117, "remaining": 67, "interrupted": True}, EndState.INTERRUPTED, 2),
    ({"processed": 184, "verified": False}, EndState.VERIFICATION_FAILED, 3),
    ({"remaining": 184}, EndState.FAILED, 1),
])
def test_the_counts_decide_the_end_state_and_the_exit_code(counts, state, code):
    r = RunResult.decide(**counts)
    assert r.status is state and r.exit_code == code
    assert Outcome.of(r).exit_code == code


def test_every_end_state_has_an_exit_code_from_the_documented_table():
    assert EXIT_CODES == {EndState.COMPLETED: 0, EndState.NOTHING_TO_DO: 0,
                          EndState.COMPLETED_WITH_FAILURES: 2, EndState.PARTIAL: 2,
                          EndState.INTERRUPTED: 2, EndState.VERIFICATION_FAILED: 3,
                          EndState.FAILED: 1}
    assert {int(c) for c in ExitCode} == set(EXIT_CODES.values())


def test_json_keeps_todays_keys_and_adds_the_records():
    r = RunResult.decide(processed=117, failed=1, remaining=66, interrupted=True,
                         next="email-rag failed retry --all", resumed_from=10)
    out = io.StringIO()
    code = Outcome.of(r, "msg", {"x": 1}).render(True, out)
    doc = json.loads(out.getvalue())
    assert code == 2
    assert {k: doc[k] for k in ("ok", "exit_code", "message", "data")} == {
        "ok": False, "exit_code": 2, "message": "msg", "data": {"x": 1}}
    assert {k: doc[k] for k in ("status", "attempted", "processed", "failed", "remaining",
                                "resumeAvailable", "verified", "next", "resumedFrom")} == {
        "status": "interrupted", "attempted": 118, "processed": 117, "failed": 1,
        "remaining": 66, "resumeAvailable": True, "verified": None,
        "next": "email-rag failed retry --all", "resumedFrom": 10}


def test_the_human_record_says_state_progress_safety_and_next_step():
    r = RunResult.decide(processed=117, remaining=67, interrupted=True, item="mail",
                         what="The service is temporarily unavailable.",
                         safe="Checkpoint saved.", next="email-rag reindex")
    out = io.StringIO()
    Outcome.of(r, "detail").render(False, out)
    assert out.getvalue().splitlines() == [
        "INTERRUPTED", "117 / 184 mail(s) completed (67 remaining).",
        "The service is temporarily unavailable.", "Checkpoint saved.",
        "The operation can be resumed.", "Next: email-rag reindex", "detail"]


def test_a_record_refuses_a_free_text_status_and_negative_counts():
    with pytest.raises(ValueError):
        RunResult(status="ok")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        RunResult(EndState.COMPLETED, processed=-1)


def _poll(new: int, queued: int, recounted: tuple[int, int], **kw) -> PollResult:
    mb = MailboxResult("support", folders=[FolderResult("INBOX", new=new, queued=queued,
                                                        fetched=new, **kw)])
    mb.recounted = {"mails": recounted[0], "jobs": recounted[1], "mails_now": recounted[0]}
    return PollResult([mb])


def test_poll_whose_recount_disagrees_exits_3_verification_failed():
    outcome = render(_poll(3, 3, (2, 3)))
    assert outcome.exit_code == ExitCode.VERIFY_FAILED == 3
    assert outcome.result is not None and outcome.result.status is EndState.VERIFICATION_FAILED
    assert outcome.result.verified is False and "not the 3 and 3" in outcome.message


def test_poll_whose_recount_agrees_exits_0_verified():
    outcome = render(_poll(3, 3, (3, 3)))
    assert outcome.exit_code == 0 and outcome.result.status is EndState.COMPLETED
    assert outcome.result.verified is True


def test_poll_with_unparseable_mail_is_completed_with_failures_exit_2():
    outcome = render(_poll(3, 2, (3, 2), failed=1))
    assert outcome.exit_code == 2 and outcome.result.status is EndState.COMPLETED_WITH_FAILURES


def test_poll_of_a_mailbox_that_could_not_be_polled_is_failed_exit_1():
    result = PollResult([MailboxResult("support", status="failed", error="refused")])
    outcome = render(result)
    assert outcome.exit_code == 1 and outcome.result.status is EndState.FAILED
    assert outcome.result.next == "email-rag poll --once"


def test_full_jitter_spreads_waits_over_the_whole_window():
    b = ExponentialBackoff(base=2.0, cap=30.0, full=True, rng=random.Random(7))
    waits = [b.delay(1) for _ in range(200)]
    assert 0.0 <= min(waits) < 0.2 and 1.8 < max(waits) <= 2.0
    assert len({round(w, 1) for w in waits}) > 10  # not one second for all


def test_the_design_cards_defaults_are_pinned():
    """The design card's numbers: a change of a default must be a decision, seen here."""
    s = Settings()
    assert s.cleanup_interval_seconds == 3600
    assert s.stuck_after_seconds == 600
    assert list(s.retry_delays) == [30.0, 120.0, 600.0] and s.max_attempts == 4
    assert s.db_reconnect_spread == 2.0 and s.store_max_retry_after == 60.0


def test_the_scheduler_and_the_retry_cycle_run_on_the_design_cards_defaults():
    """Not only the settings' defaults: the stuck-job reset is scheduled every 3600 s and the
    job retry cycle built from the settings waits 30 / 120 / 600 s (without jitter), then
    stops after the fourth attempt."""
    from types import SimpleNamespace

    from email_rag.core.errors import TransientError
    from email_rag.core.retry import retry_policy
    from email_rag.runtime.scheduler import periodic_jobs

    s = Settings()
    intervals = {name: seconds for name, seconds, _ in periodic_jobs(SimpleNamespace(settings=s))}
    assert intervals["cleanup_stuck"] == 3600
    policy = retry_policy(s.model_copy(update={"retry_jitter": 0.0}))
    error = TransientError("451 try later")
    assert [policy.decide(n, error).delay for n in (1, 2, 3)] == [30.0, 120.0, 600.0]
    assert not policy.decide(4, error).retry


def test_docs_and_readme_show_the_end_state_table_of_the_code():
    """docs/states.md and the README list every end state with the exit code of EXIT_CODES,
    and docs/states.md shows a real output of each."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    states_doc = (root / "docs" / "states.md").read_text().split("## End states of long")[1]
    readme = (root / "README.md").read_text()
    for state, code in EXIT_CODES.items():
        rows = [ln for ln in states_doc.splitlines() if ln.startswith(f"| `{state.value}` |")]
        assert len(rows) == 1 and f"| {code} |" in rows[0], state
        assert f"| `{state.value}` | {code} |" in readme, state
        assert f"\n{state.value.replace('_', ' ').upper()}\n" in states_doc, state
