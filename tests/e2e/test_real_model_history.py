"""The team's history against the REAL local model (issue 27): the real poller, the job
runner with the real pipeline and llama-server. Slow (a CPU model); run in CI.

The mailbox starts with twelve labelled examples as staff approvals store them (source
approval: a person confirmed every label; the history import's solved cases only know
needs_reply); the model classifies what the history does not decide.
"""

from __future__ import annotations

import json

import pytest

from email_rag.db import examples
from email_rag.ingest.poller import Poller
from email_rag.llm.local_server import LocalLLMServer
from email_rag.review import desk
from email_rag.runtime.job_runner import JobRunner
from tests.factories import make_email, make_mailbox
from tests.helpers import run_job
from tests.integration.ingest_helpers import services_for
from tests.integration.realpath import head
from tests.integration.test_classify_history import BILLING, NEWS, ORDER, VOUCHER

pytestmark = [pytest.mark.slow, pytest.mark.real_model]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    with LocalLLMServer(log=tmp_path_factory.mktemp("llm") / "llama-server.log") as srv:
        yield srv


class Worker:
    def __init__(self, settings, mailbox, model):
        self.mailbox = mailbox
        self.svc = services_for(settings, mailbox, llm_base_url=model.url,
                                llm_model=model.model_id)
        self.db = self.svc.db
        self.runner = JobRunner(self.svc, "w-history", vector_owner=True)

    def seed(self) -> None:
        mb = make_mailbox(self.db, self.mailbox.config.name)
        labelled = ([(m, "billing", "normal", 1) for m in BILLING]
                    + [(m, "order", "normal", 1) for m in ORDER]
                    + [(m, "notification", "low", 0) for m in NEWS])
        for (subject, body), category, priority, needs_reply in labelled:
            email = make_email(self.db, mb, status="sent", subject=subject, body=body,
                               category=category, priority=priority, needs_reply=needs_reply)
            with self.db.transaction() as cur:
                assert examples.record(cur, self.svc, email, "approval")

    def one(self, n: str, subject: str, body: str) -> dict:
        self.mailbox.append(head(n, subject=subject) + body.encode())
        Poller(self.svc).poll()
        for job in self.db.fetchall("SELECT id FROM jobs WHERE kind = 'process_email' AND "
                                    "state IN ('queued', 'failed') ORDER BY id"):
            run_job(self.runner, job["id"])
        return self.db.fetchone("SELECT * FROM emails WHERE message_id = ?",
                                (f"<{n}@example.org>",))

    def classify_calls(self, email_id: int) -> list[dict]:
        rows = self.db.fetchall("SELECT detail FROM audit_log WHERE entity_id = ? AND "
                                "event = 'llm_attempt'", (str(email_id),))
        return [d for d in (json.loads(r["detail"]) for r in rows) if d["task"] == "classify"]


@pytest.fixture
def worker(settings, mailbox, model):
    w = Worker(settings, mailbox, model)
    yield w
    w.svc.close()


def test_history_decides_without_the_model_and_a_correction_counts_at_once(worker):
    """GIVEN a mailbox with the team's labelled examples and the real model WHEN a mail
    like the billing examples arrives THEN no classification call is made (audited
    source=history); WHEN staff correct a mail's category THEN the next similar mail gets
    the corrected category, with no retraining command."""
    worker.seed()
    billing = worker.one("rb1", "Rechnung 9004 doppelt abgebucht", "Guten Tag, die Rechnung "
                         "9004 wurde zweimal abgebucht. Bitte erstatten Sie den doppelten Betrag.")
    assert worker.classify_calls(billing["id"]) == []
    assert billing["category"] == "billing" and billing["language"] == "de"
    assert json.loads(billing["classification_sources"])["category"]["source"] == "history"

    before = worker.one("rv1", VOUCHER[0], VOUCHER[1] + " Bitte prüfen.")
    # the team's category is one the model did not give (seen: the model said account)
    team_category = next(c for c in ("account", "other", "feedback") if c != before["category"])
    [draft] = worker.db.fetchall("SELECT id FROM drafts WHERE email_id = ?", (before["id"],))
    desk.correct_classification(worker.svc, draft["id"], "anna", team_category,
                                before["language"], before["priority"])
    after = worker.one("rv2", VOUCHER[0], VOUCHER[1] + " Bitte prüfen Sie das.")
    assert after["category"] == team_category, after["classification_sources"]
    assert json.loads(after["classification_sources"])["category"]["source"] == "history"
