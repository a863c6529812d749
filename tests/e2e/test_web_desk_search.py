"""Search over every mail and reply and the customer page in a real headless Chromium
against the real `email-rag web` process (issue 28): hostile mail text in a snippet stays
inert text with the match marked, and the customer page leads to the open draft."""

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


def test_an_agent_searches_all_mail_and_opens_the_customer_page(web, db, browser):
    """GIVEN Erika's answered case (its text holds a script and an image with onerror, our
    sent reply) and her new waiting mail WHEN anna searches "4711" from the header THEN both
    mails and our reply are listed with 4711 marked, no script ran; WHEN she follows the
    customer link THEN the page lists both mails, our reply and one open item, which opens
    the waiting draft."""
    support = make_mailbox(db, "support")
    make_user(db, "anna")
    sent = make_email(db, support, status="sent", subject="Rechnung 4711 doppelt",
                      from_addr="erika@muster.example", from_name="Erika Muster",
                      body='Rechnung 4711 <img src=x onerror="alert(1)"> '
                           '<script>alert(2)</script> bitte prüfen.')
    reply = make_draft(db, sent, body="Die Gutschrift zu 4711 ist unterwegs.")
    db.execute("UPDATE drafts SET status = 'sent', body_final = body_draft WHERE id = %s",
               (reply,))
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (sent,))
    waiting = make_email(db, support, subject="Wo bleibt die Gutschrift 4711?",
                         from_addr="erika@muster.example", body="Immer noch nichts.")
    draft = make_draft(db, waiting)
    page = open_as(browser, web, "anna")
    page.click("#search-link")
    page.fill("#search-all", "4711")
    page.press("#search-all", "Enter")
    expect(page.locator("ol.hits li.hit")).to_have_count(3)
    expect(page.locator(f"#hit-reply-{reply} mark").first).to_have_text("4711")
    expect(page.locator(f"#hit-mail-{sent} .snippet")).to_contain_text(
        '<img src=x onerror="alert(1)">')
    assert page.locator("ol.hits img, ol.hits script").count() == 0
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "desk-search-all.png"), full_page=True)
    page.locator(f"#hit-mail-{sent} a.customer-link").click()
    page.wait_for_url("**/customers?addr=erika%40muster.example")
    expect(page.locator("table.customer-mails tbody tr")).to_have_count(2)
    expect(page.locator(f"#reply-{reply}")).to_contain_text("Die Gutschrift zu 4711")
    expect(page.locator("#open-items li.open-item")).to_have_count(1)
    page.screenshot(path=str(OUT / "desk-customer.png"), full_page=True)
    page.locator(f"#open-{waiting} a").click()
    page.wait_for_url(f"**/drafts/{draft}")
    assert page.dialogs == []
