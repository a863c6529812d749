"""The real path for mail-fidelity tests: APPEND to a private Dovecot user -> the real
poller -> the job runner with the real pipeline (scripted LLM over HTTP, local Qdrant,
hashing embedder) -> the stored rows."""

from __future__ import annotations

from typing import Any

import pytest
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from email_rag.ingest.poller import Poller, PollResult
from email_rag.runtime.job_runner import JobRunner
from tests.helpers import run_job
from tests.integration.ingest_helpers import services_for


class RealPath:
    def __init__(self, settings: Any, mailbox: Any, llm: Any, **overrides: Any) -> None:
        self.mailbox = mailbox
        self.llm = llm
        llm.reset()
        self.svc = services_for(settings, mailbox, llm_base_url=llm.url, llm_timeout=10.0,
                                retry_jitter=0, store_backoff=0.01, **overrides)
        self.db = self.svc.db
        self.runner = JobRunner(self.svc, "w-fidelity", vector_owner=True)

    def close(self) -> None:
        self.svc.close()

    def deliver(self, *raws: bytes) -> None:
        self.mailbox.append_many(raws)

    def poll(self) -> PollResult:
        return Poller(self.svc).poll()

    def work(self) -> list[str]:
        jobs = self.db.fetchall("SELECT id FROM jobs WHERE kind = 'process_email' AND state IN "
                                "('queued', 'failed') ORDER BY id")
        return [run_job(self.runner, j["id"]) for j in jobs]

    def run(self, *raws: bytes) -> list[dict[str, Any]]:
        """Deliver, poll, process; the rows of the mails stored by this poll, in UID order."""
        before = self.db.fetchone("SELECT COALESCE(MAX(id), 0) AS n FROM emails")["n"]
        self.deliver(*raws)
        self.poll()
        self.work()
        return self.db.fetchall("SELECT * FROM emails WHERE id > ? ORDER BY uid, id", (before,))

    def mail(self, email_id: int) -> dict[str, Any]:
        return self.db.fetchone("SELECT * FROM emails WHERE id = ?", (email_id,))

    def drafts(self, email_id: int) -> list[dict[str, Any]]:
        return self.db.fetchall("SELECT * FROM drafts WHERE email_id = ? ORDER BY version",
                                (email_id,))

    def events(self, email_id: int) -> list[str]:
        return [r["event"] for r in self.db.fetchall(
            "SELECT event FROM audit_log WHERE entity_type = 'email' AND entity_id = ? "
            "ORDER BY id", (str(email_id),))]

    def llm_inputs(self, kind: str = "classify") -> list[str]:
        """The user messages the LLM received for ``kind`` (classify or draft)."""
        out = []
        for r in self.llm.requests:
            if r["kind"] == kind:
                out.append("\n".join(m["content"] for m in r["body"]["messages"]
                                     if m["role"] == "user"))
        return out


@pytest.fixture(scope="module")
def llm():
    """The scripted LLM over HTTP, one per test module (import it beside ``path``)."""
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
def path(settings, mailbox, llm):
    p = RealPath(settings, mailbox, llm)
    yield p
    p.close()


def head(n: str, ctype: str = "text/plain; charset=utf-8", cte: str = "8bit",
         sender: str = "Kunde <kunde@example.org>", subject: str = "Rechnung 4711 doppelt abgebucht",
         extra: str = "") -> bytes:
    """The headers of a test mail (Message-ID ``<n@example.org>``) and the blank line."""
    return (f"From: {sender}\r\nTo: support@example.com\r\nSubject: {subject}\r\n"
            f"Message-ID: <{n}@example.org>\r\nDate: Tue, 03 Nov 2026 08:00:00 +0100\r\n"
            f"MIME-Version: 1.0\r\n{extra}Content-Type: {ctype}\r\n"
            f"Content-Transfer-Encoding: {cte}\r\n\r\n").encode()
