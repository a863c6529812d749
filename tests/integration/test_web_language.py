"""The desk's language (issue 44): it follows the browser's Accept-Language until the user
picks one on /me, and a German page carries no English text of the catalog - the queue, a
draft with its classification sources and the automatic checks' warnings, and the error
pages ("does not exist", a refused action) included."""

from __future__ import annotations

import json

import pytest

from email_rag.auth import users
from email_rag.web.i18n import from_accept_language
from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import browsers, english_in, login, shown_text, web_app

GERMAN = {"Accept-Language": "de-DE,de;q=0.9,en;q=0.8"}


@pytest.fixture
def app(settings, db):
    return web_app(settings, db)


@pytest.fixture
def client(app):
    with browsers(app, log_in=False) as new:
        yield new


@pytest.mark.parametrize("header, language", [
    ("de-DE,de;q=0.9,en;q=0.8", "de"), ("de", "de"), ("en-US,en;q=0.9", "en"),
    ("fr-FR,fr;q=0.9,de;q=0.5,en;q=0.4", "de"), ("fr,en;q=0.5,de;q=0.4", "en"),
    ("en;q=0.2,DE-at;q=0.8", "de"), ("de;q=0,en", "en"), ("fr", None), ("", None),
    (None, None), ("de;q=abc,en;q=0.1", "en"), (";;,,", None)])
def test_accept_language_picks_the_first_language_the_desk_has(header, language):
    assert from_accept_language(header) == language


def test_a_german_browser_gets_the_german_desk_until_the_user_picks_one(client, db):
    """GIVEN anna never chose a language WHEN her browser asks for German THEN the login
    page, a login error and the queue are German; WHEN she picks English on /me THEN the
    desk is English although the browser still asks for German; an English browser gets
    English."""
    c = client()
    c.headers.update(GERMAN)
    assert "Anmelden" in c.get("/login").text
    refused = c.post("/login", data={"name": "anna", "password": "falsch", "csrf_token":
                                     login_token(c)})
    assert refused.status_code == 401 and "Benutzername oder Passwort falsch" in refused.text
    token = login(c)
    queue = c.get("/queue").text
    assert "Prüfliste" in queue and 'lang="de"' in queue
    me = c.get("/me").text
    assert '<option value="de" selected' in me  # what the desk shows now
    c.post("/me", data={"csrf_token": token, "time_zone": "Europe/Berlin",
                        "ui_language": "en"})
    assert 'lang="en"' in c.get("/queue").text
    english = client()
    english.headers.update({"Accept-Language": "en-US,en;q=0.9"})
    login(english, "root")
    assert 'lang="en"' in english.get("/queue").text


def login_token(c) -> str:
    from tests.webutil import csrf_of

    return csrf_of(c.get("/login").text)


HISTORY_SOURCES = {"category": {"source": "history", "confidence": 0.934, "examples": 12},
                   "priority": {"source": "history", "confidence": 0.71, "via": "category"},
                   "needs_reply": {"source": "rules", "confidence": None},
                   "language": {"source": "identifier", "confidence": 0.98}}
MODEL_SOURCES = {"category": {"source": "llm", "confidence": None},
                 "priority": {"source": "default", "confidence": None},
                 "needs_reply": {"source": "llm", "confidence": None},
                 "language": {"source": "llm", "confidence": None}}
# what the pipeline stores for a draft unusable twice: the first failed check's kind, then
# every check's finding (email_rag/llm/draft_checks.py, email_rag/pipeline/draft.py)
FLAGS = ("placeholder: the draft contains the placeholder '[Ihr Name]'; the draft stops "
         "mid-sentence (\"...und melden uns bei\"): it looks cut off; the draft is a refusal or "
         "talks about itself ('Als KI'); the draft repeats the customer's mail (62% of its "
         "phrases are copied from it) instead of answering it; the draft speaks as the "
         "customer ('meine Bestellung'); the draft repeats the customer's own sentence as ours "
         "('Bitte erstatten Sie mir den Betrag'); the draft sends the customer to customer "
         "service ('den Kundenservice'), which is us; the customer writes formally and the "
         "draft uses the familiar form ('du'); the draft states what nothing in this mail, "
         "this customer's history or the team's replies supports: done 'erstattet'; amount "
         "'49,90 EUR'; deadline 'bis Freitag'; the draft is written in 'en', the mail in "
         "'de'; the draft is signed with the customer's own name ('carla kunde')")
