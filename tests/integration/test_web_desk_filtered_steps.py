"""Stepping through the drafts of a filtered queue over HTTP: the draft page's "x of N",
Previous / Next and the draft after an approval stay in the set the queue showed (state,
owner, waiting-since days), because every route reads the queue's filters with one parser
and the draft page carries all of them on."""

from __future__ import annotations

import html as htmllib
import re
from datetime import date, datetime, timedelta

import pytest

from email_rag.review import assignment
from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}
FILTERS = {"state": "pending_review", "owner": "bob", "since": "2026-11-10",
           "until": "2026-11-20"}


@pytest.fixture
def drafts(app, db, team, services) -> dict[str, int]:
    """Waiting drafts of support, one a day; the filter above keeps in11, in15 and in19 (bob's,
    pending, 10-20 November) and leaves out, between them, a stale one of bob's, one nobody
    owns, and bob's from before and after the days."""
    support, _ = team
    made = {}
    for name, day, owner, status in (("before", 5, "bob", "pending_review"),
                                     ("in11", 11, "bob", "pending_review"),
                                     ("stale13", 13, "bob", "stale"),
                                     ("in15", 15, "bob", "pending_review"),
                                     ("nobody17", 17, None, "pending_review"),
                                     ("in19", 19, "bob", "pending_review"),
                                     ("after", 25, "bob", "pending_review")):
        email_id = make_email(db, support, subject=f"Frage {name}",
                              received_at=datetime(2026, 11, day, 12),
                              sent_at=datetime(2026, 11, day, 11))
        made[name] = make_draft(db, email_id, status=status)
        if owner:
            assignment.assign(services, email_id, support, owner, "user:root")
    return made


def _href(page: str, element_id: str) -> str:
    m = re.search(rf'id="{element_id}" href="([^"]+)"', page)
    assert m, f"no link #{element_id} on the page"
    return htmllib.unescape(m.group(1))


def _form(page: str, form_id: str) -> dict[str, str]:
    """The hidden fields of one form of the page, as the browser would send them."""
    form = re.search(rf'<form [^>]*id="{form_id}".*?</form>', page, re.S)
    assert form, f"no form #{form_id}"
    return {m.group(1): htmllib.unescape(m.group(2)) for m in re.finditer(
        r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(0))}


def test_next_and_previous_stay_in_the_queue_filtered_by_state_owner_and_days(client, drafts):
    """GIVEN the queue filtered by state "waiting", owner bob and 10-20 November, with
    drafts outside the filter between its three WHEN anna opens the first from the queue and
    presses Next THEN she gets the filter's second ("2 of 3"), then its third, whose Next wraps
    to its first; Previous goes back inside the set, and "← queue" returns to the filtered
    queue."""
    anna = client("anna")
    queue = anna.get("/queue", params=FILTERS).text
    assert re.findall(r'<tr id="draft-(\d+)">', queue) == [
        str(drafts[n]) for n in ("in11", "in15", "in19")]
    link = htmllib.unescape(re.search(
        rf'href="(/drafts/{drafts["in11"]}\?[^"]+)"', queue).group(1))
    first = anna.get(link).text
    assert "1 of 3 waiting" in first
    second_link = _href(first, "skip")
    assert second_link.startswith(f"/drafts/{drafts['in15']}?")
    second = anna.get(second_link).text
    assert "2 of 3 waiting" in second
    assert _href(second, "prev").startswith(f"/drafts/{drafts['in11']}?")
    third = anna.get(_href(second, "skip")).text
    assert "3 of 3 waiting" in third
    assert _href(third, "skip").startswith(f"/drafts/{drafts['in11']}?")
    back = re.search(r'class="back" href="([^"]+)"', third).group(1)
    assert re.findall(r'<tr id="draft-(\d+)">', anna.get(htmllib.unescape(back)).text) == [
        str(drafts[n]) for n in ("in11", "in15", "in19")]


