"""The fields of a mailbox's settings: one list for the CLI's flags and the web's form, every
setting of MailboxConfig in it, secrets kept apart."""

from __future__ import annotations

import pytest

from email_rag.cli import build_parser
from email_rag.cli.mailbox_settings import changes_from
from email_rag.core import mailbox_fields as mf
from email_rag.core.errors import ConfigError
from email_rag.core.settings import MailboxConfig, OAuthConfig, ServiceLevelConfig, SmtpIdentity


def test_every_setting_of_mailbox_config_has_a_field_and_a_flag_named_after_it():
    keys = {f.key for f in mf.FIELDS}
    for model, prefix in ((MailboxConfig, ""), (OAuthConfig, "oauth."),
                          (SmtpIdentity, "smtp."), (ServiceLevelConfig, "service_level.")):
        for name in model.model_fields:
            if name in ("oauth", "smtp", "service_level") or (not prefix and name in mf.SKIPPED):
                continue
            assert prefix + name in keys, prefix + name
    flags = {f.flag for f in mf.FIELDS}
    assert {"--host", "--port", "--username", "--password", "--security", "--address",
            "--smtp-password", "--oauth-client-secret", "--service-level-hours"} <= flags
    assert set(mf.SECRET_KEYS) == {"password", "smtp.password", "oauth.client_secret"}


def test_values_are_parsed_by_kind_and_refused_with_the_flag_named():
    assert mf.parse(mf.BY_KEY["port"], " 993 ") == 993
    assert mf.parse(mf.BY_KEY["folders"], "INBOX, Support") == ["INBOX", "Support"]
    assert mf.parse(mf.BY_KEY["provider_files_sent"], "yes") is True
    assert mf.parse(mf.BY_KEY["service_level.holidays"], "2026-12-24,2026-12-25") == [
        "2026-12-24", "2026-12-25"]
    assert mf.parse(mf.BY_KEY["team_name"], "  ") is None  # empty: back to the default
    assert mf.parse(mf.BY_KEY["password"], " spaced ") == " spaced "  # a secret as typed
    with pytest.raises(ConfigError, match="--port: 'x' is not a whole number"):
        mf.parse(mf.BY_KEY["port"], "x")
    with pytest.raises(ConfigError, match="--auth"):
        mf.parse(mf.BY_KEY["auth"], "kerberos")


def test_apply_split_join_and_changed_keys():
    raw = mf.apply({}, {"host": "imap.example.com", "username": "a@example.com",
                        "password": "s3cret", "smtp.host": "smtp.example.com",
                        "smtp.password": "t0ken"})
    public, secrets = mf.split_secrets(raw)
    assert "password" not in public and public["smtp"] == {"host": "smtp.example.com"}
    assert secrets == {"password": "s3cret", "smtp.password": "t0ken"}
    assert mf.join_secrets(public, secrets) == raw
    after = mf.apply(raw, {"smtp.host": None, "smtp.password": None, "team_name": "Acme"})
    assert "smtp" not in after  # a section whose keys are all gone is gone
    assert mf.changed_keys(raw, after) == ["smtp.host", "smtp.password", "team_name"]
    assert mf.public(raw, secrets)["secrets_set"] == ["password", "smtp.password"]
    assert mf.clean({"a": None, "smtp": {"host": None}, "b": 1}) == {"b": 1}


def test_names_are_checked():
    assert mf.check_name("support-de.1") == "support-de.1"
    for bad in ("", "new", "a/b", "x" * 65, "-lead"):
        with pytest.raises(ConfigError):
            mf.check_name(bad)


def test_the_cli_flags_become_changes():
    args = build_parser().parse_args(
        ["mailboxes", "edit", "support", "--port", "993", "--no-provider-files-sent",
         "--oauth-scopes", "a,b", "--unset", "smtp", "--unset", "team-name"])
    assert changes_from(args) == {"port": 993, "provider_files_sent": False,
                                  "oauth.scopes": ["a", "b"], "smtp": None, "team_name": None}
