"""The review desk (issue 18) against the real `email-rag web` process: forwarded headers,
and the staff workflow in a real headless Chromium (Debian's chromium via Playwright)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.helpers import ROOT
from tests.webutil import csrf_of, make_user, serve_web

OUT = ROOT / "test-output"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def web_env(env, tmp_path):
    return {**os.environ, **env, "PYTHONPATH": str(ROOT), "EMAIL_RAG_WEB_SECRET_KEY": "e2e",
            "EMAIL_RAG_LOG_LEVEL": "WARNING"}


def failed_login_actor(base: str, db, forwarded_for: str) -> str:
    with httpx.Client(base_url=base) as c:
        token = csrf_of(c.get("/login").text)
        r = c.post("/login", data={"name": "anna", "password": "wrong-one", "csrf_token": token},
                   headers={"X-Forwarded-For": forwarded_for})
        assert r.status_code == 401
    return db.fetchone("SELECT actor FROM audit_log WHERE event = 'login_failed' "
                       "ORDER BY id DESC LIMIT 1")["actor"]


def test_forwarded_for_is_believed_only_from_configured_proxies(web_env, db, tmp_path: Path):
    """GIVEN the web UI without trusted proxies WHEN a client sends X-Forwarded-For THEN the
    audit log (and the login throttle) see the peer address; WHEN 127.0.0.1 is a configured
    proxy THEN its forwarded address is used."""
    make_user(db, "anna")
    with serve_web(web_env, tmp_path) as base:
        assert failed_login_actor(base, db, "203.0.113.9") == "web:127.0.0.1"
    trusted = {**web_env, "EMAIL_RAG_WEB_TRUSTED_PROXIES": "127.0.0.1"}
    with serve_web(trusted, tmp_path) as base:
        assert failed_login_actor(base, db, "203.0.113.9") == "web:203.0.113.9"
