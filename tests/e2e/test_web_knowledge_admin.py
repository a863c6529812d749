"""The knowledge admin in a real headless Chromium against the real `email-rag web` process
(issue 41): an admin opens Knowledge from the navigation, uploads a Markdown file, opens the
article, follows a passage's anchor (the link a draft's source carries), edits the article
into a new version and disables it."""

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
from tests.webutil import make_user

pytestmark = needs_chromium

RETURNS = ("# Returns\n\nYou can send any item back within 30 days of delivery.\n\n"
           "## Refunds\n\nWe refund the price within 5 working days.\n\n"
           "## Fees\n\nReturns are free of charge inside Germany.\n")




def test_an_admin_uploads_reads_a_passage_edits_and_disables_an_article(
        web, db, browser, tmp_path):
    """GIVEN an admin WHEN she uploads returns.md from the Knowledge page THEN its article page
    shows three passages; WHEN she follows the anchor of the second THEN the address ends in
    #p2 and that passage is the target in view; WHEN she saves an edit THEN version 2 with the
    new text; WHEN she disables it THEN the page and the list say disabled."""
    make_user(db, "root", "admin")
    file = tmp_path / "returns.md"
    file.write_text(RETURNS)
    page = open_as(browser, web, "root")
    page.click("#knowledge-link")
    page.wait_for_url("**/admin/knowledge")
    page.set_input_files("#upload-file", str(file))
    page.click("#upload-button")
    page.wait_for_url("**/admin/knowledge/*")
    article_id = int(db.fetchone("SELECT id FROM knowledge_articles")["id"])
    expect(page.locator(".flash.ok")).to_contain_text("Article “Returns” added from returns.md.")
    expect(page.locator("li.passage")).to_have_count(3)
    expect(page.locator("#article-version")).to_have_text("version 1")

    page.locator("#p2 a.anchor").click()
    page.wait_for_url(f"**/admin/knowledge/{article_id}#p2")
    expect(page.locator("li.passage:target")).to_have_attribute("id", "p2")
    expect(page.locator("#p2")).to_be_in_viewport()
    expect(page.locator("#p2")).to_contain_text("within 5 working days")
    page.goto(f"{web}/admin/knowledge/{article_id}#p3")  # as a draft's source link opens it
    expect(page.locator("li.passage:target")).to_have_attribute("id", "p3")

    page.fill("#edit-body", RETURNS.replace("5 working days", "3 working days"))
    page.click("#save-article")
    expect(page.locator(".flash.ok")).to_contain_text("Article saved as version 2.")
    expect(page.locator("#article-version")).to_have_text("version 2")
    expect(page.locator("#p2")).to_contain_text("within 3 working days")
    page.screenshot(path=str(OUT / "knowledge-article.png"), full_page=True)

    page.click("#disable-article")
    expect(page.locator("#article-status")).to_have_text("disabled")
    expect(page.locator("#disabled-note")).to_be_visible()
    expect(page.locator("#enable-article")).to_be_visible()
    page.click("#knowledge-link")
    expect(page.locator(f"#article-{article_id}")).to_contain_text("disabled")
    row = db.fetchone("SELECT status, version FROM knowledge_articles WHERE id = %s",
                      (article_id,))
    assert (row["status"], row["version"]) == ("disabled", 2)
