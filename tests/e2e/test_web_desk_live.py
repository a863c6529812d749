"""The queue and the draft page refresh themselves (issue 28) in a real headless Chromium
against the real `email-rag web`: a new mail appears in an open queue, the draft page's
"x of N" follows, and the text an agent is typing in the editor stays as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.factories import make_draft, make_email, make_mailbox
from tests.helpers import ROOT
from tests.webutil import PASSWORD, make_user, serve_web

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
expect.set_options(timeout=30_000)  # the web server is a subprocess on a busy machine

OUT = ROOT / "test-output"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (apt-get install chromium)")


@pytest.fixture
def web(env, tmp_path):
    values = {**os.environ, **env, "PYTHONPATH": str(ROOT), "EMAIL_RAG_WEB_SECRET_KEY": "e2e",
              "EMAIL_RAG_LOG_LEVEL": "WARNING", "EMAIL_RAG_WEB_REFRESH_SECONDS": "1"}
    with serve_web(values, tmp_path) as base:
        yield base


@pytest.fixture
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def logged_in(browser, base: str, name: str):
    page = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    page.goto(base + "/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/queue")
    return page


def test_a_new_mail_appears_while_an_agent_types_and_her_text_stays(web, db, browser):
    """GIVEN anna typing a reply on the draft page and bob looking at the queue WHEN a new
    mail's draft arrives THEN bob's queue shows it and counts 2 without a reload, anna's page
    says "1 of 2 waiting", and her editor still holds exactly what she typed, with the
    cursor where she left it; she types on without losing a character."""
    make_user(db, "anna")
    make_user(db, "bob")
    mb = make_mailbox(db, "support")
    first = make_draft(db, make_email(db, mb, subject="Drucker streikt"),
                       body="Hallo,\n\nbitte neu starten.\n")
    anna, bob = logged_in(browser, web, "anna"), logged_in(browser, web, "bob")
    anna.goto(f"{web}/drafts/{first}")
    expect(anna.locator("#position")).to_contain_text("1 of 1")
    bob.goto(f"{web}/queue")
    expect(bob.locator("#queue-total")).to_have_text("1")
    anna.click("#body")
    anna.keyboard.press("Control+End")
    anna.keyboard.type("PS: Ich melde mich morgen")
    typed = anna.input_value("#body")

    second = make_draft(db, make_email(db, mb, subject="Rechnung 4711 doppelt"))
    expect(bob.locator(f"#draft-{second}")).to_be_visible()
    expect(bob.locator("#queue-total")).to_have_text("2")
    expect(anna.locator("#position")).to_contain_text("1 of 2")
    assert anna.input_value("#body") == typed
    assert anna.evaluate("document.activeElement.id") == "body"
    anna.keyboard.type(" wieder.")
    assert anna.input_value("#body") == typed + " wieder."
    bob.screenshot(path=str(OUT / "desk-queue-live.png"))


@pytest.fixture
def web_with_hours(env, tmp_path):
    boxes = [{"name": "support", "username": "support@example.com", "service_level": {
        "time_zone": "Europe/Berlin", "days": "mon-fri", "hours": "08:00-17:00",
        "first_response_hours": 4}}]
    values = {**os.environ, **env, "PYTHONPATH": str(ROOT), "EMAIL_RAG_WEB_SECRET_KEY": "e2e",
              "EMAIL_RAG_LOG_LEVEL": "WARNING", "EMAIL_RAG_MAILBOXES": json.dumps(boxes)}
    with serve_web(values, tmp_path) as base:
        yield base


def test_due_times_in_the_queue_and_the_reports_page_in_english_and_german(
        web_with_hours, db, browser):
    """GIVEN support's business hours, one mail long overdue and one just in, and decisions
    of anna (approved unchanged, sent) and bob (rejected) WHEN anna sorts the queue by due
    time and root opens the reports, in English and then in German THEN the overdue mail
    comes first, marked, the new one shows its due time, and the report names both agents."""
    web = web_with_hours
    make_user(db, "anna")
    make_user(db, "bob")
    make_user(db, "root", "admin")
    mb = make_mailbox(db, "support")
    old = make_draft(db, make_email(db, mb, subject="Rechnung doppelt"))
    db.execute("UPDATE emails e JOIN drafts d ON d.email_id = e.id SET e.received_at ="
               " UTC_TIMESTAMP() - INTERVAL 3 DAY, e.sent_at = UTC_TIMESTAMP() - INTERVAL 3 DAY"
               " WHERE d.id = %s", (old,))
    new = make_draft(db, make_email(db, mb, subject="Lieferung fehlt"))
    for n, (outcome, agent) in enumerate((("unchanged", "user:anna"), ("rejected", "user:bob"))):
        decided = make_draft(db, make_email(db, mb, subject=f"Frage {n}"), status="sent")
        db.execute("INSERT INTO draft_reviews (draft_id, email_id, mailbox_id, outcome, week,"
                   " agent) SELECT d.id, d.email_id, %s, %s, DATE(UTC_TIMESTAMP()) -"
                   " INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY, %s FROM drafts d WHERE d.id = %s",
                   (mb, outcome, agent, decided))
    anna = logged_in(browser, web, "anna")
    anna.goto(f"{web}/queue?sort=due")
    expect(anna.locator(f"#draft-{old} .due.overdue")).to_be_visible()
    expect(anna.locator(f"#draft-{new} .due")).to_be_visible()
    rows = anna.locator("table.queue tbody tr").evaluate_all("rs => rs.map(r => r.id)")
    assert rows == [f"draft-{old}", f"draft-{new}"]
    anna.screenshot(path=str(OUT / "desk-queue-due.png"))
    root = logged_in(browser, web, "root")
    root.goto(f"{web}/reports")
    expect(root.locator("table.reports")).to_contain_text("anna")
    expect(root.locator("table.reports")).to_contain_text("bob")
    root.screenshot(path=str(OUT / "desk-reports.png"))
    root.goto(f"{web}/me")
    root.select_option("select[name=ui_language]", "de")
    root.click("main button[type=submit]")
    root.goto(f"{web}/reports")
    expect(root.locator("h1")).to_have_text("Berichte")
    root.screenshot(path=str(OUT / "desk-reports-de.png"))