def test_after_approving_the_next_draft_is_the_next_of_the_filtered_queue(client, db, drafts):
    """GIVEN anna on the filtered queue's second draft WHEN she approves it with the page's
    form THEN she lands on the filter's third draft (not the unowned one after it in the
    whole queue), which now stands "2 of 2", and the filters are still in its links."""
    anna = client("anna")
    page = anna.get(f"/drafts/{drafts['in15']}", params=FILTERS).text
    assert "2 of 3 waiting" in page
    form = _form(page, "approve-form")
    assert {k: form.get(k) for k in FILTERS} == FILTERS
    r = anna.post(f"/drafts/{drafts['in15']}/approve", data={**form, "body": "Hallo"},
                  follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"].startswith(f"/drafts/{drafts['in19']}?")
    landed = anna.get(r.headers["location"]).text
    assert "2 of 2 waiting" in landed
    assert _form(landed, "approve-form")["owner"] == "bob"
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s",
                       (drafts["in15"],))["status"] == "approved"


def test_every_draft_form_carries_every_filter_of_the_queue(client, drafts):
    """The draft page's forms (approve, reject, regenerate, assign, correction) send every
    filter of the queue back, so whatever the agent does next stays in the filtered set."""
    anna = client("anna")
    params = {**FILTERS, "mailbox": "support", "q": "Frage", "sort": "priority",
              "view": "mine"}
    page = anna.get(f"/drafts/{drafts['in15']}", params=params).text
    for form in re.findall(r'<form method="post" action="/drafts/\d+/[a-z]+"[^>]*>.*?</form>',
                           page, re.S):
        fields = {m.group(1): htmllib.unescape(m.group(2)) for m in re.finditer(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form)}
        assert {k: fields.get(k, "") for k in params} == params, form


def test_a_note_comes_back_to_the_draft_and_a_snooze_to_the_queue_in_the_same_filter(
        client, db, drafts):
    """GIVEN anna on a draft of the filtered queue WHEN she adds a note THEN she is back on
    the draft with the filters kept (its Next still the filter's); WHEN she snoozes the draft
    THEN she is back on the queue with the same filters. A page to come back to is only a
    draft's or mail's own path with the queue's filters: nothing else of it is kept."""
    anna = client("anna")
    page = anna.get(f"/drafts/{drafts['in15']}", params=FILTERS).text
    note = re.search(r'<form method="post" action="(/mails/\d+)/notes".*?</form>', page, re.S)
    back = re.search(r'name="back" value="([^"]+)"', note.group(0)).group(1)
    r = anna.post(f"{note.group(1)}/notes", data={"csrf_token": anna.csrf, "body": "Bitte DHL",
                                                   "back": htmllib.unescape(back)},
                  follow_redirects=False)
    target = r.headers["location"]
    assert target.startswith(f"/drafts/{drafts['in15']}?") and target.endswith("#notes")
    assert "2 of 3 waiting" in anna.get(target.split("#")[0]).text
    r = anna.post(f"{note.group(1)}/snooze", follow_redirects=False, data={
        "csrf_token": anna.csrf, "until": (date.today() + timedelta(days=3)).isoformat(),
        "back": htmllib.unescape(back)})
    assert r.headers["location"].startswith("/queue?") and "owner=bob" in r.headers["location"]
    r = anna.post(f"{note.group(1)}/notes", follow_redirects=False, data={
        "csrf_token": anna.csrf, "body": "x",
        "back": f"/drafts/{drafts['in15']}?owner=bob&next=//evil.example"})
    assert r.headers["location"] == f"/drafts/{drafts['in15']}?owner=bob#notes"


def test_a_filter_that_keeps_nothing_says_so(client, drafts):
    """An empty queue under the state, owner or day filters says it is the filters, not
    that nothing waits."""
    page = client("anna").get("/queue", params={"owner": "carl"}).text
    assert "Nothing to review with these filters." in page
