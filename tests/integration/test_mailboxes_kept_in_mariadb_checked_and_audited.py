"""Mailboxes kept in MariaDB, managed with ``email-rag mailboxes add|edit|list|disable|enable|
remove`` against the real test Dovecot: checked before saving, secrets encrypted and never
shown, every change audited with who made it, EMAIL_RAG_MAILBOXES read-only beside them."""

from __future__ import annotations

import json

import pytest

from email_rag.cli import main
from email_rag.core.settings import get_settings
from email_rag.db.mailbox_configs import MailboxConfigStore, MailboxDirectory
from email_rag.db.oauth_tokens import TokenCipher

KEY = "test-key-for-mailbox-secrets-0123456789"


@pytest.fixture
def keyed(env, monkeypatch):
    monkeypatch.setenv("EMAIL_RAG_OAUTH_TOKEN_KEY", KEY)
    get_settings.cache_clear()
    return env


def cli(capsys, *args: str) -> tuple[int, dict]:
    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["mailboxes", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def add_args(mailbox, *extra: str) -> list[str]:
    return ["add", mailbox.name, "--host", mailbox.host, "--port", str(mailbox.port),
            "--security", "plain", "--username", mailbox.username, "--password",
            mailbox.password, "--smtp-host", "127.0.0.1", "--smtp-port", "9",
            "--smtp-security", "plain", "--no-check", *extra]


def test_added_mailbox_is_checked_saved_encrypted_and_audited(keyed, db, mailbox, capsys,
                                                              caplog):
    """GIVEN the test Dovecot WHEN an admin adds a mailbox with its password THEN the check's
    IMAP steps pass, it is saved and polled, the password is stored encrypted (not in the row,
    not in the audit log, not in the output) and the audit names the admin."""
    code, out = cli(capsys, "add", mailbox.name, "--host", mailbox.host, "--port",
                    str(mailbox.port), "--security", "plain", "--username", mailbox.username,
                    "--password", mailbox.password, "--team-name", "Acme Support",
                    "--folders", "INBOX", "--disabled", "--by", "anna")
    steps = {s["name"]: s for s in out["data"]["check"]["steps"]}
    assert steps["imap login"]["ok"] is True and steps["folders"]["ok"] is True
    assert steps["smtp tcp"]["ok"] is False  # the global relay of the tests is port 9: nobody
    assert code == 0 and out["data"]["saved"] is True and out["data"]["enabled"] is False
    row = db.fetchone("SELECT settings, secrets, enabled FROM mailbox_configs")
    assert mailbox.password not in row["settings"] and mailbox.password.encode() not in row[
        "secrets"]
    assert json.loads(TokenCipher(KEY).decrypt(row["secrets"]))["password"] == mailbox.password
    audit = db.fetchall("SELECT actor, event, detail FROM audit_log WHERE entity_type = "
                        "'mailbox' ORDER BY id")
    assert [(a["actor"], a["event"]) for a in audit][:1] == [("user:anna", "mailbox_added")]
    everything = json.dumps([out, audit], default=str) + caplog.text
    assert mailbox.password not in everything
    code, listed = cli(capsys, "list")
    entry = listed["data"]["mailboxes"][0]
    assert entry["settings"]["secrets_set"] == ["password"] and entry["polled"] is False
    assert entry["settings"]["team_name"] == "Acme Support" and "password" not in entry[
        "settings"]


def test_failing_check_saves_nothing_unless_disabled(keyed, db, mailbox, capsys):
    """GIVEN a wrong password WHEN the mailbox is added THEN the check's login step fails with
    its hint, exit 3, nothing saved; with --disabled it is saved, not polled."""
    args = ["add", mailbox.name, "--host", mailbox.host, "--port", str(mailbox.port),
            "--security", "plain", "--username", mailbox.username, "--password", "wrong"]
    code, out = cli(capsys, *args)
    steps = {s["name"]: s for s in out["data"]["check"]["steps"]}
    assert code == 3 and steps["imap login"]["ok"] is False and steps["imap login"]["hint"]
    assert out["data"]["saved"] is False
    assert db.fetchone("SELECT COUNT(*) n FROM mailbox_configs")["n"] == 0
    code, out = cli(capsys, *args, "--disabled")
    assert code == 0 and out["data"]["enabled"] is False
    row = db.fetchone("SELECT enabled, check_ok, check_summary FROM mailbox_configs")
    assert row["enabled"] == 0 and row["check_ok"] == 0 and "imap login" in row["check_summary"]


def test_edit_disable_enable_remove_each_audited_and_seen_by_the_directory(keyed, db, mailbox,
                                                                           capsys):
    assert cli(capsys, *add_args(mailbox))[0] == 0
    svc_store = MailboxConfigStore(db, lambda: TokenCipher(KEY))
    directory = MailboxDirectory([], svc_store, max_age=0)
    assert [c.name for c in directory.active()] == [mailbox.name]
    code, out = cli(capsys, "edit", mailbox.name, "--signature", "Anna\nAcme", "--password",
                    "new-secret", "--no-check", "--by", "ben")
    assert code == 0 and out["data"]["changed"] == ["password", "signature"]
    config = directory.get(mailbox.name)
    assert config.password.get_secret_value() == "new-secret" and config.signature == "Anna\nAcme"
    assert cli(capsys, "disable", mailbox.name, "--reason", "moving")[0] == 0
    assert directory.active() == [] and directory.get(mailbox.name).username == mailbox.username
    assert cli(capsys, "enable", mailbox.name)[0] == 0
    assert [c.name for c in directory.active()] == [mailbox.name]
    assert cli(capsys, "remove", mailbox.name)[0] == 0
    assert directory.active() == []
    assert directory.get(mailbox.name).username == mailbox.username  # its jobs still run
    assert cli(capsys, "list")[1]["data"]["mailboxes"] == []
    assert cli(capsys, "list", "--all")[1]["data"]["mailboxes"][0]["removed"] is True
    events = [(r["actor"], r["event"]) for r in db.fetchall(
        "SELECT actor, event FROM audit_log WHERE entity_type = 'mailbox' ORDER BY id")]
    assert events[1:] == [("user:ben", "mailbox_changed"), (events[2][0], "mailbox_disabled"),
                          (events[2][0], "mailbox_enabled"), (events[2][0], "mailbox_removed")]
    detail = db.fetchone("SELECT detail FROM audit_log WHERE event = 'mailbox_changed'")
    assert "new-secret" not in detail["detail"] and "password" in detail["detail"]


def test_environment_mailboxes_are_read_only_and_win_a_name_clash(keyed, db, mailbox, capsys,
                                                                  monkeypatch):
    """GIVEN a mailbox in EMAIL_RAG_MAILBOXES WHEN an admin adds one of the same name THEN it
    is refused; the environment's is listed with its source and cannot be disabled here."""
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", mailbox.env_value())
    code, out = cli(capsys, *add_args(mailbox))
    assert code == 1 and "EMAIL_RAG_MAILBOXES" in out["message"]
    code, out = cli(capsys, "disable", mailbox.name)
    assert code == 1 and "EMAIL_RAG_MAILBOXES" in out["message"]
    listed = cli(capsys, "list")[1]["data"]["mailboxes"]
    assert [(m["name"], m["source"], m["polled"]) for m in listed] == [
        (mailbox.name, "environment", True)]


def test_secrets_need_the_token_key(env, db, mailbox, capsys):
    code, out = cli(capsys, *add_args(mailbox))
    assert code == 1 and "token key" in out["message"] and "OAUTH_TOKEN_KEY" in out["message"]
    assert db.fetchone("SELECT COUNT(*) n FROM mailbox_configs")["n"] == 0
