"""`email-rag reindex` and `email-rag search` through the real CLI: exit codes, JSON shape,
messages when a store is down, and when the local folder is held by a process that is not
a vector worker."""

from __future__ import annotations

import json

import pytest
from email_rag_harness.testing.hang import closed_port

from email_rag.adapters.vectors import QdrantStore
from email_rag.indexing.indexer import Indexer
from email_rag.wiring.services import Services
from tests.factories import make_email, make_mailbox
from tests.helpers import run_cli


@pytest.fixture
def cli_env(env, monkeypatch):
    extra = {"EMAIL_RAG_STORE_BACKOFF": "0.01", "EMAIL_RAG_LOG_LEVEL": "WARNING"}
    for k, v in extra.items():
        monkeypatch.setenv(k, v)
    return {**env, **extra}


def index_with(settings, db, email: int, **overrides) -> None:
    for k, v in overrides.items():
        setattr(settings, k, v)
    svc = Services(settings)
    try:
        row = db.fetchone("SELECT * FROM emails WHERE id = %s", (email,))
        result = Indexer(svc).index(row)
        db.execute("UPDATE emails SET index_status = %s, index_missing = %s WHERE id = %s",
                   (str(result.status), ",".join(result.missing) or None, email))
    finally:
        svc.close()


def test_reindex_reports_a_store_still_down_then_repairs_with_exit_codes(cli_env, db, settings):
    email = make_email(db, subject="Login", body="I cannot log in since the update.")
    dead = f"http://127.0.0.1:{closed_port()}"
    index_with(settings, db, email, arango_url=dead, arango_timeout=0.3)
    assert db.fetchone("SELECT index_missing FROM emails WHERE id = %s", (email,))[
        "index_missing"] == "graph"

    res = run_cli("reindex", "--json", env_extra={"EMAIL_RAG_ARANGO_URL": dead,
                                                  "EMAIL_RAG_ARANGO_TIMEOUT": "0.3"})
    out = json.loads(res.stdout)
    assert res.returncode == 1 and out["exit_code"] == 1
    assert out["data"]["still_missing"] == {str(email): ["graph"]}
    assert "they are partially_indexed" in out["message"] and "graph" in out["message"]
    assert "The state is safe" in out["message"]

    res = run_cli("reindex", "--json")  # graph store off now: nothing is missing any more
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "Re-indexed 1 of 1" in out["message"]
    # the claim is re-counted in MariaDB after the sync, not taken from its own report
    assert out["data"]["partially_indexed_now"] == 0
    assert "re-counted in MariaDB: no mail is partially_indexed" in out["message"]
    row = db.fetchone("SELECT index_status, index_missing FROM emails WHERE id = %s", (email,))
    assert (row["index_status"], row["index_missing"]) == ("complete", None)

    res = run_cli("reindex", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["data"]["mode"] == "none"


def test_reindex_of_a_missing_mail_is_an_error(cli_env, db):
    res = run_cli("reindex", "--email", "999999", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["data"]["error"] == "not_found"


def test_search_lists_indexed_mail_and_refuses_an_unknown_mailbox(cli_env, db, settings):
    mb = make_mailbox(db, "support")
    email = make_email(db, mailbox_id=mb, subject="Refund", body="Please refund order 77.")
    index_with(settings, db, email)
    res = run_cli("search", "refund order 77")
    assert res.returncode == 0, res.stderr
    assert "Refund" in res.stdout and "support" in res.stdout and "1 mail(s)" in res.stdout
    res = run_cli("search", "refund", "--mailbox", "nope", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["data"]["error"] == "unknown_mailbox"


def test_search_says_clearly_when_the_holder_of_the_local_folder_does_not_answer(
        cli_env, db, settings):
    """GIVEN the local folder held by a process that is not a vector worker (this test)
    WHEN `search` runs THEN it does not open the folder, waits --timeout for a vector worker
    and fails with a message that says so (exit 1); the holder's store is untouched."""
    held = QdrantStore.from_settings(settings)
    held.open()
    try:
        res = run_cli("search", "anything", "--timeout", "1", "--json")
        assert res.stdout, res.stderr
        out = json.loads(res.stdout)
        assert res.returncode == 1
        assert out["data"]["error"] == "QueueCallTimeoutError"
        assert "no worker on queue 'email-rag-vectors'" in out["message"]
        assert held.count() == 0
    finally:
        held.close()
