import pytest
from pydantic import ValidationError

from email_rag.core.errors import EmailRagError, LLMTimeoutError, PermanentError, TransientError
from email_rag.core.redact import redact, redact_text
from email_rag.core.settings import Settings
from email_rag.db.migrate import split_statements
from email_rag.db.queries import all_queries, parse_named_queries, slot_params, sql


def test_error_message_defaults_to_docstring():
    assert str(LLMTimeoutError()) == "The LLM did not answer in time."
    assert isinstance(LLMTimeoutError(), TransientError)
    assert not isinstance(LLMTimeoutError(), PermanentError)
    assert str(EmailRagError("custom")) == "custom"


def test_named_queries_parse_and_reject_empty():
    q = parse_named_queries("-- name: a\nSELECT 1;\n-- name: b\n-- doc line\nSELECT 2\n")
    assert q == {"a": "SELECT 1", "b": "SELECT 2"}
    with pytest.raises(ValueError):
        parse_named_queries("-- name: empty\n\n")


def test_a_fragment_is_written_once_and_stands_in_each_query_of_its_file():
    text = ("-- fragment: open\n-- the filters\n   AND state = 'open'\n   AND n > 1\n"
            "-- name: a\nSELECT * FROM t WHERE x = 1\n   @open\n ORDER BY x;\n"
            "-- name: b\nSELECT COUNT(*) FROM t WHERE y = 2\n   @open;\n")
    assert parse_named_queries(text) == {
        "a": "SELECT * FROM t WHERE x = 1\n   AND state = 'open'\n   AND n > 1\n ORDER BY x",
        "b": "SELECT COUNT(*) FROM t WHERE y = 2\n   AND state = 'open'\n   AND n > 1"}
    with pytest.raises(ValueError, match="fragment 'gone'"):
        parse_named_queries("-- name: a\nSELECT 1\n   @gone\n")


def test_all_shipped_queries_load_with_unique_names():
    assert isinstance(all_queries(), dict)


def test_list_slots_expand_to_named_placeholders_and_slot_params_fills_them():
    assert sql("ingest_raw_for_hash", ids=3).endswith("IN (%(ids_0)s, %(ids_1)s, %(ids_2)s)")
    rows = sql("jobs_insert", rows=(2, 6))
    assert "(%(rows_0_0)s, %(rows_0_1)s, %(rows_0_2)s, %(rows_0_3)s, %(rows_0_4)s, " \
           "%(rows_0_5)s), (%(rows_1_0)s," in rows
    assert slot_params(ids=[7, 9]) == {"ids_0": 7, "ids_1": 9}
    assert slot_params(rows=[(1, "a"), (2, None)]) == {
        "rows_0_0": 1, "rows_0_1": "a", "rows_1_0": 2, "rows_1_1": None}
    with pytest.raises(KeyError):
        sql("ingest_raw_for_hash", keys=2)


def test_split_statements_keeps_trigger_and_drops_comments():
    text = "-- c\nCREATE TABLE a (x INT);\nCREATE TRIGGER t BEFORE UPDATE ON a FOR EACH ROW\n  SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no';\n"
    stmts = split_statements(text)
    assert len(stmts) == 2 and stmts[1].startswith("CREATE TRIGGER")


def test_redact_masks_secret_keys_and_url_credentials():
    out = redact({"password": "hunter2", "url": "redis://user:pw@host:6379/0",
                  "nested": [{"api_key": "sk-1"}], "auth": "Bearer abc.def"})
    assert "hunter2" not in str(out) and "pw@" not in str(out) and "sk-1" not in str(out)
    assert out["url"] == "redis://***@host:6379/0"
    assert redact_text("Authorization: Bearer xyz") == "Authorization: Bearer ***"


def test_redact_masks_a_password_without_a_user_name_in_a_url():
    """Redis writes its password alone: redis://:PASSWORD@host."""
    assert redact_text("redis://:s3cret@cache:6379/2") == "redis://***@cache:6379/2"
    assert redact_text("see https://example.com/a?b=c@d") == "see https://example.com/a?b=c@d"


def test_settings_read_env_and_hide_secrets(monkeypatch):
    monkeypatch.setenv("EMAIL_RAG_DB_PASSWORD", "s3cret")
    monkeypatch.setenv("EMAIL_RAG_RETRY_DELAYS", "[1, 2, 3]")
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES",
                       '[{"name": "support", "username": "a@b.c", "password": "pw"}]')
    s = Settings()
    assert s.retry_delays == [1, 2, 3]
    assert s.mailbox("support").reply_address == "a@b.c"
    assert "s3cret" not in repr(s) and "'pw'" not in repr(s)


def test_broken_settings_raise_a_clear_error(monkeypatch):
    monkeypatch.setenv("EMAIL_RAG_WORKER_CLASS", "threads")
    with pytest.raises(ValidationError, match="worker_class"):
        Settings()


def test_env_file_is_read(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("EMAIL_RAG_DB_NAME=from_dotenv\n")
    monkeypatch.chdir(tmp_path)
    assert Settings().db_name == "from_dotenv"


def test_audit_event_uids_are_random_version_4_uuids():
    import uuid

    from email_rag.core.audit_event import AuditEvent, new_event_uid

    uids = {new_event_uid() for _ in range(1000)}
    assert len(uids) == 1000
    for uid in list(uids)[:50]:
        parsed = uuid.UUID(hex=uid)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, uid)
    assert len(AuditEvent("system", "email", 1, "x").event_uid) == 32
