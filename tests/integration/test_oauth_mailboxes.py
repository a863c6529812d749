"""OAuth2 mailboxes against real servers: Dovecot with TLS and an ``oauth2`` passdb whose
introspection URL is a local token server the test runs, and aiosmtpd with TLS and AUTH
XOAUTH2 / OAUTHBEARER checking tokens against the same server. No protocol is mocked."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import mariadb
import pytest
from pydantic import SecretStr

from email_rag.adapters.imap import ImapMailbox
from email_rag.adapters.oauth2 import ClientCredentialsSource, OAuthClient
from email_rag.adapters.smtp import SmtpConfig, SmtpSender
from email_rag.core.errors import SmtpTransientError
from email_rag.core.settings import MailboxConfig, OAuthConfig, SmtpIdentity
from email_rag.ops.health import counts
from tests.integration.ingest_helpers import emails, events, services_for
from tests.mailtls import TestCA, TlsDovecot, TlsSmtpServer, TokenServer

USER = "support@example.com"
KEY = "test-key-for-oauth-tokens-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def raw_mail(n: int) -> bytes:
    return (f"Message-ID: <oauth-{n}@customer.example>\r\nFrom: Alice <alice@customer.example>"
            f"\r\nTo: {USER}\r\nSubject: Question {n}\r\nDate: Tue, 1 Dec 2026 10:00:00 +0000"
            f"\r\n\r\nHello, question number {n}.\r\n").encode()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    ca = TestCA(tmp_path_factory.mktemp("pki"))
    return ca, ca.issue(["127.0.0.1"])


@pytest.fixture
def tokens():
    server = TokenServer().start()
    yield server
    server.stop()


@pytest.fixture
def dovecot(pki, tokens):
    with TlsDovecot(pki[1], tokens) as d:
        d.add_user(USER, "password-for-appends")
        yield d


def config(dovecot, pki, tokens, auth="xoauth2", smtp=None, **kw) -> MailboxConfig:
    return MailboxConfig(
        name="support", host="127.0.0.1", port=dovecot.tls_port, security="tls",
        ca_file=str(pki[0].ca_file), username=USER, auth=auth, smtp=smtp,
        oauth=OAuthConfig(token_url=tokens.token_url, client_id=tokens.client_id,
                          client_secret=SecretStr(tokens.client_secret)), **kw)


def by_password(dovecot, pki) -> ImapMailbox:
    return ImapMailbox(MailboxConfig(name="appender", host="127.0.0.1", port=dovecot.port,
                                     security="starttls", ca_file=str(pki[0].ca_file),
                                     username=USER, password=SecretStr("password-for-appends")),
                       10)


@pytest.fixture
def make_svc(settings, tmp_path):
    made = []

    def make(*configs, **overrides):
        svc = services_for(settings, *configs, oauth_token_key=SecretStr(KEY),
                           oauth_journal_dir=tmp_path / "oauth-journal", **overrides)
        made.append(svc)
        return svc

    yield make
    for svc in made:
        svc.close()


@pytest.mark.parametrize("auth", ["xoauth2", "oauthbearer"])
def test_imap_login_by_oauth2_reuses_the_access_token(dovecot, pki, tokens, make_svc, auth):
    cfg = config(dovecot, pki, tokens, auth=auth)
    svc = make_svc(cfg)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    for _ in range(3):
        with svc.imap_mailbox(cfg) as imap:
            assert imap.select("INBOX").uidvalidity > 0
    assert tokens.refreshes() == 1  # one refresh, then the cached token: never one per login
    stored = svc.oauth_tokens.get("support")
    assert stored.access_token and stored.access_expires_at > time.time() + 3000
    row = svc.db.fetchone("SELECT refresh_token, access_token FROM oauth_tokens")
    assert b"rt-" not in bytes(row["refresh_token"]) and b"at-" not in bytes(row["access_token"])


def test_a_wrong_token_is_refused_by_dovecot(dovecot, pki, tokens, make_svc):
    cfg = config(dovecot, pki, tokens)

    class Forged:
        def access_token(self):
            return "at-forged"

        def invalidate(self, token):
            self.dropped = token

    forged = Forged()
    from email_rag.core.errors import ImapAuthError

    with pytest.raises(ImapAuthError, match="xoauth2"):
        ImapMailbox(cfg, 10, forged).connect()
    assert forged.dropped == "at-forged"  # the refused token is not offered again


def test_an_expired_access_token_is_refreshed_before_use(dovecot, pki, tokens, make_svc):
    tokens.lifetime = 4
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg, oauth_refresh_skew_seconds=2.0)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    with svc.imap_mailbox(cfg) as imap:
        imap.select("INBOX")
    assert tokens.refreshes() == 1
    time.sleep(2.2)  # within the skew of its expiry: renewed before it is offered
    with svc.imap_mailbox(cfg) as imap:
        imap.select("INBOX")
    assert tokens.refreshes() == 2
    # a second process (new Services) reuses the stored token instead of refreshing
    with make_svc(cfg, oauth_refresh_skew_seconds=2.0).imap_mailbox(cfg) as imap:
        imap.select("INBOX")
    assert tokens.refreshes() == 2


def test_polls_reuse_one_token(dovecot, pki, tokens, make_svc):
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    with by_password(dovecot, pki) as imap:
        imap.append("INBOX", raw_mail(1))
    for _ in range(4):
        assert svc.poller().poll(force=True).mailboxes[0].status == "ok"
    assert tokens.refreshes() == 1
    assert len(emails(svc.db, "id")) == 1


def test_revoked_consent_is_an_alarm_and_polling_resumes_after_reauthorization(
        dovecot, pki, tokens, make_svc, monkeypatch):
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    with by_password(dovecot, pki) as imap:
        imap.append("INBOX", raw_mail(1))
    assert svc.poller().poll().mailboxes[0].status == "ok"

    tokens.revoke(USER)  # consent withdrawn: access and refresh tokens are dead
    with by_password(dovecot, pki) as imap:
        imap.append("INBOX", raw_mail(2))
    refused = svc.poller().poll(force=True).mailboxes[0]  # the cached token: refused, dropped
    assert refused.status == "failed" and "login (xoauth2)" in refused.error
    failed = svc.poller().poll(force=True).mailboxes[0]  # the refresh: invalid_grant
    assert failed.status == "failed" and failed.needs_attention
    assert "invalid_grant" in failed.error and "mailboxes authorize support" in failed.error
    mailbox = counts(svc).mailboxes[0]
    assert mailbox.alarm and "mailboxes authorize support" in (mailbox.last_error or "")
    audit = events(svc.db, "oauth_refresh_failed")
    assert len(audit) == 1 and "email-rag mailboxes authorize support" in audit[0]["detail"]
    assert svc.oauth_tokens.get("support").status == "needs_authorization"
    second = svc.poller().poll(force=True).mailboxes[0]  # backoff goes on, still an ALARM
    assert second.status == "failed" and second.consecutive_failures == 3

    # the admin authorizes again with the real command (authorization-code flow)
    code = tokens.issue_code(USER)
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"http://localhost/?code={code}\n"))
    from email_rag.cli import main

    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", "[" + cfg.model_dump_json().replace(
        '"client_secret":"**********"', f'"client_secret":"{tokens.client_secret}"') + "]")
    monkeypatch.setenv("EMAIL_RAG_OAUTH_TOKEN_KEY", KEY)
    from email_rag.core.settings import get_settings

    get_settings.cache_clear()
    assert main(["mailboxes", "authorize", "support"]) == 0
    assert svc.oauth_tokens.get("support").status == "authorized"
    assert len(events(svc.db, "oauth_authorized")) == 2

    resumed = svc.poller().poll(force=True).mailboxes[0]
    assert resumed.status == "ok"
    ids = [r["message_id"] for r in emails(svc.db, "message_id")]
    assert sorted(ids) == ["<oauth-1@customer.example>", "<oauth-2@customer.example>"]
    assert not counts(svc).mailboxes[0].alarm


def test_token_endpoint_down_is_transient_and_changes_nothing(dovecot, pki, tokens, make_svc):
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    tokens.down = True
    result = svc.poller().poll().mailboxes[0]
    assert result.status == "failed" and not result.needs_attention
    assert "503" in result.error
    assert svc.oauth_tokens.get("support").status == "authorized"
    tokens.down = False
    assert svc.poller().poll(force=True).mailboxes[0].status == "ok"


@pytest.mark.parametrize(("status", "retry_after", "waited"), [(429, "7", 7.0),
                                                                (503, "900", 60.0)])
def test_a_token_endpoint_that_asks_to_wait_is_waited_capped_and_audited(
        dovecot, pki, tokens, make_svc, status, retry_after, waited):
    """GIVEN an authorized mailbox WHEN the token endpoint answers its refresh once with
    429 / 503 and Retry-After THEN the refresh waits that long (cut to
    ``oauth_max_retry_after``, 60 s), asks again and the IMAP login succeeds; the wait is
    audited on the mailbox (the endpoint, the status, Retry-After and the wait; no token)."""
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    tokens.throttle.append((status, retry_after))
    slept: list[float] = []
    svc.token_source("support").sleep = slept.append
    with svc.imap_mailbox(cfg) as imap:
        assert imap.select("INBOX").uidvalidity > 0
    assert slept == [waited]  # the server's wait, not the poll's backoff
    assert tokens.refreshes() == 2
    [event] = events(svc.db, "oauth_retry_after", "mailbox")
    assert event["entity_id"] == "support"
    assert json.loads(event["detail"]) == {
        "endpoint": tokens.token_url, "status": status, "retry_after_s": float(retry_after),
        "wait_s": waited}


CRASHING_CLIENT = """
import sys
from email_rag.core.settings import get_settings
from email_rag.wiring.services import Services
svc = Services(get_settings())
print(svc.token_source("support").access_token()[:3], flush=True)
"""


def test_a_rotated_refresh_token_survives_a_crash_between_receiving_and_storing(
        dovecot, pki, tokens, make_svc, env, monkeypatch, tmp_path):
    """The strictest provider: a refresh token is dead the moment it is rotated. The client
    process is SIGKILLed after the new one arrived and before MariaDB stored it (the test
    holds the row lock, so the store waits); the next process must still log in."""
    tokens.rotate = tokens.strict_rotation = True
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg)
    first = tokens.consent(USER)
    svc.oauth_tokens.authorize("support", first)
    journal = tmp_path / "oauth-journal"

    blocker = mariadb.connect(host="127.0.0.1", port=3306, user="root", password="",
                              database=env["EMAIL_RAG_DB_NAME"], autocommit=False)
    locked = threading.Event()

    def hold_row(params):  # the refresh request arrived: lock the row before answering
        blocker.cursor().execute("SELECT * FROM oauth_tokens WHERE mailbox = 'support' "
                                 "FOR UPDATE")
        locked.set()

    tokens.on_token = hold_row
    child_env = {**os.environ, "EMAIL_RAG_MAILBOXES": "[" + cfg.model_dump_json().replace(
        '"client_secret":"**********"', f'"client_secret":"{tokens.client_secret}"') + "]",
        "EMAIL_RAG_OAUTH_TOKEN_KEY": KEY, "EMAIL_RAG_OAUTH_JOURNAL_DIR": str(journal)}
    child = subprocess.Popen([sys.executable, "-c", CRASHING_CLIENT], env=child_env,
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert locked.wait(30), child.stderr.read() if child.poll() is not None else ""
        deadline = time.monotonic() + 20
        while not any(journal.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(journal.glob("*.json")), "the rotated token never reached the journal"
        time.sleep(0.3)  # the child now waits on the row lock to store it
        assert child.poll() is None
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
        blocker.rollback()
        blocker.close()
    tokens.on_token = None
    stored = svc.oauth_tokens.get("support")
    assert stored.refresh_token == first and stored.generation == 1  # the crash: not stored
    assert tokens.grants[first].revoked  # ... and the provider already killed the old one

    restarted = make_svc(cfg)
    with restarted.imap_mailbox(cfg) as imap:  # settles the journal, then logs in
        imap.select("INBOX")
    after = restarted.oauth_tokens.get("support")
    assert after.generation >= 2 and not tokens.grants[after.refresh_token].revoked
    assert not any(journal.glob("*.json"))
    assert events(restarted.db, "oauth_refresh_token_rotated")


@pytest.mark.parametrize("auth", ["xoauth2", "oauthbearer"])
def test_smtp_login_by_oauth2_over_starttls(pki, tokens, auth, tmp_path):
    client = OAuthClient(tokens.token_url, tokens.client_id, tokens.client_secret)
    source = ClientCredentialsSource(client)
    with TlsSmtpServer(pki[1], "starttls", tokens) as server:
        sender = SmtpSender(SmtpConfig("127.0.0.1", server.port, USER, timeout=5,
                                       security="starttls", ca_file=str(pki[0].ca_file),
                                       auth=auth, tokens=source))
        for n in range(2):
            assert sender.send(raw_mail(n), USER, ["alice@customer.example"]).startswith("250")
    assert [a[0] for a in server.auths] == [auth.upper()] * 2 and all(a[2] for a in server.auths)
    assert len(server.received) == 2 and source.refreshes == 1


def test_smtp_with_a_refused_token_is_transient_and_fetches_a_new_one(pki, tokens):
    client = OAuthClient(tokens.token_url, tokens.client_id, tokens.client_secret)
    source = ClientCredentialsSource(client)
    with TlsSmtpServer(pki[1], "tls", tokens) as server:
        sender = SmtpSender(SmtpConfig("127.0.0.1", server.port, USER, timeout=5,
                                       security="tls", ca_file=str(pki[0].ca_file),
                                       auth="xoauth2", tokens=source))
        sender.send(raw_mail(1), USER, ["a@customer.example"])
        tokens.expire_access_tokens()  # the server no longer accepts the cached token
        with pytest.raises(SmtpTransientError, match="refused the OAuth2 token"):
            sender.send(raw_mail(2), USER, ["a@customer.example"])
        assert sender.send(raw_mail(3), USER, ["a@customer.example"]).startswith("250")
    assert source.refreshes == 2 and len(server.received) == 2


def test_two_mailboxes_reply_through_their_own_smtp_identity(dovecot, pki, tokens, make_svc):
    with TlsSmtpServer(pki[1], "starttls", tokens) as first, \
            TlsSmtpServer(pki[1], "tls", None, size_limit=5_000_000) as second:
        a = config(dovecot, pki, tokens, smtp=SmtpIdentity(
            host="127.0.0.1", port=first.port, security="starttls",
            ca_file=str(pki[0].ca_file)), address="support@example.com")
        b = MailboxConfig(name="sales", host="127.0.0.1", port=dovecot.port,
                          security="starttls", ca_file=str(pki[0].ca_file), username=USER,
                          password=SecretStr("pw"), address="sales@example.com",
                          smtp=SmtpIdentity(host="127.0.0.1", port=second.port,
                                            security="tls", ca_file=str(pki[0].ca_file)))
        svc = make_svc(a, b)
        svc.oauth_tokens.authorize("support", tokens.consent(USER))
        svc.mail_sender_for("support").send(raw_mail(1), "support@example.com", ["x@c.example"])
        svc.mail_sender_for("sales").send(raw_mail(2), "sales@example.com", ["y@c.example"])
        assert svc.mail_sender_for("nobody") is svc.mail_sender  # unknown: the global relay
    assert [r[0] for r in first.received] == ["support@example.com"]
    assert [r[0] for r in second.received] == ["sales@example.com"]
    assert first.auths and first.auths[0][:2] == ("XOAUTH2", USER)


def test_authorize_by_device_code_then_idle_and_poll_with_the_token(
        dovecot, pki, tokens, make_svc, monkeypatch, capsys):
    cfg = config(dovecot, pki, tokens).model_copy(update={"oauth": OAuthConfig(
        token_url=tokens.token_url, device_url=tokens.url + "/device",
        client_id=tokens.client_id, client_secret=SecretStr(tokens.client_secret))})
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", json.dumps([{
        **cfg.model_dump(mode="json"), "oauth": {
            **cfg.oauth.model_dump(mode="json"), "client_secret": tokens.client_secret}}]))
    monkeypatch.setenv("EMAIL_RAG_OAUTH_TOKEN_KEY", KEY)
    from email_rag.cli import main
    from email_rag.core.settings import get_settings

    get_settings.cache_clear()

    def consent_when_asked():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not tokens.devices:
            time.sleep(0.05)
        for user_code, _ in list(tokens.devices.values()):
            tokens.approve_device(user_code, USER)

    helper = threading.Thread(target=consent_when_asked)
    helper.start()
    assert main(["mailboxes", "authorize", "support", "--device"]) == 0
    helper.join()
    user_code = next(iter(tokens.devices.values()))[0]
    assert user_code in capsys.readouterr().err  # what the admin types at the page
    svc = make_svc(cfg)
    session = svc.idle_session(cfg, "INBOX", 10)
    try:
        assert session.start()  # IDLE over TLS, logged in by XOAUTH2
        with by_password(dovecot, pki) as imap:
            imap.append("INBOX", raw_mail(7))
        deadline = time.monotonic() + 10
        while not session.wait(0.5).new_mail and time.monotonic() < deadline:
            pass
        assert time.monotonic() < deadline
    finally:
        session.close()
    assert svc.poller().poll().mailboxes[0].status == "ok"
    assert [r["message_id"] for r in emails(svc.db, "message_id")] == [
        "<oauth-7@customer.example>"]
    assert tokens.refreshes() == 0  # the token granted at authorization is reused


def test_an_idle_refresh_token_is_renewed_by_the_scheduler_before_it_expires(
        dovecot, pki, tokens, make_svc):
    """A mailbox whose refresh token was last used longer ago than oauth_renew_idle_days gets
    a refresh from the scheduler's periodic job even though no poll needed one (Microsoft
    ends refresh tokens unused for 90 days). The store's timestamps are moved back."""
    from email_rag.runtime.scheduler import periodic_jobs

    tokens.rotate = True
    cfg = config(dovecot, pki, tokens)
    svc = make_svc(cfg, oauth_renew_idle_days=14.0)
    svc.oauth_tokens.authorize("support", tokens.consent(USER))
    with svc.imap_mailbox(cfg) as imap:
        imap.select("INBOX")
    assert tokens.refreshes() == 1
    [renew] = [fn for name, _s, fn in periodic_jobs(svc) if name == "oauth_renew_idle"]
    assert renew() == {"support": "not due"} and tokens.refreshes() == 1
    before = svc.oauth_tokens.get("support")

    svc.db.execute("UPDATE oauth_tokens SET authorized_at = authorized_at - INTERVAL 15 DAY, "
                   "refreshed_at = refreshed_at - INTERVAL 15 DAY")
    assert renew() == {"support": "renewed"} and tokens.refreshes() == 2
    after = svc.oauth_tokens.get("support")
    assert after.generation == before.generation + 1  # the rotated refresh token is stored
    assert after.refresh_token != before.refresh_token
    assert renew() == {"support": "not due"} and tokens.refreshes() == 2  # once, not per run

    svc.db.execute("UPDATE oauth_tokens SET authorized_at = authorized_at - INTERVAL 15 DAY, "
                   "refreshed_at = refreshed_at - INTERVAL 15 DAY")
    tokens.revoke(USER)  # a refused renewal is the same ALARM + audit as in a poll
    assert renew()["support"].startswith("failed: ")
    assert svc.oauth_tokens.get("support").status == "needs_authorization"
    assert svc.db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE event = "
                           "'oauth_refresh_failed'")["n"] == 1
    assert renew() == {"support": "not due"}  # needs authorization: not asked again here
    assert tokens.refreshes() == 3


