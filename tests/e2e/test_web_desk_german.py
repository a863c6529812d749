"""The review desk in German, in a real headless Chromium against the real `email-rag web`
process: agents switch their language on their preferences page, then work the queue (views,
ownership, a saved view), a draft (a saved reply and the signature inserted, an internal note
mentioning a colleague), the customer page, and an admin reads the reports. No text of the UI
is left in English on these pages; the German screenshots for docs/web.md are written here
(``test-output/*-de.png``, beside the English ones of the other Chromium tests)."""

from __future__ import annotations

import re

from tests.e2e.test_web_desk import (  # noqa: F401 - fixtures
    OUT,
    browser,
    desk_data,
    expect,
    needs_chromium,
    web,
    web_env,
)
from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import PASSWORD, english_in, make_user

pytestmark = needs_chromium

# what a page shows besides its text: placeholders, tooltips, labels for screen readers
SHOWN_ATTRIBUTES = """() => [document.body.innerText].concat(Array.from(
  document.querySelectorAll('[placeholder], [title], [aria-label]'),
  e => [e.getAttribute('placeholder'), e.getAttribute('title'), e.getAttribute('aria-label')]
    .filter(Boolean).join(' | '))).join('\\n')"""


def english_left(page, data_words: tuple[str, ...] = ()) -> list[str]:
    """The UI's English texts found on the page as shown (text, placeholders, tooltips);
    ``data_words`` are the page's data that happen to spell such a word (a user's name)."""
    return english_in(page.evaluate(SHOWN_ATTRIBUTES), data_words)


def open_in_german(browser, base: str, name: str, height: int = 1000):
    """A browser context with a German locale (its Accept-Language), logged in as ``name``:
    the desk is German at once (it follows the browser until the user picks a language), and
    the user picks German on the preferences page (it stays so in any browser)."""
    page = browser.new_context(viewport={"width": 1440, "height": height}, locale="de-DE",
                               timezone_id="Europe/Berlin").new_page()
    page.set_default_timeout(30_000)  # the web server is a subprocess on a busy machine
    page.goto(base + "/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/queue")
    expect(page.locator("h1")).to_contain_text("Prüfliste")  # the browser's language
    page.goto(f"{base}/me")
    page.select_option("select[name=ui_language]", "de")
    page.click("main button[type=submit]")
    page.goto(f"{base}/queue")
    expect(page.locator("h1")).to_contain_text("Prüfliste")
    return page


MAIL_WORDS = ("customer", "down")  # alice@customer.example, "Server komplett down"


def test_the_queue_with_views_and_ownership_in_german(web, db, browser):
    """GIVEN anna and bob in German WHEN anna opens the urgent draft (it becomes hers) while
    bob has it open, saves a view and opens "Meine" THEN the queue lists it with its owner
    and bob's open badge, and nothing of the UI is in English."""
    make_user(db, "anna")
    make_user(db, "bob")
    data = desk_data(db)
    anna, bob = open_in_german(browser, web, "anna"), open_in_german(browser, web, "bob")
    assert english_left(anna, MAIL_WORDS) == []
    anna.goto(f"{web}/drafts/{data['urgent']}")
    expect(anna.locator("#owner")).to_contain_text("Zugewiesen an anna (Sie)")
    bob.goto(f"{web}/drafts/{data['urgent']}")
    expect(bob.locator(".collision")).to_be_visible()
    assert english_left(bob, MAIL_WORDS) == []
    anna.goto(f"{web}/queue")
    anna.select_option("#filter-state", "pending_review")
    anna.click("form.filters button[type=submit]")
    anna.fill("#view-name", "Wartend")
    anna.click("#save-view")
    expect(anna.locator(".flash.ok")).to_contain_text("„Wartend“")
    anna.click("#view-mine")
    expect(anna.locator("table.queue tbody tr")).to_have_count(1)
    expect(anna.locator(f"#draft-{data['urgent']} .owner")).to_have_text("anna")
    expect(anna.locator(f"#draft-{data['urgent']} .open-by")).to_contain_text("bob")
    assert english_left(anna, MAIL_WORDS) == []
    OUT.mkdir(exist_ok=True)
    anna.screenshot(path=str(OUT / "desk-queue-mine-de.png"), full_page=False)


