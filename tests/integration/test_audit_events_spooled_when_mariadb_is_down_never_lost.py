"""Audit events reach MariaDB, or the spool when it is unreachable; none are lost."""

import json

from email_rag.db import Database
from email_rag.db.audit import AuditEvent, AuditLog, events_for


def _unreachable() -> Database:
    return Database(host="127.0.0.1", port=1, user="root", password="", database="x",
                    connect_timeout=1)


def test_record_writes_all_fields(db, tmp_path):
    log = AuditLog(db, tmp_path / "spool.jsonl")
    assert log.record(AuditEvent("worker", "email", 7, "state_changed", "received", "classified",
                                 attempt=2, detail={"step": "classify", "api_key": "sk-secret"}))
    [row] = events_for(db, "email", 7)
    assert (row["actor"], row["from_state"], row["to_state"], row["attempt"]) == (
        "worker", "received", "classified", 2)
    detail = json.loads(row["detail"])
    assert detail["step"] == "classify" and detail["api_key"] == "***"


def test_events_are_spooled_while_mariadb_is_down_and_flushed_later(db, tmp_path):
    spool = tmp_path / "spool.jsonl"
    down = AuditLog(_unreachable(), spool)
    events = [AuditEvent("worker", "email", 1, f"e{i}") for i in range(5)]
    assert down.record(*events) is False
    assert down.spooled_count() == 5

    up = AuditLog(db, spool)
    assert up.flush_spool() == 5
    assert up.spooled_count() == 0
    rows = events_for(db, "email", 1)
    assert [r["event"] for r in rows] == [f"e{i}" for i in range(5)]
    # original timestamps are kept
    assert rows[0]["at"] == events[0].at


def test_flush_repeated_after_crash_inserts_nothing_twice(db, tmp_path):
    spool = tmp_path / "spool.jsonl"
    event = AuditEvent("worker", "email", 2, "retry_scheduled")
    AuditLog(_unreachable(), spool).record(event)
    # a crash after commit but before the spool file was removed: the same line is flushed again
    backup = spool.read_text()
    log = AuditLog(db, spool)
    log.flush_spool()
    spool.write_text(backup)
    log.flush_spool()
    assert len(events_for(db, "email", 2)) == 1


def test_torn_spool_line_is_kept_as_an_event_not_dropped(db, tmp_path):
    spool = tmp_path / "spool.jsonl"
    AuditLog(_unreachable(), spool).record(AuditEvent("worker", "email", 3, "ok_event"))
    with spool.open("a") as f:
        f.write('{"actor": "worker", "entity_ty')  # crash mid-write
    log = AuditLog(db, spool)
    assert log.flush_spool() == 1
    assert len(events_for(db, "email", 3)) == 1
    [torn] = events_for(db, "system", "audit_spool")
    assert torn["event"] == "spool_line_unreadable"


def test_flush_while_still_down_keeps_the_spool(tmp_path):
    spool = tmp_path / "spool.jsonl"
    log = AuditLog(_unreachable(), spool)
    log.record(AuditEvent("worker", "email", 4, "x"))
    try:
        log.flush_spool()
    except Exception:
        pass
    assert log.spooled_count() == 1
