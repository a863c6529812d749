import random

import pytest

from email_rag.core.errors import (
    LLMRateLimitedError,
    LLMRequestRejectedError,
    OutcomeUnknownError,
    SmtpTransientError,
    TransientError,
)
from email_rag.core.retry import ExponentialBackoff, RetryPolicy


def test_job_schedule_is_30_120_600_then_stop():
    policy = RetryPolicy(delays=(30, 120, 600), max_attempts=4)
    err = TransientError("boom")
    assert [policy.decide(n, err).delay for n in (1, 2, 3)] == [30, 120, 600]
    final = policy.decide(4, err)
    assert not final.retry and "attempt 4 of 4" in final.reason


def test_the_defaults_use_every_delay_first_attempt_and_three_retries_then_dead():
    from email_rag.core.settings import Settings

    s = Settings()
    policy = RetryPolicy(delays=tuple(s.retry_delays), max_attempts=s.max_attempts)
    err = SmtpTransientError("451 try later")
    assert [policy.decide(n, err).delay for n in (1, 2, 3)] == [30, 120, 600]
    assert not policy.decide(4, err).retry
    assert RetryPolicy().max_attempts == s.max_attempts


def test_permanent_error_stops_at_once():
    decision = RetryPolicy().decide(1, LLMRequestRejectedError("401 wrong key"))
    assert not decision.retry and decision.reason.startswith("permanent")


def test_outcome_unknown_is_never_retried_blindly():
    decision = RetryPolicy().decide(1, OutcomeUnknownError("timeout after DATA"))
    assert not decision.retry and "reconcile" in decision.reason


def test_retry_after_longer_than_schedule_is_honoured_and_capped():
    policy = RetryPolicy(delays=(30, 120, 600), max_delay=900)
    assert policy.decide(1, LLMRateLimitedError(retry_after=45)).delay == 45
    assert policy.decide(1, LLMRateLimitedError(retry_after=5)).delay == 30
    assert policy.decide(1, LLMRateLimitedError(retry_after=5000)).delay == 900


def test_jitter_stays_within_bounds_and_varies():
    policy = RetryPolicy(delays=(100,), max_attempts=5, jitter=0.1, rng=random.Random(7))
    delays = {policy.decide(1, TransientError()).delay for _ in range(50)}
    assert all(90 <= d <= 110 for d in delays)
    assert len(delays) > 10


def test_an_unexpected_error_is_a_bug_and_stops_at_once_not_retried_like_a_transient_one():
    decision = RetryPolicy().decide(1, KeyError("x"))
    assert not decision.retry and decision.reason.startswith("unexpected")


@pytest.mark.parametrize("error", [ConnectionResetError("reset"), TimeoutError("slow")])
def test_builtin_network_errors_are_transient(error):
    assert RetryPolicy().decide(1, error).retry


def test_exponential_backoff_grows_and_is_capped():
    b = ExponentialBackoff(base=30, cap=3600, jitter=0)
    assert [b.delay(n) for n in (1, 2, 3, 4)] == [30, 60, 120, 240]
    assert b.delay(50) == 3600


@pytest.mark.parametrize("n", [1, 3, 10, 40])
def test_exponential_backoff_with_jitter_never_exceeds_cap(n):
    b = ExponentialBackoff(base=30, cap=600, jitter=0.5, rng=random.Random(n))
    assert 0 <= b.delay(n) <= 600


def test_a_transaction_rolled_back_for_a_deadlock_is_repeated_then_given_up():
    """repeat_when_busy: a busy error repeats the transaction (each repeat reported, with
    growing pauses), a success ends it, the last busy error goes to the caller; any other
    error is not repeated."""
    import pytest

    from email_rag.core.errors import DatabaseBusyError, DatabaseUnavailableError
    from email_rag.db.connection import BUSY_TRIES, repeat_when_busy

    calls, repeats, pauses = [], [], []

    def busy_twice():
        calls.append(1)
        if len(calls) < 3:
            raise DatabaseBusyError("deadlock")
        return "stored"

    assert repeat_when_busy(busy_twice, "batch", lambda t, e: repeats.append(t),
                            sleep=pauses.append) == "stored"
    assert repeats == [2, 3] and len(pauses) == 2 and 0 < pauses[0] and BUSY_TRIES == 3

    def always_busy():
        raise DatabaseBusyError("lock wait timeout")

    with pytest.raises(DatabaseBusyError):
        repeat_when_busy(always_busy, "batch", sleep=pauses.append)

    def down():
        calls.append(1)
        raise DatabaseUnavailableError("gone")

    calls.clear()
    with pytest.raises(DatabaseUnavailableError):
        repeat_when_busy(down, "batch", sleep=pauses.append)
    assert calls == [1]


def test_the_backoff_doubles_up_to_its_cap():
    from email_rag.core.retry import ExponentialBackoff

    b = ExponentialBackoff(base=0.5, cap=10.0, jitter=0.0)
    assert [b.delay(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


_COUNT = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def stated_attempts(doc: str) -> list[int]:
    """The numbers of tries/attempts of the send cycle a docstring states ("4 attempts",
    "four attempts", "3 tries"); "one call is one try" is the adapter's own call."""
    import re

    found = re.findall(r"\b(\d+|one|two|three|four|five|six) (?:attempts|tries)\b", doc, re.I)
    return [int(n) if n.isdigit() else _COUNT[n.lower()] for n in found]


def test_the_smtp_docstrings_state_the_send_cycles_real_number_of_attempts():
    """GIVEN the SMTP adapter's and the sender's docstrings THEN every number of tries they
    state for a transient SMTP error is the default EMAIL_RAG_MAX_ATTEMPTS (issue 26: the
    SMTP docstring said "3 tries" while the cycle makes 4 attempts)."""
    from email_rag.adapters import smtp
    from email_rag.core.settings import Settings
    from email_rag.sending import sender

    s = Settings()
    for module in (smtp, sender):
        stated = stated_attempts(module.__doc__ or "")
        assert stated, f"{module.__name__} states no number of attempts for the send cycle"
        assert set(stated) == {s.max_attempts}, (module.__name__, stated)
