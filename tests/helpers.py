"""Helpers for tests that drive the real interfaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, env_extra: dict | None = None, timeout: float = 120):
    """Run the real console entry point in a subprocess (``python -m email_rag``)."""
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "email_rag", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def run_job(runner, job_id: int, max_handoffs: int = 6) -> str:
    """Run a job in-process like the worker fleet would, following hand-offs between queues."""
    result = runner.run(job_id)
    for _ in range(max_handoffs):
        if result != "handed_off":
            break
        result = runner.run(job_id)
    return result


def spawn(*args: str, env_extra: dict | None = None, log: Path | None = None) -> subprocess.Popen:
    """Start ``python -m email_rag ARGS`` (a worker, the scheduler, the web) in the background."""
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-m", "email_rag", *args], env=env, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(predicate, timeout: float = 90.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value; fail the test after ``timeout`` s.

    The deadline is for a hang, not a measure of speed: a subprocess or thread on a busy
    2-core CI machine can take many times what it takes here."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def stop(proc: subprocess.Popen, timeout: float = 60.0) -> int:
    """SIGTERM and wait (SIGKILL if it does not stop); returns the exit code."""
    import signal

    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def kill_when(proc: subprocess.Popen, ready: Callable[[], Any]) -> Any:
    """SIGKILL ``proc`` once ``ready()`` returns (its value is returned); reaped whatever
    happens, and it must have died of the kill (not ended by itself)."""
    try:
        seen = ready()
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, proc.communicate()
    return seen
