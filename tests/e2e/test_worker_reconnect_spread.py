"""Four real workers lose their MariaDB connections in the same instant (KILL CONNECTION on
each: the shared server may not be restarted) and reconnect spread over the
``db_reconnect_spread`` window, as their own audit events show (issue 43: after a MariaDB
restart every worker reconnected in the same second)."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import timedelta

from email_rag.core.audit_event import utcnow
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_cli, spawn

WORKERS = 4
SPREAD = 6.0




def _connections(db) -> list[int]:
    rows = db.fetchall("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND "
                       "ID <> CONNECTION_ID()", (db.database,))
    return [int(r["ID"]) for r in rows]


def _work(db, mailbox: int, what: str) -> None:
    """One queue entry per worker, handed to Redis at once (the workers wait on it)."""
    for i in range(WORKERS):
        make_job(db, make_email(db, mailbox, subject=f"{what} {i}"))
    assert run_cli("redispatch", "--grace", "0").returncode == 0


def _recovered(db) -> list[dict]:
    rows = db.fetchall("SELECT at, detail FROM audit_log WHERE event = 'database_recovered' "
                       "ORDER BY at")
    return [{"at": r["at"], **json.loads(r["detail"])} for r in rows]


def test_four_workers_that_lost_mariadb_together_reconnect_spread_over_the_window(
        env, db, tmp_path):
    extra = {"EMAIL_RAG_WORKER_CLASS": "simple", "EMAIL_RAG_DB_RECONNECT_SPREAD": str(SPREAD)}
    procs = [spawn("worker", "--name", f"w{i}", env_extra=extra, log=tmp_path / f"w{i}.log")
             for i in range(WORKERS)]
    try:
        mb = make_mailbox(db)
        deadline = time.monotonic() + 120
        while len(_connections(db)) < WORKERS:  # each worker holds its MariaDB connection
            assert time.monotonic() < deadline, [(tmp_path / f"w{i}.log").read_text()[-2000:]
                                                 for i in range(WORKERS)]
            assert all(p.poll() is None for p in procs)
            _work(db, mb, "before")  # a worker connects to MariaDB for its first entry
            time.sleep(1.0)
        killed_at = utcnow()  # the clock of the audit events' ``at``
        for conn in _connections(db):  # all lost in the same instant
            db.execute(f"KILL CONNECTION {conn}")
        _work(db, mb, "after the kill")
        deadline = time.monotonic() + 120
        while len({r["worker"] for r in _recovered(db)}) < WORKERS:
            assert time.monotonic() < deadline, _recovered(db)
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except Exception:  # noqa: BLE001 - a stuck worker is killed
                os.kill(p.pid, signal.SIGKILL)
    back = _recovered(db)[:WORKERS]
    jitter = [r["jitter_s"] for r in back]
    # each worker drew its own wait in the window, and its reconnect came after it
    assert all(0.0 <= j <= SPREAD for j in jitter) and len(set(jitter)) == WORKERS, back
    assert all(r["waited_s"] >= r["jitter_s"] for r in back), back
    # the reconnects are spread as the recorded waits are, not in one second: the last one
    # came no earlier than the longest wait after the kill (a busy machine only delays a
    # reconnect, so this holds under any load; the first one's time does not)
    assert back[-1]["at"] - killed_at >= timedelta(seconds=max(jitter) - 1.0), (killed_at, back)
    assert max(jitter) - min(jitter) > 1.0, back  # four draws from 0..6 s within 1 s: p < 0.2 %