CUT = ("length: the answer was cut off at max_tokens 600 (finish_reason length): incomplete")


def german_pages(c, db) -> dict[str, str]:
    """Every page of the queue, draft and error kind, in German, by name."""
    mb = make_mailbox(db)
    mail = make_email(db, mb, subject="Rechnung 4711 doppelt", body="Guten Tag, bitte prüfen.",
                      from_name="Carla Kunde", from_addr="carla@kunde.example", language="de",
                      category="billing", priority="high", needs_reply=True,
                      classification_sources=json.dumps(HISTORY_SOURCES))
    flagged = make_draft(db, mail, body="Guten Tag,\n\nwir prüfen das.\n")
    db.execute("UPDATE drafts SET check_flags = %s WHERE id = %s", (FLAGS, flagged))
    other = make_email(db, mb, subject="Lieferung fehlt", body="Wo ist mein Paket?",
                       language="de", category="order", priority="normal",
                       classification_sources=json.dumps(MODEL_SOURCES))
    cut = make_draft(db, other, body="Guten Tag,\n\nwir")
    db.execute("UPDATE drafts SET check_flags = %s WHERE id = %s", (CUT, cut))
    token = login(c, "root")
    pages = {"queue": c.get("/queue"), "flagged draft": c.get(f"/drafts/{flagged}"),
             "cut draft": c.get(f"/drafts/{cut}"),
             "missing draft": c.get("/drafts/999999"), "missing mail": c.get("/mails/999999"),
             "missing attachment": c.get(f"/drafts/{flagged}/attachments/7"),
             "no such page": c.get("/nowhere"),
             "bad address": c.get("/drafts/abc"),
             "approve a missing draft": c.post("/drafts/999999/approve",
                                                data={"csrf_token": token, "body": "x"}),
             "flagged unchanged": c.post(f"/drafts/{flagged}/approve", data={
                 "csrf_token": token, "body": "Guten Tag,\n\nwir prüfen das.\n"}),
             "expired form": c.post(f"/drafts/{flagged}/approve", data={"body": "x"})}
    return {name: r.text for name, r in pages.items()}


def test_german_pages_carry_no_english_text_of_the_catalog(client, db):
    """GIVEN root's browser asks for German (no choice on /me) WHEN it opens the queue, a
    draft decided by the team's history and one by the model (classification sources), a
    draft FLAGGED by every automatic check, and the error pages (a draft, mail or attachment
    that does not exist, a page that does not exist, a malformed address, a refused
    approval, an expired form) THEN no English text of the catalog is shown on any of them,
    and the sources and the checks' findings are there in German."""
    c = client()
    c.headers.update(GERMAN)
    pages = german_pages(c, db)
    left = {name: english_in(shown_text(html), ("root", "support", "customer"))
            for name, html in pages.items()}
    left = {name: found for name, found in left.items() if found}
    assert left == {}, "\n".join(f"{name}: {found}" for name, found in left.items())
    flagged = shown_text(pages["flagged draft"])
    assert "Kategorie Rechnung — aus 12 Beispielen des Teams, 93 % sicher" in flagged
    assert "enthält den Platzhalter '[Ihr Name]'" in flagged
    assert "Entwurf ist in 'en' geschrieben, die Mail in 'de'" in flagged
    assert "bei max_tokens 600 abgeschnitten" in shown_text(pages["cut draft"])
    assert "Entwurf #999999 gibt es nicht" in shown_text(pages["missing draft"])


def test_an_english_reader_gets_the_same_pages_in_english(client, db):
    """The same pages for an English browser: the findings and sources as stored."""
    c = client()
    c.headers.update({"Accept-Language": "en"})
    pages = german_pages(c, db)
    flagged = shown_text(pages["flagged draft"])
    assert "category billing — from 12 team examples, 93 % sure" in flagged
    assert "the draft contains the placeholder '[Ihr Name]'" in flagged
    assert "draft 999999 does not exist" in shown_text(pages["missing draft"])
    assert users  # the module the preferences test uses
