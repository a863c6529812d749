"""The failure tables of the mailbox admin, a test per row: db/mailbox_configs.py,
ops/mailbox_admin.py, web/views_mailboxes.py (OAuth2 sign-in), ingest/history_import.py,
auth/first_start.py. Real MariaDB, Dovecot, a real token endpoint."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from email_rag_harness.testing.oauth_server import TokenServer

from email_rag.auth import first_start
from email_rag.cli import main
from email_rag.core.errors import BadInputError, ConfigError, DatabaseUnavailableError
from email_rag.core.settings import get_settings
from email_rag.db import Database
from email_rag.db.mailbox_configs import MailboxConfigStore, MailboxDirectory
from email_rag.db.oauth_tokens import TokenCipher
from email_rag.ingest import history_import
from email_rag.wiring.services import Services
from tests.integration.test_mailboxes_kept_in_mariadb_checked_and_audited import (  # noqa: F401
    KEY,
    keyed,  # the fixture
)
from tests.webutil import browsers, web_app


def raw_of(box, **more) -> dict:
    return {"host": box.host, "port": box.port, "security": "plain",
            "username": box.username, "password": box.password, **more}


def test_a_row_the_key_cannot_open_is_shown_with_its_problem_and_not_polled(keyed, db,
                                                                           dovecot):
    """GIVEN two stored mailboxes WHEN the token key changes THEN each entry says it cannot be
    decrypted and is not polled; a mailbox without secrets is polled on."""
    a, b = dovecot.add_user(), dovecot.add_user()
    MailboxConfigStore(db, lambda: TokenCipher(KEY)).add(a.name, raw_of(a), True, "test")
    MailboxConfigStore(db, lambda: TokenCipher(KEY)).add(
        b.name, {**raw_of(b), "password": None}, True, "test")
    other = MailboxDirectory([], MailboxConfigStore(db, lambda: TokenCipher("another-key-"
                                                                            "0123456789")), 0)
    by_name = {e.name: e for e in other.entries()}
    assert "cannot be decrypted" in by_name[a.name].problem and not by_name[a.name].polled
    assert [c.name for c in other.active()] == [b.name]


def test_mariadb_down_writes_nothing(keyed, db, mailbox):
    dead = Database(host="127.0.0.1", port=9, user="root", password="", database=db.database,
                    connect_timeout=2)
    with pytest.raises(DatabaseUnavailableError):
        MailboxConfigStore(dead, lambda: TokenCipher(KEY)).add(mailbox.name, raw_of(mailbox),
                                                               True, "test")
    assert db.fetchone("SELECT COUNT(*) n FROM mailbox_configs")["n"] == 0


def test_invalid_settings_are_refused_naming_the_setting(keyed, db, mailbox, capsys):
    """Plain text to a remote host, a missing login: nothing saved, the setting named."""
    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["mailboxes", "add", mailbox.name, "--host", "imap.example.com",
                 "--security", "plain", "--username", "x", "--no-check", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and "plain" in out["message"] and "loopback" in out["message"]
    with pytest.raises(ConfigError, match="username"):
        Services(get_settings()).mailboxes.store.add(mailbox.name, {"host": "127.0.0.1"},
                                                     True, "test")
    assert db.fetchone("SELECT COUNT(*) n FROM mailbox_configs")["n"] == 0


@pytest.fixture
def signing_in(keyed, db, mailbox):
    """A mailbox on the refresh-token grant against a real token endpoint, and an admin's
    browser that started its sign-in (the state is in its session)."""
    tokens = TokenServer().start()
    Services(get_settings()).mailboxes.store.add(mailbox.name, {
        **raw_of(mailbox, password=None), "auth": "xoauth2", "oauth": {
            "token_url": tokens.token_url, "client_id": tokens.client_id,
            "client_secret": tokens.client_secret,
            "authorize_url": tokens.url + "/authorize"}}, False, "test")
    app = web_app(get_settings(), db)
    with browsers(app, log_in=True) as new:
        admin = new("root")
        started = admin.get(f"/admin/mailboxes/{mailbox.name}/oauth", follow_redirects=False)
        assert started.status_code == 303
        query = parse_qs(urlsplit(started.headers["location"]).query)
        assert query["code_challenge_method"] == ["S256"] and query["redirect_uri"] == [
            "http://testserver/admin/oauth/callback"]
        yield admin, query["state"][0], tokens
    tokens.stop()


def token_rows(db) -> int:
    return db.fetchone("SELECT COUNT(*) n FROM oauth_tokens")["n"]


def test_a_callback_without_its_state_stores_nothing(signing_in, db):
    admin, state, tokens = signing_in
    r = admin.get("/admin/oauth/callback", params={"state": "forged", "code": "x"})
    assert r.status_code == 400 and "not started from this session" in r.text
    again = admin.get("/admin/oauth/callback", params={"state": state, "code": "x"})
    assert again.status_code == 400  # the state was used up by the first try
    assert token_rows(db) == 0


def test_the_provider_refusing_access_is_said_and_stores_nothing(signing_in, db):
    admin, state, _ = signing_in
    r = admin.get("/admin/oauth/callback", params={
        "state": state, "error": "access_denied", "error_description": "the user said no"})
    assert r.status_code == 200 and "did not grant access (access_denied" in r.text
    assert token_rows(db) == 0


def test_a_code_the_token_endpoint_refuses_stores_nothing(signing_in, db):
    admin, state, _ = signing_in
    r = admin.get("/admin/oauth/callback", params={"state": state, "code": "not-a-code"})
    assert r.status_code == 400 and "invalid_grant" in r.text
    assert token_rows(db) == 0


def test_a_valid_code_is_stored_encrypted_with_the_admins_name(signing_in, db, mailbox):
    admin, state, tokens = signing_in
    code = tokens.issue_code(mailbox.username)
    r = admin.get("/admin/oauth/callback", params={"state": state, "code": code})
    assert r.status_code == 200 and "Signed in" in r.text
    row = db.fetchone("SELECT status, refresh_token FROM oauth_tokens")
    assert row["status"] == "authorized" and b"rt-" not in bytes(row["refresh_token"])
    actor = db.fetchone("SELECT actor FROM audit_log WHERE event = 'oauth_authorized'")
    assert actor["actor"] == "user:root"


def test_a_poll_while_paused_parks_the_entries_it_creates(keyed, db, mailbox, monkeypatch):
    """GIVEN a mailbox's import paused after its first poll WHEN a later poll stores more
    history mail THEN their entries are parked too; resume makes every one due."""
    from tests.integration.test_web_mailboxes import old_mail

    monkeypatch.setenv("EMAIL_RAG_HISTORY_IMPORT", "true")
    get_settings.cache_clear()
    Services(get_settings()).mailboxes.store.add(mailbox.name, raw_of(mailbox), True, "test")
    mailbox.append_many([old_mail(i) for i in range(2)])
    assert main(["poll", "--once"]) == 0
    assert history_import.pause(db, mailbox.name, "user:root") == 2
    mailbox.append_many([old_mail(i) for i in range(2, 5)])
    assert main(["poll", "--once"]) == 0
    parked = "SELECT COUNT(*) n FROM jobs WHERE kind = 'index_history' AND next_run_at > " \
             "'2999-01-01' AND state = 'queued'"
    assert db.fetchone(parked)["n"] == 5
    [p] = history_import.progress(db)
    assert (p.total, p.state, p.seconds_left) == (5, "paused", None)
    assert history_import.resume(db, mailbox.name, "user:root") == 5
    assert db.fetchone(parked)["n"] == 0


def test_restart_gives_dead_entries_a_fresh_cycle(keyed, db, mailbox, monkeypatch):
    from tests.integration.test_web_mailboxes import old_mail

    monkeypatch.setenv("EMAIL_RAG_HISTORY_IMPORT", "true")
    get_settings.cache_clear()
    svc = Services(get_settings())
    svc.mailboxes.store.add(mailbox.name, raw_of(mailbox), True, "test")
    mailbox.append_many([old_mail(i) for i in range(2)])
    assert main(["poll", "--once"]) == 0
    db.execute("UPDATE jobs SET state = 'dead' WHERE kind = 'index_history'")
    assert history_import.of_mailbox(db, mailbox.name).errors == 2
    assert history_import.restart(db, svc.jobs, mailbox.name, "user:root") == 2
    states = {r["state"] for r in db.fetchall("SELECT state FROM jobs WHERE kind = "
                                              "'index_history'")}
    assert states == {"queued"} and history_import.of_mailbox(db, mailbox.name).errors == 0
    events = [r["event"] for r in db.fetchall("SELECT event FROM audit_log WHERE event = "
                                              "'history_restarted'")]
    assert len(events) == 3  # one per entry, one for the mailbox


def test_set_up_link_rules(env, db):
    """A bad password keeps the link; it works once; once an account exists no link works."""
    token = first_start.new_link(db)
    with pytest.raises(BadInputError, match="password"):
        first_start.create_admin(db, token, "root", "short")
    assert first_start.link_valid(db, token)
    other = first_start.new_link(db)
    first_start.create_admin(db, token, "root", "a long enough password")
    assert not first_start.link_valid(db, token)
    with pytest.raises(BadInputError, match="no longer needed"):
        first_start.create_admin(db, other, "root2", "a long enough password")
    assert [r["name"] for r in db.fetchall("SELECT name FROM users")] == ["root"]
