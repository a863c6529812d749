"""Bulk actions on the queue over HTTP: the selection form, one message per outcome (done,
unchanged, refused with the reason), a refused item hides nothing, CSRF, and staff of
another mailbox act on nothing of it."""

from __future__ import annotations

import html as htmllib

import pytest

from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}


@pytest.fixture
def drafts(db, team):
    support, sales = team
    ours = [make_draft(db, make_email(db, support, subject=f"Frage {i}")) for i in range(3)]
    return {"ours": ours, "sales": make_draft(db, make_email(db, sales, subject="Sales"))}


def _bulk(c, **data):
    return c.post("/queue/bulk", data={"csrf_token": c.csrf, **data}, follow_redirects=False)


def test_the_queue_offers_a_selection_and_a_bulk_reject_reports_each_draft(client, db, drafts):
    """GIVEN three support drafts, the second approved meanwhile, and a sales draft WHEN
    anna rejects the four she selected (the sales id typed in by hand) THEN she is back on
    the queue and told: rejected #1, #3; not done #2 (approved) and the sales one (does not
    exist); the sales draft is untouched."""
    a, b, c = drafts["ours"]
    anna = client("anna")
    queue = anna.get("/queue").text
    assert 'id="bulk-form"' in queue and f'name="ids" value="{a}" form="bulk-form"' in queue
    assert '<option value="bob">bob</option>' in queue and ">carl<" not in queue
    db.execute("UPDATE drafts SET status = 'approved' WHERE id = %s", (b,))
    r = anna.post("/queue/bulk", data={"csrf_token": anna.csrf, "action": "reject",
                                       "reason": "Doppelt", "back": "/queue?sort=priority",
                                       "ids": [a, b, c, drafts["sales"]]},
                  follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/queue?sort=priority"
    page = htmllib.unescape(anna.get(r.headers["location"]).text)
    assert f"Rejected: #{a}, #{c}." in page
    assert f"#{b}: draft {b} is approved" in page
    assert f"#{drafts['sales']}: draft {drafts['sales']} does not exist" in page
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (drafts["sales"],))["status"] \
        == "pending_review"
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (a,))["status"] == "rejected"


def test_bulk_assign_and_close_without_a_reply(client, db, drafts):
    a, b, c = drafts["ours"]
    anna = client("anna")
    _bulk(anna, action="assign", to="bob", ids=[a, b])
    page = htmllib.unescape(anna.get("/queue", params={"view": "unassigned"}).text)
    assert f"Assigned: #{a}, #{b}." in page
    assert f'id="draft-{c}"' in page and f'id="draft-{a}"' not in page
    _bulk(anna, action="no_reply", ids=[c])
    page = htmllib.unescape(anna.get("/queue").text)
    assert f"Closed without a reply: #{c}." in page and f'id="draft-{c}"' not in page
    assert db.fetchone("SELECT e.status FROM emails e JOIN drafts d ON d.email_id = e.id "
                       "WHERE d.id = %s", (c,))["status"] == "no_reply"


def test_a_reject_without_reason_does_nothing_and_says_so(client, db, drafts):
    anna = client("anna")
    _bulk(anna, action="reject", reason="", ids=drafts["ours"])
    page = htmllib.unescape(anna.get("/queue").text)
    assert "Nothing was done: a reason is required to reject" in page
    assert {r["status"] for r in db.fetchall("SELECT status FROM drafts")} == {"pending_review"}


def test_another_mailboxs_staff_change_nothing_and_the_form_needs_its_token(client, db, drafts):
    carl = client("carl")
    _bulk(carl, action="no_reply", ids=drafts["ours"])
    page = htmllib.unescape(carl.get("/queue").text)
    assert "Not done:" in page and "does not exist" in page
    assert {r["status"] for r in db.fetchall("SELECT status FROM emails")} == {"draft_ready"}
    r = carl.post("/queue/bulk", data={"action": "no_reply", "ids": [drafts["sales"]]},
                  follow_redirects=False)
    assert r.status_code == 403
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (drafts["sales"],))["status"] \
        == "pending_review"
