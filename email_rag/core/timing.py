"""Time limits that must fit together: LLM timeout, tries per step, job timeout, stuck threshold.

On CPU a call can take minutes, and each LLM step may call several times. If the
RQ job timeout is shorter than a healthy job can take, RQ kills the job; if the
stuck-job reset judged by the start of the claim, it reset jobs still working
(measured: a 300 s LLM timeout with job timeout 900 s and stuck threshold 600 s did
both). So:

- ``required_job_timeout(s)``: the longest a healthy process_email job can take:
  per LLM step (classify, draft) at most ``CALLS_PER_STEP`` calls, each waiting for a
  call slot (``slot_wait``) and then running up to ``llm_timeout``, plus the
  rate-limit waits the policy allows, plus a margin for the other steps. With
  ``job_timeout_seconds = 0`` (the default) this IS the job timeout.
- a running job keeps a heartbeat (``JobHeartbeat``: a Redis key holding the time of
  the last beat, refreshed every ``min(stuck_after_seconds / 4, 15)`` s); the stuck-job
  reset skips jobs that beat within its own ``stuck_after_seconds``, so a healthy job
  is never reset however long it runs. Only a job whose process is gone (no beat for
  ``stuck_after_seconds``) is reset.
- ``problems(s)`` lists what does not fit; the worker and the scheduler refuse to
  start with any (``check(s)`` raises ``ConfigError``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .errors import ConfigError

log = logging.getLogger(__name__)

LLM_STEPS = 2  # classify, draft
# calls one step may make under llm_policy: a timeout is retried once, invalid output
# (including a cut-off answer) once, a context overflow once with less context
CALLS_PER_STEP = 4
OTHER_STEPS_MARGIN = 30  # seconds for parse, index, retrieve and the checkpoints
MIN_STUCK_AFTER = 4  # the heartbeat beats every stuck_after/4 seconds


def required_job_timeout(s: Any) -> int:
    per_call = s.llm_timeout + s.slot_wait
    rate_waits = s.llm_rate_limit_retries * s.llm_max_retry_after
    per_step = CALLS_PER_STEP * per_call + rate_waits
    return int(LLM_STEPS * per_step + OTHER_STEPS_MARGIN + 0.999)


def problems(s: Any) -> list[str]:
    found = []
    need = required_job_timeout(s)
    if s.job_timeout_seconds and s.job_timeout_seconds < need:
        found.append(
            f"job_timeout_seconds {s.job_timeout_seconds} is shorter than a healthy job may "
            f"take ({need} s = {LLM_STEPS} LLM steps x ({CALLS_PER_STEP} calls x (llm_timeout "
            f"{s.llm_timeout:g} + slot wait {s.slot_wait:g}) + rate-limit waits "
            f"{s.llm_rate_limit_retries} x {s.llm_max_retry_after:g}) + {OTHER_STEPS_MARGIN}): "
            "RQ would kill healthy jobs. Set it to 0 (derived) or raise it, or lower "
            "EMAIL_RAG_LLM_TIMEOUT")
    if s.stuck_after_seconds < MIN_STUCK_AFTER:
        found.append(f"stuck_after_seconds {s.stuck_after_seconds} is below {MIN_STUCK_AFTER}: "
                     "the job heartbeat could not keep a healthy job from being reset")
    return found


def check(s: Any) -> None:
    found = problems(s)
    if found:
        raise ConfigError("time limits do not fit together: " + "; ".join(found))


def heartbeat_key(job_id: int) -> str:
    return f"erag:job-alive:{job_id}"


class JobHeartbeat:
    """While a job runs, a Redis key holds the time of its last beat (a thread beats)."""

    def __init__(self, redis: Any, job_id: int, stuck_after: float) -> None:
        self.redis, self.key = redis, heartbeat_key(job_id)
        self.every = max(0.5, min(stuck_after / 4, 15.0))
        self.ttl_ms = int(max(stuck_after, 60) * 2 * 1000)  # only to clean up after a crash
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        try:
            self.redis.set(self.key, f"{time.time():.3f}", px=self.ttl_ms)
        except Exception as e:  # noqa: BLE001 - a missed beat only risks a reset (safe: claim CAS)
            log.warning("job heartbeat %s not written: %s", self.key, e)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._beat()

    def __enter__(self) -> JobHeartbeat:
        self._beat()
        self._thread = threading.Thread(target=self._run, name="job-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        try:
            self.redis.delete(self.key)
        except Exception:  # noqa: BLE001 - the TTL ends it
            pass


def alive_jobs(redis: Any, job_ids: list[int], within: float) -> set[int]:
    """The ids among ``job_ids`` that beat in the last ``within`` seconds (one round trip)."""
    if not job_ids:
        return set()
    try:
        values = redis.mget([heartbeat_key(i) for i in job_ids])
    except Exception as e:  # noqa: BLE001 - without Redis, judge by the claim's age as before
        log.warning("job heartbeats unreadable (%s): stuck jobs judged by their start", e)
        return set()
    now = time.time()
    alive = set()
    for i, v in zip(job_ids, values, strict=True):
        try:
            if v is not None and now - float(v) < within:
                alive.add(i)
        except ValueError:
            continue
    return alive


def micros(seconds: float) -> int:
    """Seconds as whole microseconds (never negative), the unit of the SQL interval slots."""
    return max(0, int(seconds * 1_000_000))
