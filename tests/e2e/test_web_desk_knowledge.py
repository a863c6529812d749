"""Drafts from the team's knowledge on the desk, in a real headless Chromium against the real
`email-rag web` process (issue 41): a draft written by the real draft step from an article
shows, line by line, the source each line came from (S1, linked to the article's passage);
a draft no source answers carries the "no source" banner and no line with a source."""

from __future__ import annotations

import json

import pytest
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from tests.e2e.test_web_desk import (  # noqa: F401 - fixtures
    OUT,
    browser,
    expect,
    needs_chromium,
    open_as,
    web,
    web_env,
)
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_job
from tests.webutil import make_user

pytestmark = needs_chromium

RETURNS = ("# Rücksendungen\n\n## Rücksendung einer Kaffeemaschine\n\n"
           "Eine Kaffeemaschine können Sie innerhalb von 30 Tagen nach Lieferung kostenlos "
           "zurücksenden.\nLegen Sie den Retourenschein bei und senden Sie das Paket an "
           "Kaffeewerk GmbH, Hafenstraße 12, 20457 Hamburg.\n")


@pytest.fixture
def drafted(settings, db):
    """Two mails through the real draft step (scripted LLM for the classification): one the
    returns article answers, one nothing answers."""
    from email_rag.knowledge.articles import ArticleStore, Origin

    with ScriptedLLMServer() as llm:
        settings.llm_base_url = llm.url
        settings.draft_bar_knowledge = 0.2  # the test embedder hashes words (cosines 0.14-0.28 here)
        svc = Services(settings)
        try:
            support = make_mailbox(db, "support")
            article = ArticleStore(svc.db, svc.embedder).create(
                None, Origin.WEB, "Rücksendungen", RETURNS, "user:root", "de")
            out = {"article": article}
            for key, subject, body in [
                    ("answered", "Kaffeemaschine zurücksenden",
                     "Guten Tag, kann ich meine Kaffeemaschine nach der Lieferung noch "
                     "zurücksenden? Wie lange habe ich Zeit und wohin schicke ich das Paket?"),
                    ("unanswered", "Frage zur Barista-Schulung",
                     "Hallo, bieten Sie auch Schulungen für Latte Art in Leipzig an?")]:
                mail = make_email(db, support, subject=subject, body=body,
                                  from_addr="kunde@example.org", from_name="Karla Kunde")
                assert run_job(JobRunner(svc, "w1"), make_job(db, mail)) == "done"
                out[key] = db.fetchone("SELECT id FROM drafts WHERE email_id = %s", (mail,))["id"]
        finally:
            svc.close()
    return out


def test_a_draft_shows_each_lines_source_and_a_no_source_draft_says_so(web, db, browser, drafted):
    """GIVEN the two drafts WHEN anna opens the answered one THEN the lines with the period
    and the address carry the badge S1, which leads to the source card of the article whose
    link opens its passage, and no "no source" banner; WHEN she opens the other THEN the
    banner says it was written without the team's knowledge and no line has a source."""
    make_user(db, "anna")
    page = open_as(browser, web, "anna")
    page.goto(f"{web}/drafts/{drafted['answered']}")
    sourced = page.locator("#trace li.sourced")
    expect(sourced.filter(has_text="30 Tagen")).to_have_count(1)
    expect(sourced.filter(has_text="Hafenstraße 12")).to_have_count(1)
    expect(sourced.first.locator("a.badge")).to_have_text("S1")
    expect(page.locator("#trace li.unsourced").first).to_contain_text("Vielen Dank")
    card = page.locator("#source-S1")
    expect(card).to_contain_text("Rücksendungen")
    assert card.locator("a.source-link").get_attribute("href").startswith(
        f"/admin/knowledge/{drafted['article']}#p")
    expect(page.locator("#no-source")).to_have_count(0)
    page.screenshot(path=str(OUT / "desk-draft-sources.png"), full_page=True)

    page.goto(f"{web}/drafts/{drafted['unanswered']}")
    expect(page.locator("#no-source")).to_be_visible()
    expect(page.locator("#no-source")).to_contain_text("without the team's knowledge")
    expect(page.locator("#trace li.sourced")).to_have_count(0)
    assert "Bestellnummer" in page.locator("#body").input_value()
    stored = json.loads(db.fetchone("SELECT sources FROM drafts WHERE id = %s",
                                    (drafted["unanswered"],))["sources"])
    assert stored["basis"] == "no_source"
    page.screenshot(path=str(OUT / "desk-draft-no-source.png"), full_page=True)
