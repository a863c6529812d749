"""The real processes of a chaos run: the workers and the scheduler. Every start and
every hard kill is counted.

A process that is SIGKILLed is replaced at the next ``watch()`` (the harness
calls it every 0.1 s from its main thread, which is the only thread that
starts processes); a process that exits by itself (e.g. a vector worker that
could not open the store) is restarted after a short pause. ``stop()`` sends
SIGTERM, waits, and SIGKILLs what is left; only the processes this fleet
started are signalled, each by its pid. On Linux every process is also told
to die with the harness (PR_SET_PDEATHSIG), so an interrupted or killed
harness leaves no worker behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]  # the folder holding email_rag_harness/

COMMANDS = {
    "vectors": ["worker", "--with-vectors"],
    "plain": ["worker"],
    "scheduler": ["scheduler"],
    "idle": ["idle"],  # holds the mailbox's poll lease and IDLEs (polls on notification)
}
WORKER_ROLES = ("vectors", "plain")


@dataclass
class Proc:
    role: str
    n: int
    popen: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    killed: bool = False  # SIGKILLed by the harness
    exit_seen: bool = False  # an exit nobody asked for was counted

    @property
    def pid(self) -> int:
        return self.popen.pid


class Fleet:
    def __init__(self, env: dict[str, str], run_dir: Path, plain_workers: int,
                 entry: str = "email_rag") -> None:
        """``entry``: the module every process runs (``python -m ENTRY COMMAND``): the
        product's CLI, or the counter-check's (email_rag_harness.chaos.naive_cli)."""
        self.env = {**os.environ, **env,
                    "PYTHONPATH": os.pathsep.join(
                        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        self.run_dir = run_dir
        self.entry = entry
        self.logs = run_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.wanted = {"vectors": 1, "plain": plain_workers, "scheduler": 1, "idle": 1}
        self.procs: list[Proc] = []
        self.starts = 0
        self.hard_kills = 0
        self.restarts = 0  # exits nobody asked for
        self.lock = threading.Lock()
        self._seq = 0
        self._stopping = False
        self._restart_after: dict[str, float] = {}

    # --- lifecycle ---
    def start(self) -> None:
        for role, n in self.wanted.items():
            for _ in range(n):
                self.spawn(role)

    def spawn(self, role: str) -> Proc:
        with self.lock:
            self._seq += 1
            n = self._seq
            path = self.logs / f"{role}-{n}.log"
            out = path.open("ab")
            try:
                popen = subprocess.Popen(
                    [sys.executable, "-m", self.entry, *COMMANDS[role]], env=self.env,
                    cwd=self.run_dir, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent)
            finally:
                out.close()
            proc = Proc(role, n, popen, path)
            self.procs.append(proc)
            self.starts += 1
        log.info("started %s #%d (pid %d)", role, n, proc.pid)
        return proc

    def alive(self, role: str | None = None) -> list[Proc]:
        with self.lock:
            return [p for p in self.procs if p.popen.poll() is None and not p.killed
                    and (role is None or p.role == role)]

    def worker_pids(self) -> dict[int, Proc]:
        return {p.pid: p for p in self.alive() if p.role in WORKER_ROLES}

    def kill(self, pid: int, why: str) -> Proc | None:
        """SIGKILL one of our processes; ``watch()`` starts its replacement."""
        with self.lock:
            proc = next((p for p in self.procs if p.pid == pid and not p.killed
                         and p.popen.poll() is None), None)
            if proc is None:
                return None
            proc.killed = True
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        proc.popen.wait(timeout=10)
        with self.lock:
            self.hard_kills += 1
        log.warning("SIGKILL %s #%d (pid %d): %s", proc.role, proc.n, pid, why)
        return proc

    def hold(self, role: str, seconds: float) -> None:
        """Start no replacement of ``role`` for ``seconds`` from now (a process kept down by
        plan); ``hold(role, 0)`` ends the hold."""
        with self.lock:
            self._restart_after[role] = time.monotonic() + seconds

    def watch(self) -> None:
        """Replace killed processes at once; restart ones that exited by themselves after a
        short pause. Call it from the thread that owns the fleet (see PR_SET_PDEATHSIG)."""
        if self._stopping:
            return
        now = time.monotonic()
        for role, wanted in self.wanted.items():
            with self.lock:
                running = [p for p in self.procs if p.role == role and p.popen.poll() is None
                           and not p.killed]
                exited = [p for p in self.procs if p.role == role and not p.killed
                          and p.popen.poll() is not None and not p.exit_seen]
                for p in exited:
                    p.exit_seen = True
                    self.restarts += 1
                    self._restart_after[role] = max(self._restart_after.get(role, 0), now + 1.0)
                    log.warning("%s #%d (pid %d) exited with %s; see %s", role, p.n, p.pid,
                                p.popen.returncode, p.log_path)
            if len(running) < wanted and now >= self._restart_after.get(role, 0):
                for _ in range(wanted - len(running)):
                    self.spawn(role)

    def stop(self, grace: float = 8.0) -> None:
        self._stopping = True
        procs = self.alive()
        for p in procs:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for p in procs:
            try:
                p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.popen.wait(timeout=10)

    def summary(self) -> dict[str, int]:
        return {"process_starts": self.starts, "hard_kills": self.hard_kills,
                "unexpected_exits": self.restarts}


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the thread that started it ends."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
