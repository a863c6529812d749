"""Settings from a TOML file beside the environment (issue 44), through the real CLI:
one precedence (environment > .env > settings file > default), `email-rag config show`
naming each value's origin with secrets masked, and a broken file refused with its reason."""

from __future__ import annotations

import json
from pathlib import Path

from email_rag.core.settings import Settings
from tests.helpers import run_cli

SECRETS = ("db-pass-in-file", "session-key-from-env", "imap-pass-in-file", "redis-pass",
           "scrape-token-in-dotenv")
FILE = """
db_host = "db.from-file.example"
db_port = 3307
db_password = "db-pass-in-file"
web_port = 9000
redis_url = "redis://:redis-pass@cache.example:6379/2"
log_level = "WARNING"

[[mailboxes]]
name = "support"
username = "support@example.com"
password = "imap-pass-in-file"
host = "imap.example.com"
port = 993
"""


def show(*extra: str, env: dict | None = None) -> tuple[int, dict, str]:
    r = run_cli("config", "show", "--json", *extra, env_extra=env)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stdout + r.stderr


def by_key(payload: dict) -> dict[str, dict]:
    return {e["key"]: e for e in payload["data"]["settings"]}


def test_environment_beats_dotenv_beats_the_file_beats_the_default(tmp_path: Path):
    """GIVEN email-rag.toml in the working directory, a .env and environment variables that
    overlap WHEN `email-rag config show --json` runs THEN each value comes from the highest
    source that sets it and says so: env > .env > file > default."""
    (tmp_path / "email-rag.toml").write_text(FILE)
    (tmp_path / ".env").write_text("EMAIL_RAG_WEB_PORT=9100\nEMAIL_RAG_DB_PORT=3308\n"
                                   "EMAIL_RAG_WEB_METRICS_TOKEN=scrape-token-in-dotenv\n")
    code, out, text = show(env={"EMAIL_RAG_DB_PORT": "3309",
                                "EMAIL_RAG_WEB_SECRET_KEY": "session-key-from-env"})
    assert code == 0, text
    s = by_key(out)
    assert (s["db_port"]["value"], s["db_port"]["source"]) == (3309, "env")  # env > .env > file
    assert (s["web_port"]["value"], s["web_port"]["source"]) == (9100, ".env")  # .env > file
    assert (s["db_host"]["value"], s["db_host"]["source"]) == ("db.from-file.example", "file")
    assert (s["db_name"]["value"], s["db_name"]["source"]) == ("email_rag", "default")
    assert s["mailboxes"]["source"] == "file" and s["mailboxes"]["value"][0]["port"] == 993
    assert s["db_port"]["variable"] == "EMAIL_RAG_DB_PORT"
    assert out["data"]["file"] == "email-rag.toml"
    assert out["data"]["precedence"] == ["env", ".env", "file", "default"]
    assert set(s) == set(Settings.model_fields)  # every setting, not only the ones set


def test_secrets_are_masked_wherever_they_come_from(tmp_path: Path):
    """GIVEN secrets in the file (the database password, a mailbox's password, a password in
    the Redis URL), in .env and in the environment WHEN `config show` prints them, as a table
    and as JSON THEN none appears; a set secret reads ********** and an unset one is empty."""
    (tmp_path / "email-rag.toml").write_text(FILE)
    (tmp_path / ".env").write_text("EMAIL_RAG_WEB_METRICS_TOKEN=scrape-token-in-dotenv\n")
    env = {"EMAIL_RAG_WEB_SECRET_KEY": "session-key-from-env"}
    code, out, text = show(env=env)
    table = run_cli("config", "show", env_extra=env)
    assert code == 0 and table.returncode == 0, table.stdout + table.stderr
    for secret in SECRETS:
        assert secret not in text and secret not in table.stdout, secret
    s = by_key(out)
    assert s["db_password"] == {**s["db_password"], "value": "**********", "secret": True,
                                "source": "file"}
    assert s["web_secret_key"]["value"] == "**********" and s["web_secret_key"]["source"] == "env"
    assert s["web_metrics_token"]["value"] == "**********"
    assert s["arango_password"]["value"] == "" and s["arango_password"]["source"] == "default"
    assert s["mailboxes"]["value"][0]["password"] == "**********"
    assert s["redis_url"]["value"] == "redis://***@cache.example:6379/2"
    assert "EMAIL_RAG_DB_HOST" in table.stdout and "db.from-file.example" in table.stdout
    assert "from the environment" in table.stdout and "email-rag.toml" in table.stdout


def test_the_file_named_by_email_rag_config_file_wins_over_the_working_directory(tmp_path):
    """GIVEN email-rag.toml here and another file named by EMAIL_RAG_CONFIG_FILE WHEN the
    settings are read THEN the named file is the one in force."""
    (tmp_path / "email-rag.toml").write_text('db_host = "here.example"\n')
    other = tmp_path / "etc" / "site.toml"
    other.parent.mkdir()
    other.write_text('db_host = "named.example"\n')
    code, out, text = show(env={"EMAIL_RAG_CONFIG_FILE": str(other)})
    assert code == 0, text
    assert by_key(out)["db_host"]["value"] == "named.example"
    assert out["data"]["file"] == str(other)


def test_a_broken_settings_file_stops_every_command_with_its_reason(tmp_path: Path):
    """GIVEN a settings file with a typo in a key, one that is not TOML, a value of the wrong
    type, or EMAIL_RAG_CONFIG_FILE naming no file WHEN a command runs THEN it exits 1 and
    says what is wrong, where, and that nothing was done."""
    config = tmp_path / "email-rag.toml"
    config.write_text('db_hots = "x"\n')
    code, out, text = show()
    assert code == 1 and "db_hots (did you mean db_host?)" in out["message"], text
    assert "Nothing was done" in out["message"]
    config.write_text('db_host = "x\n')
    code, out, text = show()
    assert code == 1 and "is not valid TOML" in out["message"], text
    config.write_text('db_port = "three"\n')
    code, out, text = show()
    assert code == 1 and "db_port" in out["message"], text
    config.unlink()
    code, out, text = show(env={"EMAIL_RAG_CONFIG_FILE": str(tmp_path / "missing.toml")})
    assert code == 1 and "missing.toml: no such file" in out["message"], text
