"""Helpers for tests that drive the real interfaces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
