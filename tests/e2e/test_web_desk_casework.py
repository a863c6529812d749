"""Pending/snooze, reopen and forward in a real headless Chromium against the real
`email-rag web` process, with a real worker process sending through a local SMTP relay
(issue 28): the forms on the draft and mail pages, the queue's Snoozed view, and a forward
that reaches the relay exactly once while the case stays in the queue."""

from __future__ import annotations

import email
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from tests.e2e.test_web_browser import (  # noqa: F401 - fixtures
    OUT,
    app_env,
    browser,
    dialogs,
    log_in,
    new_page,
    pytestmark,
    relay,
    run_worker,
    web,
)
from tests.e2e.test_web_desk import expect
from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import make_user


def _data(db) -> dict[str, int]:
    support = make_mailbox(db, "support")
    make_user(db, "anna")
    mail = make_email(db, support, subject="Paket fehlt", from_name="Carla Kunde",
                      from_addr="carla@kunde.example", body="Mein Paket 4711 ist nicht da.")
    other = make_email(db, support, subject="Rechnung falsch")
    closed = make_email(db, support, status="rejected", subject="Alte Anfrage")
    return {"mail": mail, "draft": make_draft(db, mail), "other": make_draft(db, other),
            "closed": closed}


def test_an_agent_snoozes_a_draft_and_finds_it_under_snoozed(web, db, browser, dialogs):
    """GIVEN two waiting drafts WHEN anna puts the first one's mail aside until tomorrow on
    its draft page THEN she is on the queue, told until when, the draft is not listed there
    but under Snoozed with its date; WHEN she opens it and takes it back THEN it is in the
    queue again."""
    data = _data(db)
    page = new_page(browser, dialogs)
    log_in(page, web, "anna")
    page.goto(f"{web}/drafts/{data['draft']}")
    tomorrow = (datetime.now(ZoneInfo("Europe/Berlin")) + timedelta(days=1)).strftime("%Y-%m-%d")
    page.fill("#snooze-until", f"{tomorrow}T09:30")
    page.click("#snooze")
    page.wait_for_url("**/queue")
    expect(page.locator(".flash.ok")).to_contain_text(f"is put aside until {tomorrow} 09:30")
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(0)
    expect(page.locator(f"#draft-{data['other']}")).to_have_count(1)
    page.click("#view-snoozed")
    row = page.locator(f"#draft-{data['draft']}")
    expect(row.locator(".snoozed-until")).to_contain_text(f"until {tomorrow} 09:30")
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "desk-snoozed.png"), full_page=True)
    row.locator("td.subject a").click()
    expect(page.locator("#snoozed-until")).to_contain_text(f"{tomorrow} 09:30")
    page.click("#unsnooze")
    expect(page.locator(".flash.ok")).to_contain_text("is back in the queue")
    page.goto(f"{web}/queue")
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(1)
    assert dialogs == []


def test_an_agent_forwards_a_mail_and_the_worker_sends_it_once(web, app_env, db, browser,
                                                               dialogs, relay, tmp_path):
    """GIVEN a waiting draft WHEN anna forwards its mail from the draft page with a note,
    and sends the form a second time THEN she is told it is queued, not sent, then that it
    went already; the worker process hands exactly one message to the relay (To the
    colleague, "Fwd:", the note above the quoted mail); the mail page lists the forward as
    sent, and the draft still waits in the queue."""
    data = _data(db)
    page = new_page(browser, dialogs)
    log_in(page, web, "anna")
    page.goto(f"{web}/drafts/{data['draft']}")
    page.click("#forward summary")
    page.fill("#forward-to", "lager@firma.example")
    page.fill("#forward-note", "Bitte Sendung 4711 prüfen.")
    page.click("#forward-send")
    expect(page.locator(".flash.ok")).to_contain_text(
        "is forwarded to lager@firma.example: queued to send, not sent yet")
    expect(page.locator("li.forwarded")).to_have_count(1)  # the list opens the section
    page.fill("#forward-to", "lager@firma.example")
    page.fill("#forward-note", "Bitte Sendung 4711 prüfen.")
    page.click("#forward-send")
    expect(page.locator(".flash.warn[role=status]")).to_contain_text("already; nothing more is sent")

    run_worker(app_env, tmp_path)
    assert len(relay.received) == 1
    msg = email.message_from_bytes(relay.received[0].data)
    assert msg["To"] == "lager@firma.example" and msg["Subject"] == "Fwd: Paket fehlt"
    text = msg.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert text.startswith("Bitte Sendung 4711 prüfen.\n") and "Mein Paket 4711" in text
    page.goto(f"{web}/mails/{data['mail']}")
    expect(page.locator("li.forwarded")).to_have_attribute("data-status", "sent")
    page.screenshot(path=str(OUT / "desk-forwarded.png"), full_page=True)
    page.goto(f"{web}/queue")
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(1)
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (data["mail"],))["status"] \
        == "draft_ready"


