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
- a worker can be alive but hung (blocked on a socket that stopped answering, a call
  that never returns): its heartbeat thread beats on. So each pipeline step runs under a
  deadline (``step_deadline``: the LLM steps' budget above, ``step_deadline_seconds`` for
  the others); past it the heartbeat thread stops beating and writes the step overdue
  (an ALARM in the log), and the stuck-job reset hands the entry to another worker. The
  hung worker's late result is refused by the claim fence of its checkpoint.
- ``problems(s)`` lists what does not fit; the worker and the scheduler refuse to
  start with any (``check(s)`` raises ``ConfigError``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .errors import ConfigError
from .states import Step

log = logging.getLogger(__name__)

LLM_STEPS = 2  # classify, draft
# calls one step may make under llm_policy: a timeout is retried once, invalid output
# (including a cut-off answer) once, a context overflow once with less context
CALLS_PER_STEP = 4
OTHER_STEPS_MARGIN = 30  # seconds for parse, index, retrieve and the checkpoints
MIN_STUCK_AFTER = 4  # the heartbeat beats every stuck_after/4 seconds


def llm_step_budget(s: Any) -> float:
    """The longest a healthy LLM step (classify, draft) may take."""
    per_call = s.llm_timeout + s.slot_wait
    rate_waits = s.llm_rate_limit_retries * s.llm_max_retry_after
    return CALLS_PER_STEP * per_call + rate_waits


def required_job_timeout(s: Any) -> int:
    return int(LLM_STEPS * llm_step_budget(s) + OTHER_STEPS_MARGIN + 0.999)


LLM_STEP_NAMES = frozenset({str(Step.CLASSIFY), str(Step.DRAFT)})


def step_deadline_for(s: Any, step: str) -> float:
    """Seconds one run of ``step`` may take before its worker counts as hung."""
    if str(step) in LLM_STEP_NAMES:
        return llm_step_budget(s) + s.step_deadline_seconds
    return float(s.step_deadline_seconds)


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


def heartbeat_key(job_id: int, worker: str) -> str:
    """One key per claim (entry and worker): a hung worker's beat never speaks for (nor
    deletes the key of) the worker that took its entry over."""
    return f"erag:job-alive:{job_id}:{worker}"


ALIVE = "alive"
OVERDUE = "overdue"  # the value's prefix once the running step passed its deadline
_running: ContextVar[JobHeartbeat | None] = ContextVar("job_heartbeat", default=None)


class JobHeartbeat:
    """While a job runs, a Redis key holds the time of its last beat (the process's beater
    thread beats every job of the process: ``_Beater``).

    Inside ``step_deadline`` the beat checks the step's deadline: past it, the key says
    ``overdue ...`` instead of a time (not alive for the stuck reset), once with an ALARM
    in the log."""

    def __init__(self, redis: Any, job_id: int, stuck_after: float, worker: str) -> None:
        self.redis, self.job_id, self.worker = redis, job_id, worker
        self.key = heartbeat_key(job_id, worker)
        self.every = max(0.5, min(stuck_after / 4, 15.0))
        self.ttl_ms = int(max(stuck_after, 60) * 2 * 1000)  # only to clean up after a crash
        self.next_at = 0.0  # monotonic time of the next beat (the beater's schedule)
        self._lock = threading.Lock()  # a beat and the end of the job never interleave
        self._active = False
        self._step: tuple[str, float, float] | None = None  # name, limit (s), deadline
        self._overdue = False
        self._token: Any = None

    def step(self, name: str, limit: float) -> None:
        self._step, self._overdue = (name, limit, time.time() + limit), False

    def step_ended(self) -> None:
        self._step, self._overdue = None, False

    def value(self) -> str:
        step = self._step
        now = time.time()
        if step is not None and now > step[2]:
            if not self._overdue:
                self._overdue = True
                log.error("ALARM job %s: step %s still running after its deadline of %.0f s "
                          "on worker %s (alive but hung); the stuck reset hands the entry to "
                          "another worker", self.job_id, step[0], step[1], self.worker)
            return f"{OVERDUE} step {step[0]} over its deadline of {step[1]:.0f} s"
        return f"{now:.3f}"

    def beat(self) -> None:
        """Write the key now, unless the job has ended (then its key stays deleted)."""
        with self._lock:
            if self._active:
                self._beat()
            self.next_at = time.monotonic() + self.every

    def _beat(self) -> None:
        try:
            self.redis.set(self.key, self.value(), px=self.ttl_ms)
        except Exception as e:  # noqa: BLE001 - a missed beat only risks a reset (safe: claim CAS)
            log.warning("job heartbeat %s not written: %s", self.key, e)

    def __enter__(self) -> JobHeartbeat:
        with self._lock:
            self._active = True
            self._beat()
            self.next_at = time.monotonic() + self.every
        _BEATER.add(self)
        self._token = _running.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _running.reset(self._token)
        _BEATER.remove(self)
        with self._lock:  # a beat in progress finishes first; none after this
            self._active = False
        try:
            self.redis.delete(self.key)
        except Exception:  # noqa: BLE001 - the TTL ends it
            pass


class _Beater:
    """One thread per process beats the heartbeats of the jobs running in it, each on its
    own schedule (a job does not start and stop a thread of its own)."""

    IDLE_WAIT = 5.0  # seconds between looks while no job runs

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[int, JobHeartbeat] = {}
        self._changed = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, beat: JobHeartbeat) -> None:
        with self._lock:
            self._jobs[id(beat)] = beat
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="job-heartbeat",
                                                daemon=True)
                self._thread.start()
        self._changed.set()

    def remove(self, beat: JobHeartbeat) -> None:
        with self._lock:
            self._jobs.pop(id(beat), None)

    def _run(self) -> None:
        while True:
            with self._lock:
                jobs = list(self._jobs.values())
            now = time.monotonic()
            for beat in jobs:
                if beat.next_at <= now:
                    beat.beat()
            wait = min((b.next_at for b in jobs), default=now + self.IDLE_WAIT) - time.monotonic()
            if wait > 0 and self._changed.wait(wait):
                self._changed.clear()

    def _after_fork(self) -> None:  # a forked work horse starts its own thread
        self._lock = threading.Lock()
        self._jobs = {}
        self._changed = threading.Event()
        self._thread = None


