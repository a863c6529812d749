"""The one-owner rule of a local Qdrant folder with real processes: `email-rag worker`
subprocesses (one with --with-vectors, one without) against a real Redis db and MariaDB,
and the `reindex` / `search` commands while the vector worker holds the folder and after."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from email_rag.adapters.queue import JobQueue
from email_rag.adapters.vectors import QdrantStore, holder
from email_rag.db.audit import events_for
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import ROOT, run_cli, wait_for
from tests.index_helpers import confirm_steps, make_sent_draft

VQ = "email-rag-vectors"
OTHER_STEPS = ("parse", "classify", "draft")  # owned by other modules; pre-confirmed here
# a worker subprocess's whole run (start-up, imports, Qdrant) on a busy 2-core CI machine:
# a deadline, not an expectation - a hung worker still fails the test
WORKER_DEADLINE = 180


@pytest.fixture
def venv(env, monkeypatch):
    extra = {"EMAIL_RAG_EMBEDDING_BACKEND": "hashing", "EMAIL_RAG_STORE_BACKOFF": "0.01",
             "EMAIL_RAG_VECTOR_LOCK_WAIT_SECONDS": "0.5", "EMAIL_RAG_LOG_LEVEL": "WARNING"}
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    return {**env, **extra}


def mails(db, n: int) -> list[tuple[int, int]]:
    mb = make_mailbox(db, "support")
    out = []
    for i in range(n):
        email = make_email(db, mailbox_id=mb, subject=f"Printer problem {i}",
                           body=f"Printer {i} shows error E{i} after the update.")
        confirm_steps(db, email, *OTHER_STEPS)
        out.append((email, make_job(db, email, queue="email-rag")))
    return out


def enqueue(env, items, queue="email-rag"):
    q = JobQueue(env["EMAIL_RAG_REDIS_URL"])
    q.enqueue([(queue, job) for _, job in items])
    q.close()


def worker(*args: str, extra_env: dict | None = None, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(extra_env or {})}
    return subprocess.Popen([sys.executable, "-m", "email_rag", "worker", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            **kw)


def job_states(db, items):
    return [db.fetchone("SELECT state, queue, attempts FROM jobs WHERE id = %s", (j,))
            for _, j in items]


def index_statuses(db, items):
    return {db.fetchone("SELECT index_status FROM emails WHERE id = %s", (e,))["index_status"]
            for e, _ in items}


def store_failures(db, items):
    return [ev for e, _ in items for ev in events_for(db, "email", e)
            if ev["event"] in ("store_try_failed", "partially_indexed")]


def test_only_the_vector_worker_opens_the_local_folder_and_a_second_owner_is_refused(venv, db):
    """GIVEN this test process holding the local Qdrant folder
    WHEN a plain worker processes the mails THEN it hands index work to the vector queue and
    never touches the folder; WHEN a --with-vectors worker starts THEN it is refused with a
    clear error naming the holder and changes nothing; WHEN the folder is free THEN the
    vector worker indexes every mail."""
    items = mails(db, 3)
    enqueue(venv, items)
    path = Path(venv["EMAIL_RAG_QDRANT_PATH"])
    held = QdrantStore(path=path, dim=384)
    held.open()
    try:
        plain = worker("--burst", "--name", "plain")
        out, err = plain.communicate(timeout=WORKER_DEADLINE)
        assert plain.returncode == 0, err
        assert [(r["state"], r["queue"], r["attempts"]) for r in job_states(db, items)] == [
            ("queued", VQ, 0)] * 3
        assert index_statuses(db, items) == {"pending"} and store_failures(db, items) == []
        assert holder(path)["pid"] == os.getpid()

        second = worker("--with-vectors", "--burst")
        out, err = second.communicate(timeout=WORKER_DEADLINE)
        assert second.returncode == 1
        text = out + err
        assert f"held by pid {os.getpid()}" in text and "does not start" in text
        assert [r["state"] for r in job_states(db, items)] == ["queued"] * 3
        assert index_statuses(db, items) == {"pending"} and store_failures(db, items) == []
        assert held.count() == 0
    finally:
        held.close()

    vec = worker("--with-vectors", "--burst")
    out, err = vec.communicate(timeout=WORKER_DEADLINE)
    assert vec.returncode == 0, err
    assert [r["state"] for r in job_states(db, items)] == ["done"] * 3
    assert index_statuses(db, items) == {"complete"}
    check = QdrantStore(path=path, dim=384)
    try:
        assert check.count() == 3
    finally:
        check.close()


def test_two_workers_running_and_the_cli_routes_to_the_vector_worker(venv, db):
    """GIVEN a long-running --with-vectors worker holding the folder (paused) and a plain
    worker WHEN both process mails THEN only the vector worker opens the store (any other
    opener would fail and leave partially_indexed mail); `search` and `reindex` are routed
    to it while it runs, and run in-process once it stopped."""
    items = mails(db, 4)
    answered = items[0][0]
    make_sent_draft(db, answered, "Reinstall the driver.")
    path = Path(venv["EMAIL_RAG_QDRANT_PATH"])
    vec = worker("--with-vectors", "--name", "vec")
    try:
        wait_for(lambda: (holder(path) or {}).get("pid") == vec.pid, timeout=WORKER_DEADLINE,
                 what="vector worker start")
        os.kill(vec.pid, signal.SIGSTOP)  # holds the folder, takes no job for now
        enqueue(venv, items)
        plain = worker("--burst", "--name", "plain")
        out, err = plain.communicate(timeout=WORKER_DEADLINE)
        assert plain.returncode == 0, err
        claimed_by = {json.loads(ev["detail"])["worker"] for _, j in items
                      for ev in events_for(db, "job", j) if ev["event"] == "claimed"}
        assert claimed_by == {f"{os.uname().nodename}:{plain.pid}"}
        os.kill(vec.pid, signal.SIGCONT)
        wait_for(lambda: all(r["state"] == "done" for r in job_states(db, items)),
                 timeout=WORKER_DEADLINE, what="vector worker to finish the handed-off jobs")
        assert index_statuses(db, items) == {"complete"} and store_failures(db, items) == []
        assert holder(path)["pid"] == vec.pid

        # search while the vector worker holds the folder: routed through the vector queue
        res = run_cli("search", "Printer 2 shows error E2 after the update.", "--json",
                      "--mailbox", "support", "--timeout", "90")
        assert res.returncode == 0, res.stdout + res.stderr
        data = json.loads(res.stdout)["data"]
        assert data["mode"] == "vector_worker"
        assert data["results"][0]["email_id"] == items[2][0]
        assert data["results"][0]["mailbox"] == "support"
        hit = next(r for r in data["results"] if r["email_id"] == answered)
        assert hit["has_sent_reply"] is True

        # reindex while it holds the folder: an index_sync entry for it, followed with --wait
        res = run_cli("reindex", "--email", str(answered), "--wait", "90", "--json")
        assert res.returncode == 0, res.stdout + res.stderr
        out = json.loads(res.stdout)
        assert out["data"]["mode"] == "queued" and out["data"]["final_state"] == "done"
        assert f"pid {vec.pid}" in out["message"]
        assert [e["event"] for e in events_for(db, "email", answered)].count("reindexed") == 1

        status = json.loads(run_cli("status", "--json").stdout)
        qdrant = next(d for d in status["data"]["dependencies"] if d["name"] == "qdrant")
        assert f"held by pid {vec.pid}" in qdrant["detail"]
    finally:
        if vec.poll() is None:
            os.kill(vec.pid, signal.SIGCONT)
            vec.terminate()
        vec.communicate(timeout=WORKER_DEADLINE)
    assert holder(path) is None  # the worker let go of the folder and removed its owner file

    res = run_cli("search", "Printer 1 shows error E1", "--json")
    data = json.loads(res.stdout)["data"]
    assert data["mode"] == "in_process" and data["results"][0]["email_id"] == items[1][0]
    res = run_cli("reindex", "--all", "--json")
    out = json.loads(res.stdout)
    assert res.returncode == 0 and out["data"]["mode"] == "in_process"
    assert sorted(out["data"]["reindexed"]) == sorted(e for e, _ in items)
    check = QdrantStore(path=path, dim=384)
    try:
        assert check.count() == 4  # re-indexed twice, still one point per mail
    finally:
        check.close()


def test_vector_worker_started_during_a_store_outage_runs_and_degrades_to_partial_index(
        venv, db):
    """GIVEN a local Qdrant collection whose SQLite storage another process holds locked for
    readers and writers (a store outage) WHEN the --with-vectors worker starts THEN it does
    not exit (an outage is not another owner): it runs the mails, which end partially_indexed
    with the missing store named, and the job is done - processing continues with reduced
    context. WHEN the outage ends THEN the next index write works again."""
    import sqlite3

    path = Path(venv["EMAIL_RAG_QDRANT_PATH"])
    seed = QdrantStore(path=path, dim=384)
    seed.open()  # the collection exists, as after the first indexed mail
    seed.close()
    items = mails(db, 2)
    enqueue(venv, items)
    storage = path / "collection" / "emails" / "storage.sqlite"
    lock = sqlite3.connect(str(storage), isolation_level=None)
    lock.execute("PRAGMA locking_mode=EXCLUSIVE")  # with the write-ahead log: readers locked out too
    lock.execute("BEGIN EXCLUSIVE")
    try:
        vec = worker("--with-vectors", "--burst", extra_env={"EMAIL_RAG_STORE_TRIES": "1"})
        out, err = vec.communicate(timeout=WORKER_DEADLINE)
        assert vec.returncode == 0, out + err
        assert "ALARM" in err and "vector store" in err
        assert [r["state"] for r in job_states(db, items)] == ["done"] * 2
        assert index_statuses(db, items) == {"partially_indexed"}
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    check = QdrantStore(path=path, dim=384)
    try:
        check.open()
        assert check.count() == 0
    finally:
        check.close()
