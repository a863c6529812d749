"""Shared fixtures: every test gets its own MariaDB database and Redis db.

The project's EMAIL_RAG_* variables are cleared for every test, so a
developer's shell cannot change results; fixtures set what a test needs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from email_rag.core.settings import ENV_PREFIX, Settings, get_settings
from email_rag.db import Database
from email_rag.db.migrate import ensure_database, migrate

ROOT = Path(__file__).resolve().parents[1]
MARIADB = dict(host="127.0.0.1", port=3306, user="root", password="")
REDIS_BASE = "redis://127.0.0.1:6379"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith(ENV_PREFIX):
            monkeypatch.delenv(key)
    # the explicit test setting: word hashing instead of the local embedding model (fast; no
    # semantics). Tests about retrieval quality set EMAIL_RAG_EMBEDDING_BACKEND=local.
    monkeypatch.setenv("EMAIL_RAG_EMBEDDING_BACKEND", "hashing")
    # keep any .env in the working directory from leaking into tests
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture
def db_name() -> Iterator[str]:
    name = f"erag_t_{uuid.uuid4().hex[:12]}"
    yield name
    server = Database(**MARIADB)
    try:
        server.execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        server.close()


@pytest.fixture
def db(db_name: str) -> Iterator[Database]:
    """A fresh, migrated database of its own."""
    database = Database(**MARIADB, database=db_name)
    ensure_database(database, db_name)
    migrate(database)
    yield database
    database.close()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis db (1..15) claimed for this test, flushed before and after."""
    from email_rag_harness.testing.redis_claim import claimed_db

    with claimed_db(REDIS_BASE, ttl=900, wait=30) as url:
        yield url


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, db: Database, redis_url: str, tmp_path: Path) -> dict:
    """Environment for the real CLI/worker against this test's database and Redis db."""
    values = {
        "EMAIL_RAG_DB_NAME": db.database,
        "EMAIL_RAG_REDIS_URL": redis_url,
        "EMAIL_RAG_AUDIT_SPOOL_PATH": str(tmp_path / "audit-spool.jsonl"),
        "EMAIL_RAG_QDRANT_PATH": str(tmp_path / "qdrant"),
        "EMAIL_RAG_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "EMAIL_RAG_SMTP_PORT": "9",
        "EMAIL_RAG_SMTP_SECURITY": "plain",  # the tests' relays are plaintext doubles
        # tests put mail in a fresh mailbox and then poll it as new work; the history
        # import (issue 31) is switched on by its own tests
        "EMAIL_RAG_HISTORY_IMPORT": "false",
    }
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    get_settings.cache_clear()
    return values


@pytest.fixture
def settings(env: dict) -> Settings:
    return get_settings()


@pytest.fixture(scope="session")
def dovecot():
    """One private Dovecot IMAP server for the session (email_rag_harness.testing.dovecot)."""
    from email_rag_harness.testing.dovecot import Dovecot

    instance = Dovecot().start()
    yield instance
    instance.stop()


@pytest.fixture
def mailbox(dovecot):
    """A fresh, empty IMAP mailbox of its own: a new Dovecot user.

    ``mailbox.config`` is its ``MailboxConfig``; ``append``/``deliver`` put mail in.
    """
    return dovecot.add_user()