def test_an_agent_reopens_a_rejected_case_and_answers_it_by_hand(web, db, browser, dialogs):
    """GIVEN a rejected mail WHEN anna opens its page and reopens it with a reason THEN the
    page says it is reopened and kept for a human, shows the reason, and offers the reply
    by hand; Reopen is gone."""
    data = _data(db)
    page = new_page(browser, dialogs)
    log_in(page, web, "anna")
    page.goto(f"{web}/mails/{data['closed']}")
    expect(page.locator("form.reply-by-hand, #reply")).to_have_count(0)
    page.fill("#reopen-reason", "Kunde hat angerufen")
    page.click("#reopen")
    expect(page.locator(".flash.ok")).to_contain_text("is reopened (it was rejected)")
    expect(page.locator(".status-reason")).to_have_text(
        "reopened by user:anna: Kunde hat angerufen")
    expect(page.locator("#reply")).to_be_visible()
    expect(page.locator("#reopen")).to_have_count(0)
    page.screenshot(path=str(OUT / "desk-reopened.png"), full_page=True)
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (data["closed"],))["status"] \
        == "manual"


def test_an_agent_rejects_selected_drafts_and_reads_each_outcome(web, db, browser, dialogs):
    """GIVEN three waiting drafts WHEN anna ticks two of them, one of which another agent
    approves before she clicks, and rejects them with a reason THEN the queue says which was
    rejected and why the other was not, the rejected one is gone, the approved one stays
    approved, the unticked one waits; and the queue with its selection fits a 390 px phone."""
    data = _data(db)
    third = make_draft(db, make_email(db, make_mailbox(db, "support"), subject="Dritte Frage"))
    page = new_page(browser, dialogs)
    log_in(page, web, "anna")
    page.check(f"#draft-{data['draft']} input[name=ids]")
    page.check(f"#draft-{data['other']} input[name=ids]")
    db.execute("UPDATE drafts SET status = 'approved' WHERE id = %s", (data["other"],))
    page.select_option("#bulk-action", "reject")
    page.fill("#bulk-reason", "Doppelte Anfrage")
    page.click("#bulk-apply")
    expect(page.locator(".flash.ok")).to_contain_text(f"Rejected: #{data['draft']}.")
    expect(page.locator(".flash.error")).to_contain_text(
        f"#{data['other']}: draft {data['other']} is approved")
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(0)
    expect(page.locator(f"#draft-{third}")).to_have_count(1)
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "desk-bulk.png"), full_page=True)
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (data["other"],))["status"] \
        == "approved"
    phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    log_in(phone, web, "anna")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390


def test_an_agent_filters_the_queue_saves_the_view_and_opens_it_again(web, db, browser,
                                                                      dialogs):
    """GIVEN a stale draft and a fresh one WHEN anna filters the queue by state "stale",
    saves it as "Veraltet", goes back to the whole queue and clicks her saved view THEN only
    the stale draft is listed, with the filter selected."""
    data = _data(db)
    db.execute("UPDATE drafts SET status = 'stale' WHERE id = %s", (data["other"],))
    page = new_page(browser, dialogs)
    log_in(page, web, "anna")
    page.select_option("#filter-state", "stale")
    page.click("form.filters button[type=submit]")
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(0)
    page.fill("#view-name", "Veraltet")
    page.click("#save-view")
    expect(page.locator(".flash.ok")).to_contain_text("View “Veraltet” saved.")
    page.goto(f"{web}/queue")
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(1)
    page.locator("#saved-views a", has_text="Veraltet").click()
    expect(page.locator(f"#draft-{data['other']}")).to_have_count(1)
    expect(page.locator(f"#draft-{data['draft']}")).to_have_count(0)
    expect(page.locator("#filter-state")).to_have_value("stale")
    page.screenshot(path=str(OUT / "desk-saved-view.png"), full_page=True)
