"""Who owns a mail on the desk (issue 28, team work): self-assign on open, assign to a
colleague, unassign, the queue's views (mine, unassigned, all) and the collision warning
from the moment another agent opened the draft - over HTTP against the real MariaDB."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}


@pytest.fixture
def desk(db, team):
    support, sales = team
    first = make_email(db, support, subject="Rechnung doppelt")
    second = make_email(db, support, subject="Lieferung fehlt")
    assert sales
    return {"d1": make_draft(db, first), "d2": make_draft(db, second), "m1": first, "m2": second}


def text(page: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def queue_ids(c, view: str) -> list[int]:
    page = c.get(f"/queue?view={view}").text
    return sorted(int(i) for i in re.findall(r'<tr id="draft-(\d+)"', page))


def audit(db, email_id: int) -> list[tuple[str, str, dict]]:
    rows = db.fetchall(
        "SELECT actor, event, detail FROM audit_log WHERE entity_type = 'email'"
        " AND entity_id = %s AND event IN ('assigned', 'unassigned') ORDER BY id",
        (str(email_id),),
    )
    return [(r["actor"], r["event"], json.loads(r["detail"] or "{}")) for r in rows]


def test_opening_a_draft_assigns_it_and_a_second_agent_is_warned_at_once(client, db, desk):
    """GIVEN two unassigned drafts WHEN anna opens the first THEN it is hers (audited under
    user:anna); WHEN bob opens it before anna typed anything THEN he is warned that anna has
    it open and sees it is assigned to anna, and it stays hers; anna's queue marks the draft
    "open by bob"; the views: anna's "mine" is
    that draft, "unassigned" is the other one, "all" both."""
    anna, bob = client("anna"), client("bob")
    page = text(anna.get(f"/drafts/{desk['d1']}").text)
    assert "Assigned to anna (you)" in page and "has this draft open" not in page
    assert audit(db, desk["m1"]) == [
        ("user:anna", "assigned", {"to": "user:anna", "how": "opened"})
    ]
    page = text(bob.get(f"/drafts/{desk['d1']}").text)
    assert "anna has this draft open as well" in page
    assert "Assigned to anna" in page and "(you)" not in page
    assert len(audit(db, desk["m1"])) == 1
    assert "bob has this draft open as well" in text(anna.get(f"/drafts/{desk['d1']}").text)
    queue = anna.get("/queue").text
    assert re.search(rf'<tr id="draft-{desk["d1"]}">.*?open by bob', queue, re.S)
    assert "open by anna" not in queue  # her own page is no collision
    assert queue_ids(anna, "mine") == [desk["d1"]]
    assert queue_ids(bob, "mine") == []
    assert queue_ids(bob, "unassigned") == [desk["d2"]]
    assert queue_ids(bob, "all") == [desk["d1"], desk["d2"]]
    assert re.search(
        rf'<tr id="draft-{desk["d1"]}">.*?<td class="owner">anna</td>',
        anna.get("/queue").text,
        re.S,
    )


def test_assign_to_a_colleague_refuse_an_outsider_and_unassign(client, db, desk):
    """GIVEN anna owns a mail WHEN bob gives it to himself THEN it is bob's (audited under
    user:bob, from anna to bob); giving it to carl (who cannot see the mailbox) changes
    nothing and says so; unassigning leaves it to nobody (audited) and goes back to the queue
    (opening the draft again would take it)."""
    anna, bob = client("anna"), client("bob")
    anna.get(f"/drafts/{desk['d1']}")
    r = bob.post(f"/drafts/{desk['d1']}/assign", data={"csrf_token": bob.csrf, "to": "bob"})
    assert r.status_code == 200 and "is now assigned to bob" in text(r.text)
    assert "Assigned to bob (you)" in text(r.text)
    r = bob.post(f"/drafts/{desk['d1']}/assign", data={"csrf_token": bob.csrf, "to": "carl"})
    assert "Not assigned: that user cannot work on this mailbox" in text(r.text)
    assert queue_ids(bob, "mine") == [desk["d1"]]
    r = anna.post(f"/drafts/{desk['d1']}/assign", data={"csrf_token": anna.csrf, "to": ""})
    assert "is unassigned now" in text(r.text) and str(r.url).endswith("/queue")
    assert queue_ids(anna, "unassigned") == [desk["d1"], desk["d2"]]
    assert audit(db, desk["m1"]) == [
        ("user:anna", "assigned", {"to": "user:anna", "how": "opened"}),
        ("user:bob", "assigned", {"from": "user:anna", "to": "user:bob"}),
        ("user:anna", "unassigned", {"from": "user:bob", "to": None}),
    ]
    carl = client("carl")
    assert (
        carl.post(
            f"/drafts/{desk['d1']}/assign", data={"csrf_token": carl.csrf, "to": "carl"}
        ).status_code
        == 404
    )
