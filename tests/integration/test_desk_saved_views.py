"""Saved views of the review queue per user (real MariaDB, over HTTP too): a name and the
queue's filters, listed above the queue as links that apply them; only the owner lists or
deletes a view; other keys are dropped."""

from __future__ import annotations

import html as htmllib

import pytest

from email_rag.core.errors import BadInputError
from email_rag.review import saved_views
from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}




def _uid(db, name):
    return db.fetchone("SELECT id FROM users WHERE name = %s", (name,))["id"]


def test_a_view_is_kept_per_user_replaced_by_name_and_deleted_by_its_owner(app, db, services):
    anna, bob = _uid(db, "anna"), _uid(db, "bob")
    v = saved_views.save(services, anna, "  Meine  Rechnungen ",
                         "category=billing&view=mine&after=ff-12&evil=1")
    assert v.name == "Meine Rechnungen" and v.query == "category=billing&view=mine"
    assert v.href == "/queue?category=billing&view=mine"
    again = saved_views.save(services, anna, "Meine Rechnungen", "state=stale")
    assert again.id == v.id and again.query == "state=stale"
    assert [x.name for x in saved_views.of_user(services, anna)] == ["Meine Rechnungen"]
    assert saved_views.of_user(services, bob) == []
    assert saved_views.delete(services, bob, v.id) is False
    assert saved_views.delete(services, anna, v.id) is True
    assert saved_views.of_user(services, anna) == []
    with pytest.raises(BadInputError):
        saved_views.save(services, anna, "   ", "state=stale")


def test_an_agent_saves_the_filters_and_the_link_applies_them(client, db, team):
    support, _ = team
    stale = make_draft(db, make_email(db, support, subject="Veraltet"))
    fresh = make_draft(db, make_email(db, support, subject="Frisch"))
    db.execute("UPDATE drafts SET status = 'stale' WHERE id = %s", (stale,))
    anna = client("anna")
    r = anna.post("/queue/views", data={"csrf_token": anna.csrf, "name": "<b>Veraltete</b>",
                                        "query": "state=stale&sort=priority"},
                  follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/queue?sort=priority&state=stale"
    page = anna.get(r.headers["location"]).text
    assert "View “&lt;b&gt;Veraltete&lt;/b&gt;” saved." in page
    assert f'id="draft-{stale}"' in page and f'id="draft-{fresh}"' not in page
    assert 'href="/queue?sort=priority&amp;state=stale"' in page and "<b>Veraltete</b>" not in page
    view_id = db.fetchone("SELECT id FROM saved_views")["id"]
    bob = client("bob")
    assert f'id="saved-view-{view_id}"' not in bob.get("/queue").text
    r = bob.post(f"/queue/views/{view_id}/delete", data={"csrf_token": bob.csrf},
                 follow_redirects=False)
    assert "does not exist" in htmllib.unescape(bob.get("/queue").text)
    assert db.fetchone("SELECT COUNT(*) AS n FROM saved_views")["n"] == 1
    anna.post(f"/queue/views/{view_id}/delete", data={"csrf_token": anna.csrf})
    assert db.fetchone("SELECT COUNT(*) AS n FROM saved_views")["n"] == 0
    r = anna.post("/queue/views", data={"name": "x", "query": ""}, follow_redirects=False)
    assert r.status_code == 403
