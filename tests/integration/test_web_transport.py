"""HTTPS for the web UI (issue 44): behind HTTPS the session cookie is Secure and HSTS is
sent without any setting; a login over plain http is refused, with a page that says why,
when the deployment says it is behind HTTPS (``EMAIL_RAG_WEB_HTTPS=required``) or when the
browser is not on this machine (``auto``: a non-loopback client address)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.webutil import PASSWORD, csrf_of, web_app

LOOPBACK = ("127.0.0.1", 50000)
REMOTE = ("203.0.113.7", 50000)  # a browser on another machine (TEST-NET-3)


def post_login(c: TestClient):
    token = csrf_of(c.get("/login").text)
    return c.post("/login", data={"name": "anna", "password": PASSWORD, "csrf_token": token,
                                  "next": "/queue"}, follow_redirects=False)


def open_client(app, scheme: str, client: tuple[str, int]) -> TestClient:
    return TestClient(app, base_url=f"{scheme}://desk.example", client=client)


def test_behind_https_the_cookie_is_secure_and_hsts_is_sent_by_default(settings, db):
    """GIVEN the default settings WHEN a browser logs in over https (here from another
    machine) THEN the session cookie carries Secure and every page carries HSTS."""
    app = web_app(settings, db)
    with open_client(app, "https", REMOTE) as c:
        r = post_login(c)
        assert r.status_code == 303, r.text
        cookie = r.headers["set-cookie"].lower()
        assert "email_rag_session=" in cookie and "; secure" in cookie
        assert r.headers["strict-transport-security"] == "max-age=31536000"
        assert c.get("/queue").headers["strict-transport-security"] == "max-age=31536000"


def test_plain_http_from_another_machine_is_refused_with_the_reason(settings, db):
    """GIVEN the default settings WHEN a browser on another machine logs in over plain http
    THEN the login is refused (403, no session) with a page that says the password would
    cross the network unencrypted and what to do; the login page says so before anyone
    types."""
    app = web_app(settings, db)
    with open_client(app, "http", REMOTE) as c:
        assert "not encrypted" in c.get("/login").text
        r = post_login(c)
        assert r.status_code == 403
        assert "not encrypted" in r.text and "EMAIL_RAG_WEB_TRUSTED_PROXIES" in r.text
        assert c.get("/queue", follow_redirects=False).status_code == 303  # not logged in
    assert db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE event = 'login'")["n"] == 0


def test_plain_http_on_this_machine_logs_in_without_secure_or_hsts(settings, db):
    """GIVEN the default settings WHEN a browser on this machine (loopback) logs in over
    plain http (the demo, a developer) THEN it works; the cookie is not Secure (the browser
    would not send it back over http) and no HSTS is sent."""
    app = web_app(settings, db)
    with open_client(app, "http", LOOPBACK) as c:
        r = post_login(c)
        assert r.status_code == 303
        assert "secure" not in r.headers["set-cookie"].lower()
        assert "strict-transport-security" not in r.headers


def test_required_https_refuses_plain_http_even_on_this_machine(settings, db):
    """GIVEN EMAIL_RAG_WEB_HTTPS=required (the deployment is behind HTTPS) WHEN a login comes
    over plain http from loopback (a proxy not in EMAIL_RAG_WEB_TRUSTED_PROXIES, say) THEN it
    is refused with the reason; over https it works with a Secure cookie."""
    app = web_app(settings, db, web_https="required")
    with open_client(app, "http", LOOPBACK) as c:
        r = post_login(c)
        assert r.status_code == 403 and "not encrypted" in r.text
    with open_client(app, "https", LOOPBACK) as c:
        r = post_login(c)
        assert r.status_code == 303 and "; secure" in r.headers["set-cookie"].lower()


def test_https_off_allows_plain_http_and_hsts_can_be_switched_off(settings, db):
    """GIVEN EMAIL_RAG_WEB_HTTPS=off and EMAIL_RAG_WEB_HSTS_SECONDS=0 WHEN a browser on
    another machine logs in over http, and one over https THEN both log in; no HSTS."""
    app = web_app(settings, db, web_https="off", web_hsts_seconds=0)
    with open_client(app, "http", REMOTE) as c:
        assert post_login(c).status_code == 303
    with open_client(app, "https", REMOTE) as c:
        r = post_login(c)
        assert r.status_code == 303 and "strict-transport-security" not in r.headers


def test_the_first_admins_password_is_refused_over_plain_http_from_another_machine(settings,
                                                                                 db):
    """GIVEN an empty database and the set-up link WHEN a browser on another machine creates
    the first admin over plain http THEN it is refused (403, the reason on the page) and no
    account exists; over https it is created."""
    from email_rag.auth import first_start
    from email_rag.web import create_app

    token = first_start.new_link(db)
    app = create_app(settings)
    form = {"token": token, "name": "root", "password": PASSWORD, "again": PASSWORD}
    with open_client(app, "http", REMOTE) as c:
        assert "not encrypted" in c.get(f"/setup?token={token}").text
        r = c.post("/setup", data={**form, "csrf_token": csrf_of(c.get(f"/setup?token={token}")
                                                                   .text)})
        assert r.status_code == 403 and "not encrypted" in r.text
    assert first_start.needs_setup(db)
    with open_client(app, "https", REMOTE) as c:
        r = c.post("/setup", data={**form, "csrf_token": csrf_of(c.get(f"/setup?token={token}")
                                                                   .text)},
                   follow_redirects=False)
        assert r.status_code == 303
    assert not first_start.needs_setup(db)


@pytest.mark.parametrize("value", ["yes", "", "HTTPS"])
def test_an_unknown_https_mode_is_refused_when_the_settings_are_read(monkeypatch, value):
    from email_rag.core.settings import Settings

    monkeypatch.setenv("EMAIL_RAG_WEB_HTTPS", value)
    with pytest.raises(ValueError, match="web_https"):
        Settings()
