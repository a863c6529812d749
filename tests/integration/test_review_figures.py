"""The review figures (issue 27): how much staff changed the drafts, how often they
rejected or regenerated them and corrected a classification, per mailbox, category and
week, on the admin status page and in /metrics.

Mails go through the real worker pipeline (classify, index, retrieve, draft; scripted LLM
over HTTP) into MariaDB; staff act through the web desk; the figures are read from the
status page's HTML and the /metrics text, as an admin and Prometheus see them.
"""

from __future__ import annotations

import html as htmllib
import re
from datetime import UTC, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rapidfuzz.distance import Levenshtein

from email_rag.runtime.job_runner import JobRunner
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_job
from tests.webutil import browsers, web_app


@pytest.fixture
def client(settings, db):
    app = web_app(settings, db, web_metrics_cache_seconds=0)
    with browsers(app, log_in=True) as new:
        yield new


def drafted(svc, db, mailbox_id: int, subject: str, body: str) -> tuple[int, dict]:
    """A mail through the real pipeline: classified and drafted, its draft pending."""
    email_id = make_email(db, mailbox_id, subject=subject, body=body)
    assert run_job(JobRunner(svc, "w1"), make_job(db, email_id)) == "done"
    draft = db.fetchone(
        "SELECT * FROM drafts WHERE email_id = %s AND status = 'pending_review'", (email_id,)
    )
    assert draft is not None
    return email_id, draft


def post(c, path: str, **data: str) -> None:
    r = c.post(path, data={"csrf_token": c.csrf, **data}, follow_redirects=False)
    assert r.status_code == 303, r.text[:500]


def review_rows(page: str) -> dict[tuple[str, str], list[str]]:
    """The review figures table of the status page: (mailbox, category) -> the row's cells
    as shown (this week's rows only)."""
    table = re.search(r'<table class="list reviews">(.*?)</table>', page, re.S)
    assert table, "no review figures on the status page"
    week = "{}-W{:02d}".format(*datetime.now(UTC).isocalendar()[:2])
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S):
        cells = [
            " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", td)).split())
            for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        ]
        if cells and cells[0] == week:
            rows[(cells[1], cells[2])] = cells[3:]
    return rows


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def test_figures_after_approvals_rejection_regeneration_and_a_correction(svc, db, client):
    """GIVEN five mails classified and drafted by the real pipeline WHEN staff approve one
    draft unchanged, one after a light edit, one after rewriting it (its classification
    corrected first), reject one and regenerate one THEN the admin status page and /metrics
    show exactly these decisions, the edit distances, and the correction, per mailbox and
    category; staff do not see the figures."""
    mb = make_mailbox(db)
    _, unchanged = drafted(
        svc,
        db,
        mb,
        "Invoice 4411 charged twice",
        "Hello, invoice 4411 was charged twice. Please refund one payment.",
    )
    _, light = drafted(
        svc, db, mb, "Refund for invoice 77", "Hi, I am still waiting for the refund of invoice 77."
    )
    _, rewrite = drafted(
        svc, db, mb, "Cannot log in", "Hello, since this morning I cannot log in to my account."
    )
    _, reject = drafted(
        svc, db, mb, "Error 500 when saving", "Hi, saving a document gives error 500."
    )
    _, regen = drafted(
        svc, db, mb, "App crash on start", "Hello, the app shows a crash on start since the update."
    )
    cats = {r["category"] for r in db.fetchall("SELECT category FROM emails")}
    assert cats == {"billing", "technical"}  # the scripted model's classification

    c = client("root")
    # a browser sends the text of an unchanged textarea with CRLF line endings
    post(
        c, f"/drafts/{unchanged['id']}/approve", body=unchanged["body_draft"].replace("\n", "\r\n")
    )
    light_text = light["body_draft"].rstrip() + "\nAnna"  # 5 characters added
    post(c, f"/drafts/{light['id']}/approve", body=light_text)
    post(
        c,
        f"/drafts/{rewrite['id']}/classification",
        category_new="account",
        language_new="en",
        priority_new="normal",
    )
    rewritten_text = (
        "Hi Sam,\n\nyour session was blocked after three wrong passwords; I "
        "unblocked it, please log in again.\n\nBest,\nAnna"
    )
    post(c, f"/drafts/{rewrite['id']}/approve", body=rewritten_text)
    post(c, f"/drafts/{reject['id']}/reject", reason="we answer this by phone")
    post(c, f"/drafts/{regen['id']}/regenerate", note="mention the update")

    base = light["body_draft"].strip()
    d_light = round(5 / (len(base) + 5), 4)  # five inserted characters
    d_rewrite = round(
        Levenshtein.normalized_distance(rewrite["body_draft"].strip(), rewritten_text), 4
    )
    assert 0 < d_light <= 0.3 < d_rewrite

    rows = review_rows(c.get("/status").text)
    # decided, unchanged, light edit, rewritten, mean distance, rejected, regenerated,
    # classified, corrected
    assert rows == {
        ("support", "account"): [
            "1",
            "0 (0 %)",
            "0 (0 %)",
            "1 (100 %)",
            f"{round(d_rewrite, 2):.2f}",
            "0 (0 %)",
            "0 (0 %)",
            "0",
            "0",
        ],
        ("support", "billing"): [
            "2",
            "1 (50 %)",
            "1 (50 %)",
            "0 (0 %)",
            f"{round(d_light / 2, 2):.2f}",
            "0 (0 %)",
            "0 (0 %)",
            "2",
            "0 (0 %)",
        ],
        ("support", "technical"): [
            "2",
            "0 (0 %)",
            "0 (0 %)",
            "0 (0 %)",
            "–",
            "1 (50 %)",
            "1 (50 %)",
            "3",
            "1 (33 %)",
        ],
    }
    assert "Review figures" not in client("anna").get("/status").text  # admins only

    got = samples(client().get("/metrics").text)

    def drafts_total(category: str, outcome: str) -> float:
        return got[
            (
                "email_rag_review_drafts_total",
                (("category", category), ("mailbox", "support"), ("outcome", outcome)),
            )
        ]

    outcomes = ("unchanged", "light_edit", "rewritten", "rejected", "regenerated")
    assert [drafts_total("billing", o) for o in outcomes] == [1, 1, 0, 0, 0]
    assert [drafts_total("account", o) for o in outcomes] == [0, 0, 1, 0, 0]
    assert [drafts_total("technical", o) for o in outcomes] == [0, 0, 0, 1, 1]
    for category, total, count in (
        ("billing", d_light, 2),
        ("account", d_rewrite, 1),
        ("technical", 0, 0),
    ):
        labels = (("category", category), ("mailbox", "support"))
        assert got[("email_rag_review_edit_distance_sum", labels)] == pytest.approx(total)
        assert got[("email_rag_review_edit_distance_count", labels)] == count
    for category, classified, corrected in (("billing", 2, 0), ("technical", 3, 1)):
        labels = (("category", category), ("mailbox", "support"))
        assert got[("email_rag_classified_mails_total", labels)] == classified
        assert got[("email_rag_classification_corrections_total", labels)] == corrected
    assert not [
        k
        for k in got
        if k[0] == "email_rag_classified_mails_total" and ("category", "account") in k[1]
    ]  # no mail was classified as account
