"""`email-rag migrate` and `email-rag status` through the real console entry point."""

import json

from tests.helpers import run_cli


def test_migrate_then_status_reports_real_mariadb_and_redis(env):
    migrated = run_cli("migrate", "--json")
    assert migrated.returncode == 0, migrated.stderr
    assert json.loads(migrated.stdout)["data"]["schema_problems"] == []

    result = run_cli("status", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["exit_code"] == 0
    deps = {d["name"]: d for d in out["data"]["dependencies"]}
    assert deps["mariadb"]["ok"] and deps["mariadb"]["version"].startswith("10.")
    assert deps["redis"]["ok"] and deps["redis"]["version"]
    assert deps["smtp"]["ok"] is False  # nothing listens on port 9
    assert deps["arangodb"]["version"] == "off"
    assert out["data"]["counts"]["jobs"] == {}
    assert out["data"]["queues"] == {"email-rag": 0, "email-rag-vectors": 0}


def test_status_counts_reflect_rows(env, db):
    db.execute("INSERT INTO mailboxes (name) VALUES ('support')")
    db.execute("INSERT INTO emails (mailbox_id, dedup_key, status) VALUES (1, REPEAT('b', 64), 'failed')")
    db.execute("INSERT INTO jobs (kind, job_key, email_id, queue, state) VALUES"
               " ('process_email', 'process_email:1', 1, 'email-rag', 'dead')")
    out = json.loads(run_cli("status", "--json").stdout)
    assert out["data"]["counts"]["mails"] == {"failed": 1}
    assert out["data"]["counts"]["jobs"] == {"dead": 1}
    assert out["data"]["counts"]["mailboxes"][0]["name"] == "support"


def test_status_with_mariadb_unreachable_says_so_and_exits_1(env):
    result = run_cli("status", "--json", env_extra={"EMAIL_RAG_DB_PORT": "1",
                                                    "EMAIL_RAG_DB_PASSWORD": "topsecret"})
    assert result.returncode == 1
    out = json.loads(result.stdout)
    maria = next(d for d in out["data"]["dependencies"] if d["name"] == "mariadb")
    assert maria["ok"] is False and "DatabaseUnavailableError" in maria["detail"]
    assert "Required dependency down: mariadb" in out["message"]
    assert "topsecret" not in result.stdout + result.stderr


def test_status_human_output_names_what_to_do(env):
    result = run_cli("status", env_extra={"EMAIL_RAG_REDIS_URL": "redis://:pw@127.0.0.1:1/0"})
    assert result.returncode == 1
    assert "redis" in result.stdout and "DOWN" in result.stdout
    assert ":pw@" not in result.stdout


def test_broken_config_is_a_clear_error(env):
    result = run_cli("status", env_extra={"EMAIL_RAG_DB_PORT": "not-a-port"})
    assert result.returncode == 1
    assert "Configuration is invalid" in result.stdout and "db_port" in result.stdout


def test_no_command_is_a_usage_error():
    result = run_cli()
    assert result.returncode == 1 and "usage" in result.stdout