_BEATER = _Beater()
os.register_at_fork(after_in_child=_BEATER._after_fork)


@contextmanager
def step_deadline(step: str, limit: float) -> Iterator[None]:
    """Run one step under the deadline of the job heartbeat of this thread (none outside
    a job runner: then nothing is checked)."""
    beat = _running.get()
    if beat is None:
        yield
        return
    beat.step(str(step), limit)
    try:
        yield
    finally:
        beat.step_ended()


def liveness(redis: Any, claims: Sequence[tuple[int, str]], within: float) -> dict[int, str]:
    """For each claim (entry id, worker): ``ALIVE`` if it beat in the last ``within``
    seconds inside its step's deadline, else why not (one round trip)."""
    if not claims:
        return {}
    try:
        values = redis.mget([heartbeat_key(i, w) for i, w in claims])
    except Exception as e:  # noqa: BLE001 - without Redis, judge by the claim's age as before
        log.warning("job heartbeats unreadable (%s): stuck jobs judged by their start", e)
        return {i: f"heartbeat unreadable ({type(e).__name__})" for i, _ in claims}
    now = time.time()
    verdicts = {}
    for (i, _), v in zip(claims, values, strict=True):
        text = v.decode() if isinstance(v, bytes) else v
        if text is None:
            verdicts[i] = f"no heartbeat for {within:g} s (worker gone)"
        elif text.startswith(OVERDUE):
            verdicts[i] = f"worker alive but hung: {text[len(OVERDUE):].strip()}"
        else:
            try:
                verdicts[i] = ALIVE if now - float(text) < within else \
                    f"no heartbeat for {within:g} s (worker gone)"
            except ValueError:
                verdicts[i] = "heartbeat unreadable"
    return verdicts


def alive_jobs(redis: Any, claims: Sequence[tuple[int, str]], within: float) -> set[int]:
    """The ids among ``claims`` (entry id, worker) that beat in the last ``within`` seconds
    inside their step's deadline."""
    return {i for i, v in liveness(redis, claims, within).items() if v == ALIVE}


def micros(seconds: float) -> int:
    """Seconds as whole microseconds (never negative), the unit of the SQL interval slots."""
    return max(0, int(seconds * 1_000_000))