@pytest.mark.parametrize("auth", ["xoauth2", "oauthbearer"])
def test_imap_login_with_client_credentials_app_only_access(dovecot, pki, tokens, make_svc,
                                                              auth):
    """Microsoft 365 app-only access: the token of the app (client credentials grant, no
    admin consent stored) logs in to the mailbox granted to the app, checked by Dovecot's
    oauth2 passdb; the token is reused; a mailbox not granted to the app is refused."""
    from email_rag.core.errors import ImapAuthError

    tokens.app_users = {USER}
    cfg = config(dovecot, pki, tokens, auth=auth).model_copy(deep=True)
    cfg.oauth.grant = "client_credentials"
    svc = make_svc(cfg)
    for _ in range(2):
        with svc.imap_mailbox(cfg) as imap:
            assert imap.select("INBOX").uidvalidity > 0
    grants = [r["grant_type"] for r in tokens.requests]
    assert grants == ["client_credentials"]  # one token, reused; no refresh token anywhere
    assert svc.oauth_tokens.get("support") is None

    dovecot.add_user("other@example.com", "pw-other")
    other = cfg.model_copy(update={"username": "other@example.com"})
    with pytest.raises(ImapAuthError, match="refused"):
        ImapMailbox(other, 10, svc.token_source("support")).connect()
