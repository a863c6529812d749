"""Mailbox settings: provider presets, transport security, OAuth2 helpers (pure logic)."""

from __future__ import annotations

import base64

import pytest

from email_rag.adapters.oauth2 import (
    OAuthClient,
    authorization_url,
    code_from,
    pkce_pair,
    sasl_oauthbearer,
    sasl_xoauth2,
)
from email_rag.core.errors import OAuthGrantError
from email_rag.core.settings import MailboxConfig


def test_microsoft365_preset_fills_hosts_security_and_endpoints():
    mb = MailboxConfig(name="s", provider="microsoft365", username="support@contoso.com",
                       oauth={"client_id": "abc", "tenant": "contoso.onmicrosoft.com"})
    assert (mb.host, mb.port, mb.mode, mb.auth) == ("outlook.office365.com", 993, "tls",
                                                    "xoauth2")
    assert (mb.smtp.host, mb.smtp.port, mb.smtp.security) == ("smtp.office365.com", 587,
                                                              "starttls")
    assert mb.oauth.token_url == ("https://login.microsoftonline.com/contoso.onmicrosoft.com/"
                                  "oauth2/v2.0/token")
    assert "https://outlook.office.com/IMAP.AccessAsUser.All" in mb.oauth.scopes
    assert "offline_access" in mb.oauth.scopes and mb.provider_files_sent


def test_microsoft365_app_only_access_asks_for_the_default_scope():
    mb = MailboxConfig(name="s", provider="microsoft365", username="support@contoso.com",
                       oauth={"client_id": "abc", "tenant": "t-id",
                              "grant": "client_credentials"})
    assert mb.oauth.scopes == ["https://outlook.office365.com/.default"]


def test_gmail_preset_and_an_explicit_value_wins():
    mb = MailboxConfig(name="g", provider="gmail", username="help@example.com",
                       sent_folder="[Gmail]/Sent Mail", smtp={"host": "smtp.gmail.com",
                                                              "port": 587},
                       oauth={"client_id": "x"})
    assert (mb.host, mb.mode, mb.oauth.scopes) == ("imap.gmail.com", "tls",
                                                   ["https://mail.google.com/"])
    assert (mb.smtp.port, mb.smtp.security) == (587, "auto")
    assert mb.sent_folder == "[Gmail]/Sent Mail"


def test_oauth_login_without_oauth_settings_is_refused():
    with pytest.raises(ValueError, match="needs an 'oauth' section"):
        MailboxConfig(name="x", host="imap.example.org", username="u", auth="xoauth2")


@pytest.mark.parametrize("host,port,ssl,security,mode", [
    ("127.0.0.1", 143, False, "auto", "starttls"),
    ("localhost", 143, False, "auto", "starttls"),
    ("127.0.0.1", 993, False, "auto", "tls"),
    ("127.0.0.1", 143, False, "plain", "plain"),
    ("imap.example.org", 143, False, "auto", "starttls"),
    ("imap.example.org", 993, False, "auto", "tls"),
    ("imap.example.org", 1993, True, "auto", "tls"),
    ("127.0.0.1", 143, False, "starttls", "starttls"),
])
def test_the_security_in_force(host, port, ssl, security, mode):
    mb = MailboxConfig(name="x", host=host, port=port, ssl=ssl, security=security, username="u")
    assert mb.mode == mode


def test_sasl_initial_responses():
    assert sasl_xoauth2("a@b.c", "T") == "user=a@b.c\x01auth=Bearer T\x01\x01"
    assert sasl_oauthbearer("a,=b@c", "T") == "n,a=a=2C=3Db@c,\x01auth=Bearer T\x01\x01"


def test_authorization_url_carries_pkce_and_the_pasted_redirect_gives_the_code():
    verifier, challenge = pkce_pair()
    import hashlib

    assert base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode(
    ).rstrip("=") == challenge
    url = authorization_url("https://login.example/authorize", OAuthClient(
        "https://login.example/token", "cid", scopes=("a", "b")), "http://localhost", "st-1",
        challenge, login_hint="x@y.z")
    assert "code_challenge_method=S256" in url and "scope=a+b" in url and "state=st-1" in url
    assert code_from("http://localhost/?code=C0DE&state=st-1", "st-1") == "C0DE"
    assert code_from("  C0DE \n") == "C0DE"
    with pytest.raises(OAuthGrantError, match="another authorization"):
        code_from("http://localhost/?code=C0DE&state=other", "st-1")
    with pytest.raises(OAuthGrantError, match="access_denied"):
        code_from("http://localhost/?error=access_denied&code=&state=st-1", "st-1")


def test_the_global_relay_refuses_plaintext_to_a_remote_host(monkeypatch):
    from email_rag.core.settings import Settings

    monkeypatch.setenv("EMAIL_RAG_SMTP_HOST", "relay.example.org")
    monkeypatch.setenv("EMAIL_RAG_SMTP_SECURITY", "plain")
    with pytest.raises(ValueError, match="plaintext is allowed only for a loopback host"):
        Settings()
    monkeypatch.setenv("EMAIL_RAG_SMTP_SECURITY", "auto")
    assert Settings().smtp_security == "auto"
