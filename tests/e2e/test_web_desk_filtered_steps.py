"""Stepping through a filtered queue in a real headless Chromium against the real
`email-rag web` process: an agent filters the queue by state, owner and days, opens the
first draft, and Next, Previous, the j key and approving keep her inside the filtered set."""

from __future__ import annotations

from datetime import datetime

from tests.e2e.test_web_desk import (  # noqa: F401 - fixtures
    browser,
    expect,
    needs_chromium,
    open_as,
    web,
    web_env,
)
from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import make_user

pytestmark = needs_chromium


def filtered_data(db) -> dict[str, int]:
    """Waiting drafts of support, one a day; state "waiting", owner bob and 10-20 November
    keep in11, in15 and in19; between them stand a stale one of bob's and one of nobody's,
    and bob's from before and after the days."""
    support = make_mailbox(db, "support")
    bob = db.fetchone("SELECT id FROM users WHERE name = 'bob'")["id"]
    made = {}
    for name, day, owned, status in (("before", 5, True, "pending_review"),
                                     ("in11", 11, True, "pending_review"),
                                     ("stale13", 13, True, "stale"),
                                     ("in15", 15, True, "pending_review"),
                                     ("nobody17", 17, False, "pending_review"),
                                     ("in19", 19, True, "pending_review"),
                                     ("after", 25, True, "pending_review")):
        email_id = make_email(db, support, subject=f"Frage {name}",
                              received_at=datetime(2026, 11, day, 12),
                              sent_at=datetime(2026, 11, day, 11))
        made[name] = make_draft(db, email_id, status=status)
        if owned:
            db.execute("INSERT INTO mail_assignments (email_id, user_id, assigned_by)"
                       " VALUES (%s, %s, 'user:root')", (email_id, bob))
    return made


def test_next_previous_and_approve_stay_in_the_filtered_queue(web, db, browser):
    """GIVEN the queue with drafts outside a filter between the filter's three WHEN anna
    filters by state "pending review", owner bob and 10-20 November, opens the first draft
    and presses Next THEN the filter's second opens ("2 of 3"); Previous and j move inside the
    set; WHEN she approves the second THEN the filter's third opens, "2 of 2"."""
    make_user(db, "anna")
    make_user(db, "bob")
    d = filtered_data(db)
    page = open_as(browser, web, "anna")
    page.select_option("#filter-state", "pending_review")
    page.select_option("#filter-owner", "bob")
    page.fill("#filter-since", "2026-11-10")
    page.fill("#filter-until", "2026-11-20")
    page.click("form.filters button[type=submit]")
    rows = page.locator("table.queue tbody tr")
    expect(rows).to_have_count(3)
    assert rows.evaluate_all("rs => rs.map(r => r.id)") == [
        f"draft-{d[n]}" for n in ("in11", "in15", "in19")]

    page.click(f"#draft-{d['in11']} td.subject a")
    page.wait_for_url(f"**/drafts/{d['in11']}?*")
    expect(page.locator("#position")).to_have_text("1 of 3 waiting")
    page.click("#skip")
    page.wait_for_url(f"**/drafts/{d['in15']}?*")
    expect(page.locator("#position")).to_have_text("2 of 3 waiting")
    page.click("#prev")
    page.wait_for_url(f"**/drafts/{d['in11']}?*")
    page.keyboard.press("j")
    page.wait_for_url(f"**/drafts/{d['in15']}?*")
    expect(page.locator("#position")).to_have_text("2 of 3 waiting")

    page.click("#approve")
    page.wait_for_url(f"**/drafts/{d['in19']}?*")
    expect(page.locator("#position")).to_have_text("2 of 2 waiting")
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s",
                       (d["in15"],))["status"] == "approved"
    page.click(".pager a.back")
    page.wait_for_url("**/queue?*")
    expect(page.locator("#filter-owner")).to_have_value("bob")
    expect(page.locator("table.queue tbody tr")).to_have_count(2)
