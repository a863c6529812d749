"""What ``sending.review`` / ``sending.admin`` / ``SendService`` use of ``Services``, in
memory: the one memory database (tests/doubles/memory_db.py) under the REAL stores and the
REAL ``JobStore``, a queue that records what was put on it, and a review world to start from.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from email_rag.core.retry import RetryPolicy
from email_rag.jobs.store import JobStore
from tests.doubles.memory_db import MemoryDatabase


class MemoryQueue:
    def __init__(self) -> None:
        self.put: list[tuple[str, int]] = []

    def enqueue(self, items: Any) -> int:
        self.put += list(items)
        return len(self.put)


class MemoryAudit:
    """``AuditLog.record`` into the memory database's event list."""

    def __init__(self, rows: MemoryDatabase) -> None:
        self.rows = rows

    def record(self, *events: Any) -> bool:
        self.rows.events += events
        return True


def _no_configured_mailbox(name: str) -> Any:
    raise KeyError(name)  # the reply leaves from the mailbox row's address


def memory_services(rows: MemoryDatabase | None = None, journal_dir: Any = "/nonexistent",
                    mail_sender: Any = None) -> SimpleNamespace:
    """What ``sending.review`` / ``sending.admin`` / ``SendService`` use of ``Services``,
    in memory. ``journal_dir``: the send journal's directory (a test's tmp_path)."""
    rows = rows or MemoryDatabase()
    return SimpleNamespace(
        db=rows, stores=rows.stores, jobs=JobStore.over(rows, RetryPolicy()),
        queue=MemoryQueue(),
        audit=MemoryAudit(rows), mail_sender=mail_sender, mail_sender_for=lambda _mailbox: mail_sender,
        mailbox=_no_configured_mailbox,
        settings=SimpleNamespace(message_id_domain="test.invalid", queue_name="default",
                                 send_journal_dir=journal_dir, reconcile_sent_folder=False,
                                 reconcile_again_after_seconds=0),
        rows=rows)


def review_world(svc: SimpleNamespace, *, draft_status: str = "pending_review",
                 mail_status: str = "draft_ready", check_flags: str | None = None,
                 reply_addr: str | None = "kunde@example.org") -> tuple[int, int]:
    """One mailbox, one mail with its reply decision, one draft: (email_id, draft_id)."""
    rows = svc.rows
    box = rows.add("mailboxes", name="support", address="support@example.com")
    email_id = rows.add("emails", status=mail_status, mailbox_id=box, subject="Rechnung 4711",
                        message_id="<m1@example.org>", thread_key="t1",
                        from_addr="kunde@example.org", reply_addr=reply_addr,
                        reply_rule="Reply-To" if reply_addr else "no-reply sender: nobody")
    draft_id = rows.add("drafts", email_id=email_id, status=draft_status, version=1,
                        body_draft="Guten Tag, anbei die Rechnung.", check_flags=check_flags)
    return email_id, draft_id
