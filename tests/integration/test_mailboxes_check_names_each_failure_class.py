"""``email-rag mailboxes check`` with the real command against real servers: one mailbox that
works end to end (TLS, OAuth2 login, SPECIAL-USE Sent, IDLE, SMTP AUTH XOAUTH2) and one per
failure class (DNS, TCP, certificate, revoked consent, missing folder), each with its exit
code and its hint."""

from __future__ import annotations

import json

import pytest

from email_rag.cli import main
from email_rag.core.settings import get_settings
from tests.mailtls import TestCA, TlsDovecot, TlsSmtpServer, TokenServer, free_port

USER = "support@example.com"
KEY = "test-key-for-oauth-tokens-0123456789"


@pytest.fixture
def servers(tmp_path):
    ca = TestCA(tmp_path / "pki")
    cert = ca.issue(["127.0.0.1"])
    tokens = TokenServer().start()
    dovecot = TlsDovecot(cert, tokens, sent_name="Sent Items").start()
    smtp = TlsSmtpServer(cert, "starttls", tokens, size_limit=20_000_000).start()
    yield {"ca": str(ca.ca_file), "tokens": tokens, "dovecot": dovecot, "smtp": smtp}
    smtp.stop()
    dovecot.stop()
    tokens.stop()


def oauth_mailbox(s, name, user=USER, **kw):
    t = s["tokens"]
    return {"name": name, "host": "127.0.0.1", "port": s["dovecot"].tls_port,
            "security": "tls", "ca_file": s["ca"], "username": user, "auth": "xoauth2",
            "oauth": {"token_url": t.token_url, "client_id": t.client_id,
                      "client_secret": t.client_secret},
            "smtp": {"host": "127.0.0.1", "port": s["smtp"].port, "security": "starttls",
                     "ca_file": s["ca"]}, **kw}


def run_check(capsys, *args) -> tuple[int, dict]:
    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["mailboxes", "check", *args, "--json"])
    out = json.loads(capsys.readouterr().out)
    return code, {m["mailbox"]: {s["name"]: s for s in m["steps"]} | {"_": m}
                  for m in out["data"]["mailboxes"]}


def test_check_reports_each_failure_class_with_its_exit_code(env, servers, monkeypatch,
                                                             capsys):
    s = servers
    mailboxes = [
        oauth_mailbox(s, "good"),
        oauth_mailbox(s, "dns", host="no-such-host.invalid"),
        oauth_mailbox(s, "tcp", port=free_port()),
        oauth_mailbox(s, "cert", ca_file=""),
        oauth_mailbox(s, "revoked", user="other@example.com"),
        oauth_mailbox(s, "folder", folders=["INBOX", "Archive/2026"]),
    ]
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", json.dumps(mailboxes))
    monkeypatch.setenv("EMAIL_RAG_OAUTH_TOKEN_KEY", KEY)
    get_settings.cache_clear()
    from email_rag.wiring.services import Services

    svc = Services(get_settings())
    try:
        for name in ("good", "folder", "cert"):
            svc.oauth_tokens.authorize(name, s["tokens"].consent(USER))
        svc.oauth_tokens.authorize("revoked", s["tokens"].consent("other@example.com"))
    finally:
        svc.close()
    s["tokens"].revoke("other@example.com")

    code, r = run_check(capsys, "good")
    assert code == 0, r
    good = r["good"]
    assert good["imap tls"]["certificate"]["subject"] == "commonName=127.0.0.1"
    assert good["imap tls"]["certificate"]["verified"] == "yes"
    assert good["imap login"]["mechanism"] == "xoauth2"
    assert good["folders"]["sent_folder"] == "Sent Items"
    assert good["idle"]["idle"] is True
    smtp = good["smtp"]["smtp"]
    assert "XOAUTH2" in smtp["auth_offered"] and smtp["auth_used"] == "xoauth2"
    assert smtp["size_limit"] == 20_000_000 and smtp["tls"]["verified"] == "yes"

    assert main(["mailboxes", "check", "good"]) == 0
    text = capsys.readouterr().out
    assert "Sent: Sent Items (SPECIAL-USE \\Sent)" in text and "All mailbox checks passed" in text

    code, r = run_check(capsys)
    assert code == 3
    assert r["good"]["_"]["exit_code"] == 0
    assert (r["dns"]["imap dns"]["ok"], r["dns"]["_"]["exit_code"]) == (False, 1)
    assert r["dns"]["imap login"]["ok"] is None  # skipped
    assert (r["tcp"]["imap tcp"]["ok"], r["tcp"]["_"]["exit_code"]) == (False, 1)
    assert r["cert"]["imap tls"]["ok"] is False and r["cert"]["_"]["exit_code"] == 3
    assert "certificate" in r["cert"]["imap tls"]["detail"]
    assert "ca_file" in r["cert"]["imap tls"]["hint"]
    revoked = r["revoked"]
    assert revoked["imap login"]["ok"] is False and revoked["_"]["exit_code"] == 3
    assert "invalid_grant" in revoked["imap login"]["detail"]
    assert "mailboxes authorize revoked" in revoked["imap login"]["hint"]
    assert revoked["smtp"]["ok"] is False and revoked["smtp"]["exit_code"] == 3
    folder = r["folder"]
    assert folder["folders"]["ok"] is False and "Archive/2026" in folder["folders"]["detail"]
    assert folder["_"]["exit_code"] == 1
    secret = s["tokens"].client_secret
    assert secret not in json.dumps(r)  # no secret in the report


def test_check_text_output_names_the_unknown_mailbox(env, capsys, monkeypatch):
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", "[]")
    get_settings.cache_clear()
    assert main(["mailboxes", "check", "nope"]) == 1
    assert "no mailbox named nope" in capsys.readouterr().out


def test_admins_run_the_same_check_from_the_status_page(env, db, servers, monkeypatch):
    """GIVEN a working OAuth2 mailbox and one whose server port is closed WHEN an admin opens
    the mailbox check from the status page THEN each step shows with the certificate, the
    Sent folder found by SPECIAL-USE and the hint of the failed step; staff get 403; no secret
    is on the page."""
    from email_rag.wiring.services import Services
    from tests.webutil import browsers, web_app

    s = servers
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", json.dumps(
        [oauth_mailbox(s, "good"), oauth_mailbox(s, "tcp", port=free_port())]))
    monkeypatch.setenv("EMAIL_RAG_OAUTH_TOKEN_KEY", KEY)
    get_settings.cache_clear()
    settings = get_settings()
    svc = Services(settings)
    try:
        svc.oauth_tokens.authorize("good", s["tokens"].consent(USER))
    finally:
        svc.close()
    app = web_app(settings, db)
    with browsers(app, log_in=True) as new:
        admin = new("root")
        assert "/admin/mailboxes/check" in admin.get("/status").text
        html = admin.get("/admin/mailboxes/check").text
        assert "commonName=127.0.0.1" in html and "Sent Items" in html
        assert "imap tcp" in html and "failed" in html and "skipped" in html
        assert s["tokens"].client_secret not in html
        staff = new("anna")
        assert "/admin/mailboxes/check" not in staff.get("/status").text
        assert staff.get("/admin/mailboxes/check").status_code == 403
