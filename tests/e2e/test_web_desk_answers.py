"""Answering tools in a real headless Chromium against the real `email-rag web` process
(issue 28): an admin keeps a saved reply and the signature through the page, an agent
inserts them into a draft's editor (filled from the mail, autosaved), and two agents in two
browser contexts: anna mentions bob in a note, bob sees the mention and opens it."""

from __future__ import annotations

from tests.e2e.test_web_desk import (  # noqa: F401 - fixtures
    OUT,
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


def answers_data(db) -> dict[str, int]:
    support = make_mailbox(db, "support")
    mail = make_email(db, support, subject="Bestellung 4711 fehlt", from_name="Carla Kunde",
                      from_addr="carla@example.org", category="shipping", language="de",
                      body="Guten Tag,\nmeine Bestellung 4711 ist nicht angekommen.\nCarla")
    draft = make_draft(db, mail, body="Guten Tag Frau Kunde,\n\nwir prüfen den Versand.\n")
    return {"support": support, "mail": mail, "draft": draft}


def test_an_admin_keeps_a_saved_reply_and_an_agent_inserts_it_filled_in(web, db, browser):
    """GIVEN root (admin) and anna WHEN root adds a saved reply with placeholders and the
    signature through the page THEN anna's draft page offers them; WHEN she puts the cursor
    after the greeting and clicks the reply THEN it stands there filled with "Carla Kunde",
    "4711" and "anna", is saved as she would type, and the signature goes to the end; the
    page with both still fits a 390 px phone."""
    make_user(db, "anna")
    make_user(db, "root", "admin")
    data = answers_data(db)
    root = open_as(browser, web, "root")
    root.goto(f"{web}/admin/answers")
    root.fill("#new-title", "Versand prüfen")
    root.fill("#new-body", "Ihre Bestellung {order_number} ist unterwegs, {customer_name}.")
    root.click("#add-reply")
    expect(root.locator(".flash.ok")).to_contain_text("Saved reply “Versand prüfen” added.")
    root.fill("#signature-body", "Viele Grüße\n{agent_name}")
    root.click("#save-signature")
    expect(root.locator(".flash.ok")).to_contain_text("Signature saved.")
    OUT.mkdir(exist_ok=True)
    root.screenshot(path=str(OUT / "desk-saved-replies-admin.png"), full_page=True)

    anna = open_as(browser, web, "anna")
    anna.goto(f"{web}/drafts/{data['draft']}")
    editor = anna.locator("#body")
    editor.click()
    anna.evaluate("() => { const b = document.getElementById('body');"
                  " b.selectionStart = b.selectionEnd = b.value.indexOf('wir'); }")
    anna.locator("#answers button.insert", has_text="Versand prüfen").click()
    expect(anna.locator("#save-state")).to_have_text("Your text is saved.")
    assert editor.input_value() == ("Guten Tag Frau Kunde,\n\nIhre Bestellung 4711 ist "
                                    "unterwegs, Carla Kunde.\n\nwir prüfen den Versand.\n")
    anna.click("#insert-signature")
    expect(anna.locator("#save-state")).to_have_text("Your text is saved.")
    assert editor.input_value().endswith("wir prüfen den Versand.\n\nViele Grüße\nanna")
    assert anna.url.endswith(f"/drafts/{data['draft']}")  # in place: no page load
    saved = db.fetchone("SELECT body FROM draft_edits WHERE draft_id = %s", (data["draft"],))
    assert saved["body"] == editor.input_value()
    anna.screenshot(path=str(OUT / "desk-saved-reply-inserted.png"), full_page=False)
    phone = open_as(browser, web, "anna", width=390, height=844)
    phone.goto(f"{web}/drafts/{data['draft']}")
    expect(phone.locator("#answers button.insert")).to_have_count(2)
    expect(phone.locator("#notes")).to_be_visible()
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390


def test_anna_mentions_bob_in_a_note_and_bob_sees_it_in_his_own_browser(web, db, browser):
    """GIVEN anna and bob, each in a browser context of their own WHEN anna writes a note
    "@bob ..." on a draft THEN it stands on her page (escaped), bob's header shows one
    unread mention after a reload, his mentions list links to the mail, the mail page shows
    the note, and once he opened it the count is gone."""
    make_user(db, "anna")
    make_user(db, "bob")
    data = answers_data(db)
    anna, bob = open_as(browser, web, "anna"), open_as(browser, web, "bob")
    expect(bob.locator("#mention-count")).to_have_count(0)
    anna.goto(f"{web}/drafts/{data['draft']}")
    anna.fill("#note-body", "@bob kannst du den Versand bei DHL prüfen? <b>dringend</b>")
    anna.click("#add-note")
    expect(anna.locator(".flash.ok")).to_contain_text("Notified: bob.")
    note = anna.locator(".note-list .note").first
    expect(note.locator(".note-text")).to_have_text(
        "@bob kannst du den Versand bei DHL prüfen? <b>dringend</b>")
    expect(note.locator(".note-author")).to_have_text("anna")

    bob.reload()
    expect(bob.locator("#mention-count")).to_have_text("1")
    bob.click("#mentions-link")
    row = bob.locator("tr.mention.unread")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Bestellung 4711 fehlt")
    expect(row).to_contain_text("anna")
    OUT.mkdir(exist_ok=True)
    bob.screenshot(path=str(OUT / "desk-mentions.png"), full_page=False)
    row.locator("a").click()
    bob.wait_for_url(f"**/mails/{data['mail']}#note-*")
    expect(bob.locator(".note-list .note-text")).to_contain_text("kannst du den Versand")
    expect(bob.locator("#mention-count")).to_have_count(0)
    bob.click("#mentions-link")
    expect(bob.locator("tr.mention.read")).to_have_count(1)
