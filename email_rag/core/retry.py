"""Retry as a decision, not a loop.

``RetryPolicy.decide(attempt, error)`` returns a ``RetryDecision``: retry after
N seconds, or stop (and why). ``attempt`` is the number of the attempt that has
just failed, starting at 1.

Classification (seed 004: "Retry ist eine fachliche Entscheidung, nicht einfach eine
Reaktion auf jede Exception"):

| error | decision |
|---|---|
| ``TransientError`` (429, 5xx, timeouts, outages, a worker presumed dead, the queue's job timeout), other errors of ours (``EmailRagError``), builtin ``ConnectionError`` / ``TimeoutError`` | retry after the scheduled delay (Retry-After honoured), up to ``max_attempts`` |
| ``PermanentError`` (4xx, bad input, configuration) | stop at once |
| ``OutcomeUnknownError`` (the other side may have acted) | stop: reconcile first, never a blind retry |
| anything else (``KeyError``, ``TypeError``, ...: a programming error or a failure nobody classified) | stop at once, flagged ``unexpected``: the worker logs an ALARM; an admin retries once it is fixed |

Defaults: four attempts, i.e. the first one and three retries after 30 s, 120 s and
600 s - every delay of the schedule is used.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .errors import EmailRagError, OutcomeUnknownError, PermanentError

UNEXPECTED = "unexpected error, not retried (a programming error or an unclassified failure)"


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    delay: float = 0.0  # seconds until the next attempt (retry only)
    reason: str = ""

    @classmethod
    def stop(cls, reason: str) -> RetryDecision:
        return cls(retry=False, reason=reason)


@dataclass(frozen=True)
class RetryPolicy:
    """Schedule of delays between attempts; after ``max_attempts`` failures: stop.

    ``delays[i]`` is the wait after failed attempt ``i + 1``; the last delay
    repeats if ``max_attempts`` exceeds the list. Jitter spreads the delay by
    +/- ``jitter`` (relative). A Retry-After from the error is honoured when it
    is longer than the scheduled delay, capped at ``max_delay``.
    """

    delays: Sequence[float] = (30.0, 120.0, 600.0)
    max_attempts: int = 4
    jitter: float = 0.0
    max_delay: float = 3600.0
    rng: random.Random | None = None

    def delay_for(self, attempt: int) -> float:
        base = self.delays[min(attempt - 1, len(self.delays) - 1)]
        if self.jitter:
            rng = self.rng or random
            base *= 1 + rng.uniform(-self.jitter, self.jitter)
        return max(0.0, min(base, self.max_delay))

    def decide(self, attempt: int, error: BaseException) -> RetryDecision:
        if isinstance(error, PermanentError):
            return RetryDecision.stop(f"permanent error: {error}")
        if isinstance(error, OutcomeUnknownError):
            return RetryDecision.stop(f"outcome unknown, reconcile first: {error}")
        if not isinstance(error, EmailRagError | ConnectionError | TimeoutError):
            return RetryDecision.stop(f"{UNEXPECTED}: {type(error).__name__}: {error}")
        if attempt >= self.max_attempts:
            return RetryDecision.stop(f"attempt {attempt} of {self.max_attempts} failed: {error}")
        delay = self.delay_for(attempt)
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            delay = min(max(delay, float(retry_after)), self.max_delay)
        return RetryDecision(retry=True, delay=delay, reason=f"transient error: {error}")


def parse_retry_after(headers: Any, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date) of
    an HTTP answer's headers: the one reading for the chat, embeddings and OAuth2 token
    endpoints; ``RetryPolicy.decide`` honours it as the error's ``retry_after``."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class ExponentialBackoff:
    """Unbounded exponential backoff with jitter and a cap: the one doubling wait (IMAP
    polls, MariaDB reconnects, a worker waiting for Redis, a call waiting for an LLM slot).
    ``delay(n)``: the wait after ``n`` consecutive failures (``base`` after the first).

    ``jitter``: relative spread (+/-). ``full``: full jitter instead, a wait drawn
    uniformly from 0 to the doubled delay: many clients that failed in the same second
    (workers after a MariaDB or Redis restart) come back spread over the whole window, not
    together."""

    base: float = 30.0
    cap: float = 3600.0
    jitter: float = 0.2
    rng: random.Random | None = None
    full: bool = False

    def delay(self, consecutive_failures: int) -> float:
        raw = min(self.cap, self.base * (2 ** max(0, consecutive_failures - 1)))
        rng = self.rng or random
        if self.full:
            return rng.uniform(0.0, raw)
        if self.jitter:
            raw *= 1 + rng.uniform(-self.jitter, self.jitter)
        return max(0.0, min(raw, self.cap))


def retry_policy(settings: Any) -> RetryPolicy:
    """The job retry policy the settings describe (delays, attempts, jitter)."""
    return RetryPolicy(delays=tuple(settings.retry_delays), max_attempts=settings.max_attempts,
                       jitter=settings.retry_jitter)
