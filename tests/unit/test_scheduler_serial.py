"""The scheduler runs its periodic jobs one at a time (they share one MariaDB connection).

Regression: with APScheduler's default pool of 10 threads, jobs that came due together
(at start every job is due at once; with the chaos harness's 1-2 s intervals constantly)
ran at the same time on the one connection of the shared Services: crossed result sets
("Cursor doesn't have a result set", a row of another query -> KeyError 'started_at') and
a segfault of the MariaDB connector that killed the scheduler. Found by `email-rag chaos`.
"""

from __future__ import annotations

import threading
import time

import email_rag.runtime.scheduler as scheduler


def test_jobs_that_come_due_together_never_run_at_the_same_time(monkeypatch):
    """GIVEN three periodic jobs due at once, each taking 0.15 s
    WHEN the scheduler runs for a while
    THEN every job ran, and never two at the same time."""
    lock = threading.Lock()
    running, most, ran = 0, 0, []

    def job(name):
        def run():
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(0.15)
            with lock:
                running -= 1
                ran.append(name)
        return run

    monkeypatch.setattr(scheduler, "periodic_jobs",
                        lambda services: [(n, 1, job(n)) for n in ("a", "b", "c")])
    sched = scheduler.build_scheduler(services=None)
    thread = threading.Thread(target=sched.start, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and set(ran) != {"a", "b", "c"}:
        time.sleep(0.02)
    sched.shutdown(wait=True)
    thread.join(5)
    assert set(ran) == {"a", "b", "c"}
    assert most == 1
