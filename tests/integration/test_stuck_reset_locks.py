"""The stuck-job cleanup next to busy workers: no deadlocks, and only stuck claims reset.

Regression (found by `email-rag chaos`, which runs the cleanup every second): the cleanup
selected the 'processing' entries FOR UPDATE, locking the scanned index range; workers
claiming and finishing entries at the same time deadlocked with it, and the worker that
InnoDB picked as the victim lost its attempt (DatabaseBusyError -> retry, or dead after
three).
"""

from __future__ import annotations

import threading
import time

from email_rag.core.errors import DatabaseBusyError
from email_rag.core.retry import RetryPolicy
from email_rag.db import Database
from email_rag.jobs.store import JobStore
from tests.factories import make_email, make_job

POLICY = RetryPolicy(delays=(0.0,), max_attempts=10_000)


def test_cleanup_running_beside_busy_workers_causes_no_deadlock(db):
    """GIVEN three workers claiming and failing entries in a tight loop
    WHEN the cleanup scans for stuck entries over and over at the same time
    THEN neither side ever gets a deadlock (DatabaseBusyError).

    The run lasts until the workers did 300 claim cycles and the cleanup 30 scans beside
    them (about 4 s on an idle machine), not a fixed time: a busy machine does fewer."""
    jobs = [make_job(db, make_email(db)) for _ in range(45)]
    stop = threading.Event()
    busy: list[str] = []
    lock = threading.Lock()
    counts = {"cycles": 0, "scans": 0}

    def count(what: str) -> None:
        with lock:
            counts[what] += 1

    def worker(k: int) -> None:
        store = JobStore(Database(port=3306, database=db.database), POLICY)
        try:
            while not stop.is_set():
                for j in jobs[k::3]:
                    try:
                        job = store.claim(j, f"w{k}")
                        if job:
                            store.fail(job, f"w{k}", RuntimeError("again"))
                        count("cycles")
                    except DatabaseBusyError as e:
                        busy.append(f"worker {k}: {e}")
        finally:
            store.db.close()

    def cleanup() -> None:
        store = JobStore(Database(port=3306, database=db.database), POLICY)
        try:
            while not stop.is_set():
                try:
                    store.reset_stuck(3600)  # scans every processing entry, resets none
                    count("scans")
                except DatabaseBusyError as e:
                    busy.append(f"cleanup: {e}")
        finally:
            store.db.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=cleanup))
    for t in threads:
        t.start()
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and not busy:
            with lock:
                if counts["cycles"] >= 300 and counts["scans"] >= 30:
                    break
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(120)
    assert busy == []
    assert counts["cycles"] >= 300 and counts["scans"] >= 30, counts


def test_entry_reclaimed_after_the_scan_is_not_reset(db):
    """GIVEN an entry found stuck, then finished and claimed again by another worker
    before the reset is applied THEN the reset changes nothing (compare-and-set on the
    claim that was stuck)."""
    store = JobStore(db, POLICY)
    job_id = make_job(db, make_email(db))
    assert store.claim(job_id, "dead-worker")
    db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 1 HOUR WHERE id = %s", (job_id,))
    original = store.db.fetchall

    def scan_then_reclaim(query, params=None):
        rows = original(query, params)
        db.execute("UPDATE jobs SET state = 'queued' WHERE id = %s", (job_id,))
        assert store.claim(job_id, "live-worker")
        db.execute("UPDATE jobs SET started_at = NOW(6) - INTERVAL 2 HOUR WHERE id = %s",
                    (job_id,))
        return rows

    store.db.fetchall = scan_then_reclaim  # type: ignore[method-assign]
    assert store.reset_stuck(60) == []
    row = db.fetchone("SELECT state, worker FROM jobs WHERE id = %s", (job_id,))
    assert (row["state"], row["worker"]) == ("processing", "live-worker")
