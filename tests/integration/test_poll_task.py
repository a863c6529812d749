"""The scheduler's periodic poll as the workers run it (email_rag.runtime.tasks.poll_mailboxes)."""

from __future__ import annotations

from email_rag_harness.testing.mails import mail

import email_rag.runtime.tasks as tasks
from email_rag.core.settings import get_settings


def test_poll_task_polls_every_mailbox_and_returns_the_totals(env, monkeypatch, mailbox):
    """GIVEN a configured mailbox with two mails WHEN a worker runs the poll task
    THEN both are stored and the task returns the poll totals (regression: it called the
    ``totals`` property, so every poll job ended as an RQ failure with a TypeError)."""
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", mailbox.env_value())
    get_settings.cache_clear()
    monkeypatch.setattr(tasks, "_runner", None)
    mailbox.deliver([mail(i) for i in (1, 2)])
    try:
        totals = tasks.poll_mailboxes()
        assert totals["new"] == 2 and totals["queued"] == 2
    finally:
        if tasks._runner is not None:
            tasks._runner.services.close()
