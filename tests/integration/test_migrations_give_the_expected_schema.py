"""GIVEN an empty database WHEN migrations run THEN the schema is what the code expects."""

import multiprocessing
import uuid

import pytest

from email_rag.core.errors import ConfigError, DatabaseError
from email_rag.db import Database
from email_rag.db.migrate import discover, ensure_database, migrate
from email_rag.db.schema import EXPECTED, verify
from tests.conftest import MARIADB


def test_all_migrations_give_the_expected_schema(db):
    assert verify(db) == []
    versions = [r["version"] for r in db.fetchall("SELECT version FROM schema_migrations")]
    assert versions == [m.version for m in discover()]
    assert set(EXPECTED) <= {r["t"] for r in db.fetchall(
        "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE()")}


def test_migrate_twice_applies_nothing_the_second_time(db):
    again = migrate(db)
    assert again.applied == [] and again.already == [m.version for m in discover()]


def _migrate_in_process(name, out):
    database = Database(**MARIADB, database=name)
    try:
        out.put(migrate(database).applied)
    finally:
        database.close()


def test_two_processes_migrating_at_once_apply_each_migration_once(db_name):
    ensure_database(Database(**MARIADB), db_name)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_migrate_in_process, args=(db_name, out)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)  # spawn + import + migrate: slow on a busy machine
        assert p.exitcode == 0
    applied = sorted(out.get(timeout=5) + out.get(timeout=5))
    assert applied == [m.version for m in discover()]
    check = Database(**MARIADB, database=db_name)
    assert verify(check) == []
    check.close()


def test_changed_migration_is_refused(db, tmp_path):
    import shutil

    from email_rag.db import migrate as mig

    copy = tmp_path / "migrations"
    shutil.copytree(mig.MIGRATIONS_DIR, copy)
    first = sorted(copy.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after release\n")
    with pytest.raises(ConfigError, match="changed after it was applied"):
        migrate(db, copy)


def test_audit_log_is_append_only(db):
    db.execute("INSERT INTO audit_log (event_uid, at, actor, entity_type, entity_id, event)"
               " VALUES (%s, NOW(6), 'test', 'email', '1', 'x')", (uuid.uuid4().hex,))
    with pytest.raises(DatabaseError, match="append-only"):
        db.execute("UPDATE audit_log SET event = 'y'")
    with pytest.raises(DatabaseError, match="append-only"):
        db.execute("DELETE FROM audit_log")


def test_only_an_erasing_session_may_overwrite_audit_detail_and_nothing_else(db):
    """Migration 0360: erasure's one exception to the append-only log."""
    db.execute("INSERT INTO audit_log (event_uid, at, actor, entity_type, entity_id, event,"
               " detail) VALUES (%s, NOW(6), 'test', 'email', '1', 'x', '{\"a\": \"b\"}')",
               (uuid.uuid4().hex,))
    with pytest.raises(DatabaseError, match="append-only"):
        db.execute("UPDATE audit_log SET detail = '{}'")
    with db.transaction() as cur:
        cur.execute("SET @email_rag_audit_erasure = 1")
        try:
            with pytest.raises(DatabaseError, match="append-only"):
                cur.execute("UPDATE audit_log SET detail = '{}', actor = 'someone'")
            cur.execute("UPDATE audit_log SET detail = '{}'")
            with pytest.raises(DatabaseError, match="append-only"):
                cur.execute("DELETE FROM audit_log")
        finally:
            cur.execute("SET @email_rag_audit_erasure = NULL")
    assert db.fetchone("SELECT actor, detail FROM audit_log") == {"actor": "test",
                                                                 "detail": "{}"}


def test_send_attempt_is_unique_per_draft(db):
    from email_rag.core.errors import DuplicateKeyError

    db.execute("INSERT INTO mailboxes (name) VALUES ('m')")
    db.execute("INSERT INTO emails (mailbox_id, dedup_key, status) VALUES (1, REPEAT('a', 64), 'received')")
    db.execute("INSERT INTO drafts (email_id, status, body_draft) VALUES (1, 'approved', 'x')")
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status) VALUES (1, '<a@x>', 'pending')")
    with pytest.raises(DuplicateKeyError):
        db.execute("INSERT INTO send_attempts (draft_id, message_id, status) VALUES (1, '<b@x>', 'pending')")
