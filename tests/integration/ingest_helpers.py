"""Shared helpers of the ingestion tests (real Dovecot, MariaDB, Redis)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from email_rag_harness.testing.hang import HangingServer, closed_port

from email_rag.core.settings import MailboxConfig, Settings
from email_rag.wiring.services import Services

__all__ = ["closed_port"]

FAST = dict(imap_backoff_base=0.05, imap_backoff_cap=0.2, imap_timeout=3.0,
            poll_lease_seconds=30)


def services_for(settings: Settings, *mailboxes, **overrides) -> Services:
    configs = [m.config if hasattr(m, "config") else m for m in mailboxes]
    return Services(settings.model_copy(update={"mailboxes": configs, **FAST, **overrides}))


def with_port(config: MailboxConfig, port: int, **kw) -> MailboxConfig:
    return config.model_copy(update={"port": port, **kw})


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A TCP server that accepts connections and never says a word (IMAP timeout)."""
    server = HangingServer()
    try:
        yield server.port
    finally:
        server.close()


def emails(db, *cols: str) -> list[dict]:
    what = ", ".join(cols) if cols else "*"
    return db.fetchall(f"SELECT {what} FROM emails ORDER BY id")


def jobs(db) -> list[dict]:
    return db.fetchall("SELECT * FROM jobs ORDER BY id")


def events(db, event: str, entity_type: str | None = None) -> list[dict]:
    if entity_type:
        return db.fetchall("SELECT * FROM audit_log WHERE event = ? AND entity_type = ? "
                           "ORDER BY id", (event, entity_type))
    return db.fetchall("SELECT * FROM audit_log WHERE event = ? ORDER BY id", (event,))


def mailbox_row(db, name: str) -> dict:
    return db.fetchone("SELECT * FROM mailboxes WHERE name = ?", (name,))
