"""The local model as a managed service: ``email-rag llm serve`` keeps one llama-server
answering until it is told to stop.

It starts the server exactly as the demo does (``LocalLLMServer``: the installed model, the
flags proven on this CPU, the safe flags once when a start dies), waits for ``/health``,
and then watches the process. When it dies (a crash, the OOM killer, a ``kill -9``) it is
started again after a backoff that doubles from 1 s up to 60 s and starts over once a
server has run for ``STABLE_S``; every start, death and restart is said on stderr with the
tail of the server's log, which the server itself writes to its log file. SIGTERM or SIGINT
(``stop``) ends it: the server gets SIGTERM, then SIGKILL after 10 s, and nothing is left.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| not installed / model incomplete | no | yes: nothing started | ``LocalLLMMissingError`` names the install command (exit 1) |
| the server dies while starting or is not healthy in time | yes, with the backoff | yes: said with the log's tail | the next start; calls meanwhile fail as connection errors (the job retry cycle) |
| the server dies while serving | yes, with the backoff | yes: its exit code and uptime said | restarted; the next call reaches the new server |
| it keeps dying | yes, every 60 s | yes: each death said | an operator reads the log (the flags, the CPU) |
| SIGTERM / SIGINT | - | yes | the server stopped, exit 0 |
| this process is killed (SIGKILL) | - | yes | the server gets SIGTERM from the kernel (``PR_SET_PDEATHSIG``) |
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.errors import LocalLLMStartError
from ..core.retry import ExponentialBackoff
from .local_server import LocalLLMServer

STABLE_S = 600.0  # a server that ran this long resets the backoff
WATCH_S = 0.5  # how often the process is looked at


@dataclass
class Served:
    """What ``Supervisor.run`` did: starts, deaths, the last error."""

    starts: int = 0
    deaths: int = 0
    failed_starts: int = 0
    last_error: str | None = None


class Supervisor:
    """Keeps ``server`` running until ``stop`` is set (see the module's table)."""

    def __init__(self, server: LocalLLMServer, stop: threading.Event,
                 say: Callable[[str], None], backoff: ExponentialBackoff | None = None,
                 stable_s: float = STABLE_S) -> None:
        self.server, self.stop, self.say = server, stop, say
        self.backoff = backoff or ExponentialBackoff(base=1.0, cap=60.0, jitter=0.0)
        self.stable_s = stable_s
        self.served = Served()

    def run(self) -> Served:
        failures = 0
        try:
            while not self.stop.is_set():
                if not self._start():
                    failures += 1
                    self._wait(failures)
                    continue
                up = self._watch()
                if self.stop.is_set():
                    break
                failures = 1 if up >= self.stable_s else failures + 1
                self._wait(failures)
        finally:
            self.server.stop()
        return self.served

    def _start(self) -> bool:
        try:
            self.server.start()
        except LocalLLMStartError as e:
            self.served.failed_starts += 1
            self.served.last_error = e.message
            self.say(f"llama-server did not start: {e.message}")
            return False
        self.served.starts += 1
        self.say(f"llama-server answering on {self.server.url} as {self.server.model_id} "
                 f"({self.server.flags}; started in {self.server.started_in:.1f} s; "
                 f"log {self.server.log})")
        return True

    def _watch(self) -> float:
        """Wait until the server dies or ``stop`` is set; how long it ran."""
        started = time.monotonic()
        proc = self.server.proc
        while proc is not None and not self.stop.wait(WATCH_S):
            code = proc.poll()
            if code is None:
                continue
            up = time.monotonic() - started
            self.server.proc = None
            self.served.deaths += 1
            self.served.last_error = f"exited with {code} after {up:.0f} s"
            self.say(f"llama-server exited with {code} after {up:.0f} s: "
                     f"{self.server.log_tail(5)}")
            return up
        return time.monotonic() - started

    def _wait(self, failures: int) -> None:
        delay = self.backoff.delay(failures)
        if not self.stop.is_set():
            self.say(f"starting llama-server again in {delay:.0f} s")
        self.stop.wait(delay)