def test_a_draft_with_a_saved_reply_and_a_note_in_german(web, db, browser):
    """GIVEN root keeps a saved reply and the signature, anna and root in German WHEN anna
    inserts both into her draft and writes a note mentioning bob THEN the draft page shows
    them, with every text of the page in German (the saved replies' admin page too)."""
    make_user(db, "anna")
    make_user(db, "bob")
    make_user(db, "root", "admin")
    support = make_mailbox(db, "support")
    mail = make_email(db, support, subject="Bestellung 4711 fehlt", from_name="Carla Kunde",
                      from_addr="carla@example.org", category="order", language="de",
                      priority="high", reply_addr="carla@example.org",
                      reply_rule="From (no Reply-To)",
                      body="Guten Tag,\nmeine Bestellung 4711 ist nicht angekommen.\nCarla")
    draft = make_draft(db, mail, body="Guten Tag Frau Kunde,\n\nwir prüfen den Versand.\n")
    root = open_in_german(browser, web, "root")
    root.goto(f"{web}/admin/answers")
    root.fill("#new-title", "Versand prüfen")
    root.fill("#new-body", "Ihre Bestellung {order_number} ist unterwegs, {customer_name}.")
    root.click("#add-reply")
    expect(root.locator(".flash.ok")).to_be_visible()
    root.fill("#signature-body", "Viele Grüße\n{agent_name}")
    root.click("#save-signature")
    expect(root.locator(".flash.ok")).to_be_visible()
    assert english_left(root, ("root",)) == []

    anna = open_in_german(browser, web, "anna", height=1750)  # the notes in the picture
    anna.goto(f"{web}/drafts/{draft}")
    anna.locator("#body").click()
    anna.evaluate("() => { const b = document.getElementById('body');"
                  " b.selectionStart = b.selectionEnd = b.value.indexOf('wir'); }")
    anna.locator("#answers button.insert", has_text="Versand prüfen").click()
    expect(anna.locator("#save-state")).to_have_text("Ihr Text ist gespeichert.")
    anna.click("#insert-signature")
    expect(anna.locator("#body")).to_have_value(re.compile(r"Viele Grüße\nanna$"))
    anna.fill("#note-body", "@bob kannst du den Versand bei DHL prüfen?")
    anna.click("#add-note")
    expect(anna.locator(".flash.ok")).to_contain_text("bob")
    expect(anna.locator(".note-list .note")).to_have_count(1)
    expect(anna.locator("#save-state")).to_have_text("Ihr Text ist gespeichert.")
    expect(anna.locator(".reply-rule")).to_contain_text("Von (kein Reply-To)")
    assert english_left(anna) == []
    anna.screenshot(path=str(OUT / "desk-saved-reply-inserted-de.png"), full_page=False)


def test_the_customer_page_and_the_reports_in_german(web, db, browser):
    """GIVEN Erika's answered case and her new waiting mail WHEN anna (German) opens her
    customer page and root (German) the reports THEN both pages are German throughout."""
    make_user(db, "anna")
    make_user(db, "root", "admin")
    support = make_mailbox(db, "support")
    sent = make_email(db, support, status="sent", subject="Rechnung 4711 doppelt",
                      from_addr="erika@muster.example", from_name="Erika Muster",
                      category="billing", body="Rechnung 4711 bitte prüfen.")
    reply = make_draft(db, sent, body="Die Gutschrift zu 4711 ist unterwegs.")
    db.execute("UPDATE drafts SET status = 'sent', body_final = body_draft, approved_by ="
               " 'user:anna', approved_at = UTC_TIMESTAMP() WHERE id = %s", (reply,))
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (sent,))
    db.execute("INSERT INTO draft_reviews (draft_id, email_id, mailbox_id, outcome, week, agent)"
               " SELECT d.id, d.email_id, %s, 'unchanged', DATE(UTC_TIMESTAMP()) -"
               " INTERVAL WEEKDAY(UTC_TIMESTAMP()) DAY, 'user:anna' FROM drafts d"
               " WHERE d.id = %s", (support, reply))
    waiting = make_email(db, support, subject="Wo bleibt die Gutschrift 4711?",
                         from_addr="erika@muster.example", from_name="Erika Muster",
                         body="Immer noch nichts.")
    make_draft(db, waiting)
    anna = open_in_german(browser, web, "anna")
    anna.goto(f"{web}/customers?addr=erika%40muster.example")
    expect(anna.locator("table.customer-mails tbody tr")).to_have_count(2)
    expect(anna.locator("#open-items li.open-item")).to_have_count(1)
    assert english_left(anna) == []
    anna.screenshot(path=str(OUT / "desk-customer-de.png"), full_page=True)
    root = open_in_german(browser, web, "root")
    root.goto(f"{web}/reports")
    expect(root.locator("h1")).to_have_text("Berichte")
    expect(root.locator("table.reports").first).to_contain_text("anna")
    assert english_left(root, ("root",)) == []
