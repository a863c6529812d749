"""Who may read /metrics (issue 44): its labels name the mailboxes, so it answers only a
scraper with the token (``EMAIL_RAG_WEB_METRICS_TOKEN``, ``Authorization: Bearer``) or
one at an allowed address (``EMAIL_RAG_WEB_METRICS_ALLOW``, default this machine)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from email_rag.web import create_app
from tests.factories import make_email, make_mailbox
from tests.webutil import LOOPBACK, web_app

REMOTE = ("203.0.113.7", 50000)
TOKEN = "scrape-4f1c9e2b7a"


@pytest.fixture
def mailbox(db):
    make_email(db, make_mailbox(db, "geheim-buchhaltung"))


def scrape(app, client, headers=None):
    with TestClient(app, client=client) as c:
        return c.get("/metrics", headers=headers or {})


def test_metrics_from_another_machine_without_the_token_name_no_mailbox(settings, db,
                                                                        mailbox):
    """GIVEN the default settings and a mailbox WHEN a client on another machine asks for
    /metrics without a token THEN it is refused (403) and the answer names no mailbox."""
    r = scrape(web_app(settings, db, web_metrics_cache_seconds=0), REMOTE)
    assert r.status_code == 403
    assert "geheim-buchhaltung" not in r.text and "email_rag_" not in r.text
    assert "EMAIL_RAG_WEB_METRICS_TOKEN" in r.text  # says what to do


def test_metrics_with_the_token_from_anywhere(settings, db, mailbox):
    """GIVEN a metrics token WHEN a remote scraper sends it as a bearer token THEN /metrics
    answers with the mailbox's series; a wrong token or another scheme is refused."""
    app = web_app(settings, db, web_metrics_cache_seconds=0,
                  web_metrics_token=type(settings.web_metrics_token)(TOKEN))
    ok = scrape(app, REMOTE, {"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and 'mailbox="geheim-buchhaltung"' in ok.text
    for wrong in (f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, "Bearer "):
        r = scrape(app, REMOTE, {"Authorization": wrong})
        assert r.status_code == 403 and "geheim-buchhaltung" not in r.text, wrong


def test_metrics_on_this_machine_by_default_and_the_allow_list_decides(settings, db, mailbox):
    """GIVEN the default allow-list WHEN a scraper on this machine asks without a token THEN
    it is answered; GIVEN an allow-list of one network THEN a client inside it is answered
    and loopback no longer is (only the token opens it then)."""
    assert scrape(web_app(settings, db, web_metrics_cache_seconds=0), LOOPBACK).status_code \
        == 200
    settings.web_metrics_allow = "203.0.113.0/24"
    app = create_app(settings)
    assert scrape(app, REMOTE).status_code == 200
    assert scrape(app, LOOPBACK).status_code == 403
    assert scrape(app, ("198.51.100.1", 1)).status_code == 403


def test_a_malformed_allow_list_is_refused_when_the_settings_are_read(monkeypatch):
    from email_rag.core.settings import Settings

    monkeypatch.setenv("EMAIL_RAG_WEB_METRICS_ALLOW", "127.0.0.1/8, not-a-network")
    with pytest.raises(ValueError, match="web_metrics_allow"):
        Settings()
