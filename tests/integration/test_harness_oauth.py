"""The harness's own OAuth2 mailbox (what every chaos run logs in with): the private Dovecot
with an ``oauth2`` passdb checks XOAUTH2 bearer tokens at the harness's token server; the
product's refresh-token source logs in, a 503 from the token endpoint is transient, a revoked
consent is refused (``invalid_grant``), and a new consent lets the mailbox in again."""

from __future__ import annotations

import time

import pytest
from email_rag_harness.testing.dovecot import Dovecot
from email_rag_harness.testing.oauth_server import TokenServer
from pydantic import SecretStr

from email_rag.core.errors import ImapError, ImapOAuthError
from email_rag.core.settings import MailboxConfig, OAuthConfig
from tests.integration.ingest_helpers import services_for

KEY = "harness-oauth-test-key-0123456789"


@pytest.fixture
def served():
    tokens = TokenServer(lifetime=3).start()
    dovecot = Dovecot(introspection_url=tokens.url + "/introspect").start()
    try:
        yield tokens, dovecot
    finally:
        dovecot.stop()
        tokens.stop()


def test_the_harness_mailbox_logs_in_by_xoauth2_and_survives_a_revoked_consent(
        served, settings, tmp_path):
    tokens, dovecot = served
    user = dovecot.add_user()
    cfg = MailboxConfig(name="support", host=dovecot.host, port=dovecot.port, security="plain",
                        username=user.username, auth="xoauth2",
                        oauth=OAuthConfig(token_url=tokens.token_url, client_id=tokens.client_id,
                                          client_secret=SecretStr(tokens.client_secret)))
    svc = services_for(settings, cfg, oauth_token_key=SecretStr(KEY),
                       oauth_journal_dir=tmp_path / "journal", oauth_refresh_skew_seconds=2.0)
    try:
        svc.oauth_tokens.authorize("support", tokens.consent(user.username))
        with svc.imap_mailbox(cfg) as imap:
            assert imap.select("INBOX").uidvalidity > 0
        assert tokens.refreshes(user=user.username) == 1

        time.sleep(1.2)  # 3 s tokens renewed 2 s before expiry: due now, the endpoint is down
        tokens.down = True
        with pytest.raises(ImapError, match="no OAuth2 token.*503"):
            svc.imap_mailbox(cfg).connect()
        tokens.down = False

        tokens.revoke(user.username)
        with pytest.raises(ImapOAuthError, match="invalid_grant.*mailboxes authorize support"):
            svc.imap_mailbox(cfg).connect()
        assert svc.oauth_tokens.get("support").status == "needs_authorization"

        svc.oauth_tokens.authorize("support", tokens.consent(user.username))
        with svc.imap_mailbox(cfg) as imap:
            assert imap.select("INBOX").uidvalidity > 0
    finally:
        svc.close()
