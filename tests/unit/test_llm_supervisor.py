"""The local model's supervisor (email_rag/llm/supervisor.py), one test per row of its
failure table, on a scripted server (pure logic; the real llama-server is in
tests/e2e/test_llm_serve.py)."""

from __future__ import annotations

from email_rag.core.errors import LocalLLMStartError
from email_rag.core.retry import ExponentialBackoff
from email_rag.llm.supervisor import WATCH_S, Supervisor


class Stop:
    """The stop event: records every wait; set once the script has run out."""

    def __init__(self) -> None:
        self.set_now = False
        self.waits: list[float] = []

    def is_set(self) -> bool:
        return self.set_now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        return self.set_now


class Proc:
    def __init__(self, polls_alive: int, code: int = -9) -> None:
        self.left, self.code = polls_alive, code

    def poll(self):
        self.left -= 1
        return None if self.left >= 0 else self.code


class Server:
    """Each start follows the script: ("up", polls alive before dying) or ("fail", why);
    after the last step the stop event is set (SIGTERM)."""

    url, model_id, flags, started_in, log = "http://x/v1", "m", "default flags", 0.1, "log"

    def __init__(self, script, stop: Stop) -> None:
        self.script, self.stop_event = list(script), stop
        self.proc, self.stopped, self.started = None, 0, 0

    def start(self):
        if not self.script:
            self.stop_event.set_now = True
            raise LocalLLMStartError("stopped")
        kind, value = self.script.pop(0)
        if kind == "fail":
            raise LocalLLMStartError(value, died=True)
        self.started += 1
        self.proc = Proc(value)
        if not self.script:  # the last one serves until SIGTERM
            self.proc = Proc(10**9)
            self.stop_event.set_now = True
        return self

    def stop(self):
        self.stopped += 1
        self.proc = None

    def log_tail(self, lines: int = 15) -> str:
        return "the log's tail"


def supervise(script, stable_s: float = 3600.0):
    stop, said = Stop(), []
    server = Server(script, stop)
    served = Supervisor(server, stop, said.append, ExponentialBackoff(base=1, cap=8, jitter=0),
                        stable_s).run()
    return served, server, [w for w in stop.waits if w != WATCH_S], said


def test_a_server_that_dies_is_started_again_with_a_doubling_wait():
    served, server, backoffs, said = supervise([("up", 3), ("up", 2), ("up", 0), ("up", 5)])
    assert (served.starts, served.deaths) == (4, 3) and server.started == 4
    assert backoffs == [1, 2, 4]
    assert any("exited with -9" in s and "the log's tail" in s for s in said)
    assert served.last_error.startswith("exited with -9")


def test_a_start_that_fails_is_tried_again_and_counted():
    served, server, backoffs, said = supervise([("fail", "died while starting"),
                                                ("fail", "not healthy after 180 s"), ("up", 1)])
    assert (served.failed_starts, served.starts) == (2, 1)
    assert backoffs == [1, 2]
    assert any("did not start: not healthy after 180 s" in s for s in said)


def test_a_server_that_ran_long_enough_starts_the_backoff_over():
    served, _, backoffs, _ = supervise([("up", 1), ("up", 1), ("up", 1), ("up", 1)],
                                       stable_s=0.0)
    assert served.deaths == 3 and backoffs == [1, 1, 1]


def test_the_wait_is_capped():
    _, _, backoffs, _ = supervise([("fail", "x")] * 6 + [("up", 1)])
    assert backoffs == [1, 2, 4, 8, 8, 8]


def test_stop_while_serving_stops_the_server_and_starts_nothing_more():
    served, server, backoffs, _ = supervise([("up", 1)])
    assert served.starts == 1 and served.deaths == 0 and backoffs == []
    assert server.stopped >= 1 and server.proc is None

