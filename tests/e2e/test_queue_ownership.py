"""Queue ownership is enforced, not conventional (issue 14's liveness defect).

Seen in a harsher chaos run: after Redis flushes and re-dispatch an RQ message of the
vector queue reached a plain worker; the claim did not check the queue, the plain worker
ran the vector step itself and ``QdrantStore.client`` opened the single-owner local folder
lazily and kept it. Every restarted ``--with-vectors`` worker then waited 60 s and exited;
the pipeline stood still with no alarm. Here with real worker processes, Redis and MariaDB."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from rq.job import Job

from email_rag.adapters.queue import rq_job_id
from email_rag.adapters.vectors import QdrantStore, holder
from tests.e2e.test_vector_worker import VQ, enqueue, job_states, venv, worker  # noqa: F401
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_cli, wait_for
from tests.index_helpers import confirm_steps

pytestmark = pytest.mark.slow


def _vector_entry(db) -> tuple[int, int]:
    mb = make_mailbox(db, "support")
    email = make_email(db, mailbox_id=mb, subject="Printer E7", body="Printer shows E7.")
    confirm_steps(db, email, "parse", "classify", "draft")
    return email, make_job(db, email, queue=VQ)


def test_a_misrouted_vector_entry_is_not_run_by_a_plain_worker_and_the_folder_stays_free(
        venv, db):  # noqa: F811
    """GIVEN an entry of the vector queue (its next step writes vectors) delivered on the
    plain queue to a plain worker WHEN the worker gets it THEN it does not run it (the entry
    stays queued, no attempt counted) and the local folder is never opened by it; WHEN a
    vector owner starts and re-dispatch runs THEN the entry is done."""
    item = _vector_entry(db)
    plain = worker(extra_env=venv)
    owner = None
    try:
        enqueue(venv, [item], queue="email-rag")  # the wrong queue
        # the plain worker has taken the delivery and finished with it: RQ deletes a
        # finished job (result_ttl=0); a failed one would stay (failure_ttl)
        conn = redis.Redis.from_url(venv["EMAIL_RAG_REDIS_URL"])
        try:
            wait_for(lambda: not Job.exists(rq_job_id(item[1], "email-rag"), connection=conn),
                     timeout=120, what="the plain worker to take the misrouted delivery")
        finally:
            conn.close()
        state = job_states(db, [item])[0]
        assert state["state"] == "queued" and state["attempts"] == 0, state
        assert holder(Path(venv["EMAIL_RAG_QDRANT_PATH"])) is None
        owner = worker("--with-vectors", extra_env=venv)
        proc = run_cli("redispatch", "--grace", "0", "--json", env_extra=venv)
        assert proc.returncode == 0, proc.stderr[-2000:]
        wait_for(lambda: job_states(db, [item])[0]["state"] == "done", timeout=120,
                 what="the vector owner to run the re-dispatched entry")
        assert plain.poll() is None and owner.poll() is None
    finally:
        for p in (plain, owner):
            if p is not None:
                p.terminate()
                p.communicate(timeout=60)  # drains its pipes: a full one blocks its exit


def test_a_process_that_is_not_the_vector_owner_never_opens_the_local_store(tmp_path):
    """In a process that declared it is not the owner (a plain worker, the scheduler) the
    local folder is refused even lazily, with a clear error; the folder stays free."""
    import subprocess
    import sys

    code = (
        "from pathlib import Path\n"
        "from email_rag.adapters.vectors import QdrantStore, forbid_local_open\n"
        "from email_rag.core.errors import StoreNotOwnedError\n"
        "forbid_local_open()\n"
        f"store = QdrantStore(path=Path({str(tmp_path / 'qdrant')!r}))\n"
        "try:\n"
        "    store.client\n"
        "except StoreNotOwnedError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "refused:" in out.stdout and "never opens it" in out.stdout, out.stderr[-1500:]
    assert holder(tmp_path / "qdrant") is None
    store = QdrantStore(path=tmp_path / "qdrant")  # this process may (a CLI command, a test)
    try:
        assert store.client is not None
    finally:
        store.close()


def _owner_check(env) -> dict:
    import json

    proc = run_cli("status", "--json", env_extra=env, timeout=120)
    deps = json.loads(proc.stdout)["data"]["dependencies"]
    return next(d for d in deps if d["name"] == "vector owner")


def test_a_vector_owner_that_cannot_start_raises_an_alarm_in_status_and_a_running_one_shows(
        venv, db, tmp_path):  # noqa: F811
    """GIVEN another process holding the local folder WHEN a --with-vectors worker starts
    THEN it exits with an ALARM line, and `email-rag status` shows the vector owner check
    failing with the failed start; entries waiting on the vector queue are named. WHEN the
    folder is free and an owner runs THEN status shows it (pid, host) while it beats."""
    squatter = QdrantStore(path=venv["EMAIL_RAG_QDRANT_PATH"])
    squatter.open()
    try:
        proc = worker("--with-vectors", extra_env=venv)
        _, err = proc.communicate(timeout=180)
        assert proc.returncode != 0
        assert "ALARM vector owner cannot start" in err
        check = _owner_check(venv)
        assert check["ok"] is False and "failed start" in check["detail"], check
    finally:
        squatter.close()
    owner = worker("--with-vectors", extra_env=venv)
    try:
        deadline = time.monotonic() + 120
        check = _owner_check(venv)
        while time.monotonic() < deadline and f"pid {owner.pid}" not in check["detail"]:
            time.sleep(0.5)
            check = _owner_check(venv)
        assert f"worker pid {owner.pid}" in check["detail"], check
    finally:
        owner.terminate()
        owner.communicate(timeout=60)  # drains its pipes: a full one blocks its exit


def test_the_web_status_page_shows_a_vector_owner_that_cannot_start(venv, db, settings):  # noqa: F811
    """The same alarm on the web status page (admins see the detail)."""
    from fastapi.testclient import TestClient

    from email_rag.web.app import create_app
    from tests.webutil import LOOPBACK, login, make_user

    squatter = QdrantStore(path=venv["EMAIL_RAG_QDRANT_PATH"])
    squatter.open()
    try:
        proc = worker("--with-vectors", extra_env=venv)
        proc.communicate(timeout=180)
        assert proc.returncode != 0
    finally:
        squatter.close()
    settings.web_secret_key = type(settings.web_secret_key)("test-secret")
    make_user(db, "root", "admin")
    with TestClient(create_app(settings), base_url="http://testserver", client=LOOPBACK) as admin:
        login(admin, "root")
        page = admin.get("/status").text
    assert "vector owner" in page and "ALARM" in page and "failed start" in page
