"""An admin's first day in a real Chromium, on a fresh database with no mailbox environment
variable (issue 44, "Done when"): the set-up page creates the first admin through the
one-time link `email-rag setup` prints; the admin adds a password mailbox on the test
Dovecot (each check step shown) and an OAuth2 mailbox against a real authorization server
(panva's oidc-provider, started here; consent in the browser; Dovecot checks the tokens at
its introspection endpoint), starts the history import and watches it reach 100 %; a new
mail is drafted (the scripted LLM double). Then a revoked grant turns into a visible alarm
and a consent given again restores polling.

Real processes: `email-rag web`, `worker --with-vectors`, `scheduler`; real MariaDB, Redis,
Dovecot, SMTP relay double, node oidc-provider. Screenshots go to test-output/, and to
docs/images/ when DOC_SCREENSHOTS=1 (docs/mailboxes.md shows them).
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
from email_rag_harness.testing.dovecot import Dovecot
from email_rag_harness.testing.llm_server import ScriptedLLMServer
from email_rag_harness.testing.oidc_server import OIDC_DIR, OidcServer
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.db.oauth_tokens import TokenCipher
from tests.e2e.test_web_browser import CHROMIUM, OUT, browser  # noqa: F401 - the fixture
from tests.helpers import ROOT, run_cli, spawn, wait_for
from tests.webutil import serve_web

DOC_IMAGES = ROOT / "docs" / "images"
KEY = "first-day-token-key-0123456789abcdef"
ADMIN_PASSWORD = "first admin 2026!"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed"),
    pytest.mark.skipif(not (OIDC_DIR / "node_modules").is_dir(),
                       reason="oidc-provider is not installed (scripts/bootstrap.sh)"),
]


def old_mail(n: int, user: str) -> bytes:
    return (f"Message-ID: <hist-{n}-{user}>\r\nFrom: Kunde {n} <k{n}@customer.example>\r\n"
            f"To: {user}\r\nSubject: Alte Frage {n}\r\n"
            "Date: Mon, 02 Nov 2020 09:30:00 +0000\r\n\r\n"
            f"Eine alte Frage Nummer {n} zur Lieferung.\r\n").encode()


def new_mail(tag: str, user: str) -> bytes:
    when = email.utils.formatdate(time.time() + 300)  # after any cut-off of this test
    return (f"Message-ID: <{tag}@customer.example>\r\nFrom: Alice <alice@customer.example>\r\n"
            f"To: {user}\r\nSubject: Order 4711 has not arrived\r\nDate: {when}\r\n\r\n"
            "Hello, my order 4711 has not arrived. Where is my parcel?\r\nAlice\r\n").encode()


@pytest.fixture
def stack(env, tmp_path, db):
    relay = FaultSmtpServer().start()
    llm = ScriptedLLMServer().start()
    app_env = {**os.environ, **env, "PYTHONPATH": str(ROOT),
               "EMAIL_RAG_OAUTH_TOKEN_KEY": KEY, "EMAIL_RAG_WEB_SECRET_KEY": "first-day",
               "EMAIL_RAG_SMTP_PORT": str(relay.port), "EMAIL_RAG_SMTP_TIMEOUT": "30",
               "EMAIL_RAG_LLM_BASE_URL": llm.url, "EMAIL_RAG_LLM_TIMEOUT": "30",
               "EMAIL_RAG_HISTORY_IMPORT": "true", "EMAIL_RAG_POLL_INTERVAL_SECONDS": "1",
               "EMAIL_RAG_REDISPATCH_INTERVAL_SECONDS": "1", "EMAIL_RAG_IMAP_BACKOFF_BASE": "1",
               "EMAIL_RAG_IMAP_BACKOFF_CAP": "3", "EMAIL_RAG_LOG_LEVEL": "WARNING",
               "EMAIL_RAG_OAUTH_JOURNAL_DIR": str(tmp_path / "oauth-journal")}
    procs = []
    with serve_web(app_env, tmp_path) as base:
        oidc = OidcServer([base + "/admin/oauth/callback"], log_dir=tmp_path).start()
        dovecot = Dovecot(introspection_url=oidc.dovecot_introspection_url).start()

        class Stack:
            web, env, idp, mail, smtp, model = base, app_env, oidc, dovecot, relay, llm

            def start(self, *args: str):
                p = spawn(*args, env_extra=app_env, log=tmp_path / f"{args[0]}.log")
                procs.append(p)
                return p

        try:
            yield Stack()
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(5)
            dovecot.stop()
            oidc.stop()
            llm.stop()
            relay.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    p = context.new_page()
    p.set_default_timeout(60_000)  # subprocesses on a busy 2-core machine
    yield p
    context.close()


def shot(page, name: str, part: str = "") -> None:
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
    if os.environ.get("DOC_SCREENSHOTS") == "1":  # one screen, from ``part`` of the page
        if part:
            page.evaluate(f"window.scrollTo(0, document.querySelector('{part}')"
                          ".getBoundingClientRect().top + window.scrollY - 90)")
        page.screenshot(path=str(DOC_IMAGES / f"admin-{name}.png"))


def fill(page, values: dict[str, str]) -> None:
    for key, value in values.items():
        selector = "#f-" + key.replace(".", "-")
        if page.locator(selector).evaluate("e => e.tagName") == "SELECT":
            page.select_option(selector, value)
        else:
            page.fill(selector, value)


def history_of(page, base: str, name: str) -> str:
    page.goto(f"{base}/admin/mailboxes/{name}")
    return page.inner_text("#history")


def consent(page, login: str) -> None:
    """The provider's own login and consent pages (oidc-provider's development pages); the
    login page only while the browser has no session at the provider."""
    page.wait_for_selector("input[name=login], button[type=submit]:has-text('Continue')")
    if page.locator("input[name=login]").count():
        page.fill("input[name=login]", login)
        page.fill("input[name=password]", "any password: the provider's test login")
        page.click("button[type=submit]")
        page.wait_for_selector("button[type=submit]:has-text('Continue')")
    shot(page, "oauth-consent")
    page.click("button[type=submit]:has-text('Continue')")


def refresh_token_of(db, name: str) -> str:
    row = db.fetchone("SELECT refresh_token FROM oauth_tokens WHERE mailbox = %s", (name,))
    return TokenCipher(KEY).decrypt(row["refresh_token"])


def test_first_day_set_up_mailboxes_sign_in_import_history_and_a_drafted_mail(
        stack, page, db):
    base = stack.web
    assert "EMAIL_RAG_MAILBOXES" not in stack.env
    support = stack.mail.add_user(username="support@example.com")
    sales = stack.mail.add_user(username="sales@example.com")
    support.append_many([old_mail(i, support.username) for i in range(12)])
    sales.append_many([old_mail(i, sales.username) for i in range(5)])
    worker = stack.start("worker", "--with-vectors")
    stack.start("scheduler")

    # 1. an empty database: the set-up page, which asks for the CLI's one-time link
    page.goto(base + "/")
    assert page.url.endswith("/setup") and page.locator("#setup-needs-link").is_visible()
    out = run_cli("setup", "--base-url", base, "--json", env_extra=stack.env)
    link = json.loads(out.stdout)["data"]["link"]
    page.goto(link)
    shot(page, "setup-admin")
    page.fill("#setup-name", "root")
    page.fill("#setup-password", ADMIN_PASSWORD)
    page.fill("#setup-again", ADMIN_PASSWORD)
    page.click("#setup-create")
    page.wait_for_url("**/setup/next")
    assert "root" in page.inner_text("header")
    page.goto(link)  # the link worked once
    assert "/login" in page.url

    # 2. the password mailbox: each check step shown, saved, polled
    page.goto(base + "/setup/next")
    page.click("#setup-add-mailbox")
    page.wait_for_url("**/admin/mailboxes/new")
    page.fill("#f-name", "support")
    fill(page, {"host": support.host, "port": str(support.port), "security": "plain",
                "username": support.username, "password": support.password,
                "smtp.host": "127.0.0.1", "smtp.port": str(stack.smtp.port),
                "smtp.security": "plain", "team_name": "Acme Support"})
    shot(page, "mailbox-form")
    page.click("#save")
    page.wait_for_url("**/admin/mailboxes/support")
    steps = {r.get_attribute("data-step"): r.get_attribute("data-ok")
             for r in page.locator(".check-report tr.step").all()}
    assert steps["imap login"] == "True" and steps["folders"] == "True"
    assert steps["smtp"] == "True" and "False" not in steps.values(), steps
    assert support.password not in page.content()
    shot(page, "mailbox-saved")

    # 3. its history import: started from the page, watched to 100 %
    page.click("#poll-now")
    wait_for(lambda: "12 of 12 mails (100" in history_of(page, base, "support"), 240,
             what="the history import to reach 100 %")
    shot(page, "history-import", "#polling")

    # 4. the OAuth2 mailbox against the real authorization server: saved disabled (no
    # consent yet), signed in in the browser, checked, enabled
    page.goto(base + "/admin/mailboxes/new")
    page.fill("#f-name", "sales")
    fill(page, {"host": sales.host, "port": str(sales.port), "security": "plain",
                "username": sales.username, "auth": "xoauth2",
                "oauth.client_id": stack.idp.client_id,
                "oauth.client_secret": stack.idp.client_secret,
                "oauth.token_url": stack.idp.token_url,
                "oauth.authorize_url": stack.idp.authorize_url,
                "oauth.scopes": "openid, offline_access",
                "smtp.host": "127.0.0.1", "smtp.port": str(stack.smtp.port),
                "smtp.security": "plain", "smtp.auth": "password"})
    page.click("#save")
    assert page.locator('.check-report tr[data-step="imap login"]').get_attribute(
        "data-ok") == "False"
    assert "sign in" in page.inner_text('.check-report tr[data-step="imap login"]')
    fill(page, {"oauth.client_secret": stack.idp.client_secret})  # never shown back
    page.click("#save-disabled")
    page.wait_for_url("**/admin/mailboxes/sales")
    shot(page, "mailbox-oauth", "#polling")
    page.click("#oauth-sign-in")
    consent(page, sales.username)
    page.wait_for_url("**/admin/mailboxes/sales*")
    assert "Signed in" in page.inner_text(".flash") and "all steps ok" in page.inner_text(".flash")
    assert page.inner_text("#token-state") == "signed in"
    page.click("#enable")
    page.wait_for_url("**/admin/mailboxes/sales")
    wait_for(lambda: "5 of 5 mails (100" in history_of(page, base, "sales"), 240,
             what="the OAuth2 mailbox's history import")
    shot(page, "mailbox-oauth-signed-in", "#polling")

    # 5. a new mail is drafted
    support.append(new_mail("first-new", support.username))
    wait_for(lambda: db.fetchone(
        "SELECT d.id FROM drafts d JOIN emails e ON e.id = d.email_id WHERE e.message_id = "
        "'<first-new@customer.example>'"), 240, what="the new mail's draft")
    page.goto(base + "/queue")
    assert "Order 4711 has not arrived" in page.inner_text("body")
    page.goto(base + "/status")
    assert "12 of 12 mails" in page.inner_text("#history-imports")
    shot(page, "status")
    assert worker.poll() is None


def test_revoked_consent_is_an_alarm_and_consenting_again_restores_polling(stack, page, db):
    base = stack.web
    sales = stack.mail.add_user(username="sales@example.com")
    from email_rag.auth import users

    users.add_user(db, "root", "admin", ADMIN_PASSWORD, "test")
    added = run_cli("mailboxes", "add", "sales", "--host", sales.host, "--port",
                    str(sales.port), "--security", "plain", "--username", sales.username,
                    "--auth", "xoauth2", "--oauth-client-id", stack.idp.client_id,
                    "--oauth-client-secret", stack.idp.client_secret, "--oauth-token-url",
                    stack.idp.token_url, "--oauth-authorize-url", stack.idp.authorize_url,
                    "--oauth-scopes", "openid,offline_access", "--no-check",
                    env_extra=stack.env)
    assert added.returncode == 0, added.stdout + added.stderr
    stack.start("worker", "--with-vectors")
    stack.start("scheduler")
    page.goto(base + "/login")
    page.fill("input[name=name]", "root")
    page.fill("input[name=password]", ADMIN_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/queue")
    page.goto(base + "/admin/mailboxes/sales")
    page.click("#oauth-sign-in")
    consent(page, sales.username)
    page.wait_for_url("**/admin/mailboxes/sales*")
    sales.append(new_mail("before-revoke", sales.username))
    wait_for(lambda: stored(db, "before-revoke"), 120, what="polling with the token")

    # the user withdraws the consent at the provider: the whole grant is revoked
    stack.idp.revoke(refresh_token_of(db, "sales"))
    sales.append(new_mail("while-revoked", sales.username))
    wait_for(lambda: db.fetchone("SELECT status FROM oauth_tokens WHERE mailbox = 'sales' "
                                 "AND status = 'needs_authorization'"), 120,
             what="the refused refresh to be recorded")
    page.goto(base + "/status")
    row = page.inner_text("#oauth-health tr[data-mailbox=sales]")
    assert "ALARM" in row and "invalid_grant" in row, row
    shot(page, "status-revoked")
    page.goto(base + "/admin/mailboxes/sales")
    assert page.inner_text("#token-state") == "sign in again"
    assert "invalid_grant" in page.inner_text("#token-error")
    assert not stored(db, "while-revoked")

    # consent again: polling resumes from the cursor, the mail of meanwhile arrives once
    page.click("#oauth-sign-in")
    consent(page, sales.username)
    page.wait_for_url("**/admin/mailboxes/sales*")
    assert page.inner_text("#token-state") == "signed in"
    wait_for(lambda: stored(db, "while-revoked"), 120, what="polling after the new consent")
    page.goto(base + "/status")
    assert "ALARM" not in page.inner_text("#oauth-health tr[data-mailbox=sales]")
    events = [r["event"] for r in db.fetchall(
        "SELECT event FROM audit_log WHERE entity_type = 'mailbox' AND entity_id = 'sales' "
        "AND event LIKE 'oauth_%' ORDER BY id")]
    assert events[:1] == ["oauth_authorized"] and "oauth_refresh_failed" in events
    assert events[-1] == "oauth_authorized" or "oauth_authorized" in events[2:]
    assert re.search(r"user:root", json.dumps(db.fetchall(
        "SELECT actor FROM audit_log WHERE event = 'oauth_authorized'"), default=str))


def stored(db, tag: str) -> bool:
    return db.fetchone("SELECT id FROM emails WHERE message_id = %s",
                       (f"<{tag}@customer.example>",)) is not None
