"""Issue 29: retention per mailbox (real MariaDB, local Qdrant), deleting through the same
code as privacy forget (email_rag.privacy.erasure)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timedelta

from email_rag_harness.testing.hang import closed_port

from email_rag.adapters.vectors import QdrantStore
from email_rag.cli import main
from email_rag.core.settings import get_settings
from email_rag.core.states import MAIL_TERMINAL, MailStatus
from email_rag.db.audit import AuditEvent, AuditLog, events_for
from email_rag.privacy import retention
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.helpers import ROOT, kill_when
from tests.integration.test_privacy_export_and_forget import _index, _points, _with_attachment

NOW = datetime(2026, 6, 1, 12, 0, 0)  # the frozen clock
LONG_AGO = datetime(2020, 1, 1)


def _mailboxes(monkeypatch, **days: int) -> None:
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", json.dumps(
        [{"name": name, "username": f"{name}@example.com", "port": 9,
          "retention_days": d} for name, d in days.items()]))
    get_settings.cache_clear()


def _closed(db, email_id: int, at: datetime) -> int:
    db.execute("UPDATE emails SET closed_at = %s WHERE id = %s", (at, email_id))
    return email_id


def _ids(db) -> set[int]:
    return {r["id"] for r in db.fetchall("SELECT id FROM emails")}


@contextmanager
def graphed(db, monkeypatch):
    """Services whose graph store is an ``ArangoRecorder``, holding every mail of ``db``."""
    from email_rag.core.index_ports import MailToIndex
    from email_rag.indexing.indexer import Indexer
    from tests.index_helpers import ArangoRecorder

    recorder = ArangoRecorder()
    monkeypatch.setenv("EMAIL_RAG_ARANGO_URL", recorder.url)
    svc = Services(get_settings())
    try:
        for row in db.fetchall("SELECT * FROM emails ORDER BY id"):
            svc.graph.upsert_mail(Indexer(svc).graph_mail(MailToIndex.from_row(row)))
        yield svc, recorder
    finally:
        svc.close()
        recorder.close()


def test_closed_at_follows_the_closed_statuses_of_the_transition_table(env, db):
    """closed_at is set exactly for MAIL_TERMINAL (the final statuses and sent), on insert
    and on a move, and a bounce that reopens a sent mail clears it."""
    box = make_mailbox(db)
    for status in MailStatus:
        e = make_email(db, box, status=status.value)
        row = db.fetchone("SELECT closed_at FROM emails WHERE id = %s", (e,))
        assert (row["closed_at"] is not None) == (status in MAIL_TERMINAL), status
    # a past case closed when it was sent, an imported future date is capped at now
    past = make_email(db, box, status="history", sent_at=datetime(2019, 5, 6, 7, 8, 9))
    future = make_email(db, box, status="history", sent_at=datetime(2099, 1, 1))
    closed = {r["id"]: r["closed_at"] for r in db.fetchall("SELECT id, closed_at FROM emails")}
    assert closed[past] == datetime(2019, 5, 6, 7, 8, 9)
    assert closed[future] < datetime(2099, 1, 1)
    e = make_email(db, box, status="approved")
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (e,))
    assert db.fetchone("SELECT closed_at FROM emails WHERE id = %s", (e,))["closed_at"]
    db.execute("UPDATE emails SET status = 'draft_ready' WHERE id = %s", (e,))  # a bounce
    assert db.fetchone("SELECT closed_at FROM emails WHERE id = %s", (e,))["closed_at"] is None


def test_the_migration_gives_mails_closed_before_it_their_last_change(db_name, tmp_path):
    """Mails stored before 0350: a closed one gets its last change (a history mail its Date),
    an open one none, and their updated_at is kept."""
    import shutil

    from email_rag.db import Database
    from email_rag.db.migrate import MIGRATIONS_DIR, ensure_database, migrate
    from tests.conftest import MARIADB

    before = tmp_path / "before"
    before.mkdir()
    for f in MIGRATIONS_DIR.iterdir():
        if f.name.endswith(".sql") and f.name < "0350":
            shutil.copyfile(str(f), before / f.name)
    db = Database(**MARIADB, database=db_name)
    try:
        ensure_database(db, db_name)
        migrate(db, before)
        box = make_mailbox(db)
        changed = datetime(2021, 3, 4, 5, 6, 7)
        ids = {status: make_email(db, box, status=status, sent_at=datetime(2018, 1, 2))
               for status in ("sent", "history", "draft_ready")}
        db.execute("UPDATE emails SET updated_at = %s", (changed,))
        migrate(db)
        rows = {r["id"]: r for r in db.fetchall("SELECT id, closed_at, updated_at FROM emails")}
    finally:
        db.close()
    assert rows[ids["sent"]]["closed_at"] == changed
    assert rows[ids["history"]]["closed_at"] == datetime(2018, 1, 2)
    assert rows[ids["draft_ready"]]["closed_at"] is None
    assert {r["updated_at"] for r in rows.values()} == {changed}


def _world(db, tmp_path):
    """support (30 days) and sales (retention off) with cases in every situation."""
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    old, recent = NOW - timedelta(days=40), NOW - timedelta(days=10)
    cutoff = NOW - timedelta(days=30)
    raw, atts = _with_attachment("alice@customer.example")
    m = {}
    m["old_sent"] = make_email(db, support, raw=raw, attachments=atts,
                               message_id="<inv-4711@customer.example>")
    draft = make_draft(db, m["old_sent"], body="Dear Alice, refunded.")
    db.execute("UPDATE drafts SET status = 'sent' WHERE id = %s", (draft,))
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status, recipients) VALUES "
               "(%s, '<r1@example.com>', 'sent', 'alice@customer.example')", (draft,))
    db.execute("INSERT INTO users (name, role, password_hash) VALUES ('anna', 'staff', 'x')")
    db.execute("INSERT INTO draft_edits (draft_id, user_id, body) SELECT %s, id, 'Dear A' "
               "FROM users WHERE name = 'anna'", (draft,))
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (m["old_sent"],))
    _closed(db, m["old_sent"], old)
    # a closed thread of two mails, both expired
    m["thread_a1"] = _closed(db, make_email(db, support, status="rejected", thread_key="a"), old)
    m["thread_a2"] = _closed(db, make_email(db, support, status="history", thread_key="a"),
                             cutoff - timedelta(seconds=1))
    # an expired mail in a thread with an open mail: the case is open
    m["open_thread_old"] = _closed(db, make_email(db, support, status="no_reply",
                                                  thread_key="b"), old)
    m["open_thread_new"] = make_email(db, support, status="draft_ready", thread_key="b")
    # an expired mail in a thread that closed recently: the case closed 10 days ago
    m["recent_thread_old"] = _closed(db, make_email(db, support, status="sent",
                                                    thread_key="c"), old)
    m["recent_thread_new"] = _closed(db, make_email(db, support, status="resolved",
                                                    thread_key="c"), recent)
    m["recent"] = _closed(db, make_email(db, support, status="rejected"), recent)
    m["at_cutoff"] = _closed(db, make_email(db, support, status="rejected"), cutoff)
    m["open"] = make_email(db, support, status="manual")
    m["held"] = _closed(db, make_email(db, support, status="no_reply"), old)
    make_job(db, m["held"], state="processing")
    m["in_flight"] = _closed(db, make_email(db, support, status="rejected"), old)
    other = make_draft(db, m["in_flight"])
    db.execute("UPDATE emails SET status = 'rejected' WHERE id = %s", (m["in_flight"],))
    _closed(db, m["in_flight"], old)
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status) VALUES "
               "(%s, '<r2@example.com>', 'attempted')", (other,))
    m["other_mailbox"] = _closed(db, make_email(db, sales, status="sent"), old)
    AuditLog(db, tmp_path / "spool.jsonl").record(
        AuditEvent("worker", "email", m["old_sent"], "state_changed", "approved", "sent"))
    expired = {m["old_sent"], m["thread_a1"], m["thread_a2"]}
    return m, expired, draft


def test_retention_deletes_exactly_the_expired_closed_cases(env, db, tmp_path, monkeypatch,
                                                            settings):
    """GIVEN a frozen clock, support keeping 30 days and sales keeping everything
    WHEN a retention pass runs
    THEN the cases closed more than 30 days ago are gone from MariaDB and the vector store;
    open cases, recently closed ones, held and in-flight mails and the other mailbox stay;
    one audit event per batch holds counts and ids, no personal data."""
    _mailboxes(monkeypatch, support=30, sales=0)
    m, expired, draft = _world(db, tmp_path)
    box = {e: 1 for e in m.values()}
    _index(get_settings(), box)
    before = _ids(db)
    svc = Services(get_settings())
    try:
        planned = retention.run(svc, clock=lambda: NOW, dry_run=True)
        assert planned.state == "planned"
        [support] = planned.mailboxes
        assert (support.mailbox, support.mails, support.attachments, support.drafts,
                support.draft_edits, support.send_attempts, support.busy) == (
            "support", 3, 1, 1, 1, 1, 2)
        assert _ids(db) == before  # a dry run deletes nothing

        done = retention.run(svc, clock=lambda: NOW, batch=2)
        assert done.state == "done", done
        assert _ids(db) == before - expired
        [support] = done.mailboxes
        assert (support.mails, support.attachments, support.drafts, support.draft_edits,
                support.send_attempts, support.busy, support.batches) == (3, 1, 1, 1, 1, 2, 2)
    finally:
        svc.close()
    for e in expired:
        assert _points(get_settings(), e) == 0
    for name, e in m.items():
        if e not in expired:
            assert _points(get_settings(), e) == 2, name
    assert db.fetchall("SELECT id FROM drafts WHERE id = %s", (draft,)) == []
    assert db.fetchone("SELECT COUNT(*) AS n FROM draft_edits")["n"] == 0
    assert db.fetchone("SELECT COUNT(*) AS n FROM erasure_marks")["n"] == 0

    # the audit trail: one event per batch, counts and ids, nothing personal
    events = events_for(db, "mailbox", "support")
    assert [e["event"] for e in events] == ["retention_erased", "retention_erased"]
    details = [json.loads(e["detail"]) if isinstance(e["detail"], str) else e["detail"]
               for e in events]
    assert sorted(i for d in details for i in d["email_ids"]) == sorted(expired)
    assert sum(d["mails"] for d in details) == 3 and sum(d["attachments"] for d in details) == 1
    text = json.dumps(events, default=str).lower()
    for personal in ("alice", "@", "printer", "invoice", "refunded"):
        assert personal not in text
    # ... and still answers what happened to the mail
    assert [e["event"] for e in events_for(db, "email", m["old_sent"])] == ["state_changed"]
    svc = Services(get_settings())
    try:
        [erased] = retention.erased_in(svc, m["old_sent"])
        assert erased.entity_id == "support" and m["old_sent"] in erased.detail["email_ids"]
        assert retention.erased_in(svc, m["recent"]) == []
        # a second pass on the same clock deletes nothing more
        again = retention.run(svc, clock=lambda: NOW)
        assert again.state == "done" and again.mailboxes[0].mails == 0
    finally:
        svc.close()
    assert _ids(db) == before - expired


def test_a_mail_marked_by_a_crashed_pass_whose_case_reopened_is_kept_and_reindexed(
        env, db, monkeypatch):
    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    e = _closed(db, make_email(db, box, status="sent", thread_key="t",
                               index_status="complete"), NOW - timedelta(days=40))
    db.execute("INSERT INTO erasure_marks (email_id, mailbox_id, cause) VALUES "
               "(%s, %s, 'retention')", (e, box))  # a crashed pass began it...
    make_email(db, box, status="received", thread_key="t")  # ...then the customer wrote again
    svc = Services(get_settings())
    try:
        done = retention.run(svc, clock=lambda: NOW)
    finally:
        svc.close()
    assert done.state == "done" and done.mailboxes[0].released == 1
    row = db.fetchone("SELECT index_status, index_missing FROM emails WHERE id = %s", (e,))
    assert row == {"index_status": "partially_indexed", "index_missing": "vectors,graph"}
    assert db.fetchone("SELECT COUNT(*) AS n FROM erasure_marks")["n"] == 0
    # the periodic sync writes its points again (no graph configured here)
    from email_rag.indexing import sync as index_sync

    svc = Services(get_settings())
    try:
        assert index_sync.sync(svc, "partial").reindexed == [e]
    finally:
        svc.close()
    assert db.fetchone("SELECT index_status FROM emails WHERE id = %s", (e,))[
        "index_status"] == "complete"
    assert _points(get_settings(), e) > 0


class Killed(BaseException):
    """The process dies here (nothing after it runs, no except clause catches it)."""


def test_a_pass_killed_between_the_stores_and_mariadb_is_finished_by_the_next(
        env, db, monkeypatch):
    """GIVEN a pass that dies after the vector points of its first batch are deleted and
    before the batch's MariaDB transaction
    THEN those mails are whole in MariaDB and marked, and the next pass erases them."""
    from email_rag.privacy import erasure

    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    expired = [_closed(db, make_email(db, box, status="no_reply"), LONG_AGO) for _ in range(4)]
    _index(get_settings(), {e: box for e in expired})
    real = erasure.busy

    def dies_in_the_transaction(db_or_cur, ids):
        if db_or_cur is not svc.db:
            raise Killed
        return real(db_or_cur, ids)

    monkeypatch.setattr(erasure, "busy", dies_in_the_transaction)
    svc = Services(get_settings())
    try:
        try:
            retention.run(svc, clock=lambda: NOW, batch=2)
            raise AssertionError("the pass was not killed")
        except Killed:
            pass
    finally:
        svc.close()
    assert _ids(db) == set(expired)
    marks = {r["email_id"] for r in db.fetchall("SELECT email_id FROM erasure_marks")}
    assert marks == set(expired[:2])
    assert [_points(get_settings(), e) for e in expired] == [0, 0, 2, 2]

    monkeypatch.setattr(erasure, "busy", real)
    svc = Services(get_settings())
    try:
        done = retention.run(svc, clock=lambda: NOW, batch=2)
    finally:
        svc.close()
    assert done.state == "done" and done.mailboxes[0].mails == 4
    assert _ids(db) == set() and not db.fetchall("SELECT * FROM erasure_marks")
    assert [_points(get_settings(), e) for e in expired] == [0, 0, 0, 0]


def test_marks_of_a_mailbox_whose_retention_was_switched_off_are_released(env, db,
                                                                           monkeypatch):
    _mailboxes(monkeypatch, support=0)
    box = make_mailbox(db, "support")
    e = _closed(db, make_email(db, box, status="sent", index_status="complete"), LONG_AGO)
    db.execute("INSERT INTO erasure_marks (email_id, mailbox_id, cause) VALUES "
               "(%s, %s, 'retention')", (e, box))
    svc = Services(get_settings())
    try:
        assert retention.run(svc, clock=lambda: NOW).mailboxes == []
    finally:
        svc.close()
    assert _ids(db) == {e} and not db.fetchall("SELECT * FROM erasure_marks")
    assert db.fetchone("SELECT index_status FROM emails")["index_status"] == "partially_indexed"
    assert [x["event"] for x in events_for(db, "mailbox", "support")] == ["retention_released"]


def test_retention_erases_the_graph_documents_of_expired_mails_and_keeps_the_people(
        env, db, monkeypatch):
    """Through the graph adapter and its test double (ArangoRecorder: real python-arango
    calls, NOT ArangoDB): the expired mail's documents and edges go, the kept mail's stay,
    and so does the vertex of a person with a kept mail (one whose every mail expired goes:
    the next test)."""
    from email_rag.adapters.graph import EDGES, person_key

    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    _closed(db, make_email(db, box, status="sent"), LONG_AGO)
    kept = make_email(db, box, status="sent", from_addr="bob@customer.example")
    with graphed(db, monkeypatch) as (svc, recorder):
        assert retention.run(svc, clock=lambda: NOW).state == "done"
        svc.close()
        assert set(recorder.collections["mails"]) == {f"m{kept}"}
        edges = [e for name in EDGES for e in recorder.collections[name].values()]
        assert edges and all(f"m{kept}" in e["_from"] + e["_to"] for e in edges)
        assert person_key("bob@customer.example") in recorder.collections["people"]
    assert _ids(db) == {kept}


def test_retention_removes_a_person_vertex_once_all_their_mails_expired(env, db,
                                                                        monkeypatch):
    """A person whose every mail expired leaves no vertex (it holds the address and the
    name); a person with a mail still kept keeps theirs. Through the graph adapter's test
    double (ArangoRecorder, NOT ArangoDB)."""
    from email_rag.adapters.graph import person_key

    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    _closed(db, make_email(db, box, status="sent", from_addr="dora@gone.example",
                           from_name="Dora Gone"), LONG_AGO)
    _closed(db, make_email(db, box, status="sent", from_addr="carol@customer.example"),
            LONG_AGO)
    kept = make_email(db, box, status="sent", from_addr="carol@customer.example")
    with graphed(db, monkeypatch) as (svc, recorder):
        assert person_key("dora@gone.example") in recorder.collections["people"]
        assert retention.run(svc, clock=lambda: NOW).state == "done"
        svc.close()
        people = recorder.collections["people"]
        assert person_key("dora@gone.example") not in people
        assert not [p for p in people.values() if "dora" in json.dumps(p).lower()]
        assert person_key("carol@customer.example") in people
        assert set(recorder.collections["mails"]) == {f"m{kept}"}


def _retention(capsys, *args) -> tuple[int, dict]:
    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["privacy", "retention", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)["data"]


def test_vector_store_down_ends_the_pass_partial_and_the_next_pass_completes(
        env, db, monkeypatch, capsys):
    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    expired = [_closed(db, make_email(db, box, status="sent"), LONG_AGO) for _ in range(3)]
    kept = make_email(db, box, status="sent")
    _index(get_settings(), {e: box for e in [*expired, kept]})

    monkeypatch.setenv("EMAIL_RAG_QDRANT_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("EMAIL_RAG_QDRANT_TIMEOUT", "1")
    code, partial = _retention(capsys)
    assert code == 2 and partial["state"] == "partial", partial
    assert _ids(db) == {*expired, kept}  # nothing deleted in MariaDB, nothing half-deleted
    assert [e["event"] for e in events_for(db, "mailbox", "support")] == ["retention_partial"]

    monkeypatch.delenv("EMAIL_RAG_QDRANT_URL")
    code, done = _retention(capsys)
    assert code == 0 and done["state"] == "done" and done["mailboxes"][0]["mails"] == 3, done
    assert _ids(db) == {kept}
    assert [_points(get_settings(), e) for e in expired] == [0, 0, 0]
    assert _points(get_settings(), kept) == 2
    assert db.fetchone("SELECT COUNT(*) AS n FROM erasure_marks")["n"] == 0


def _wait(db, proc, query: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.fetchone(query)["n"]:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    raise AssertionError(f"not seen within {timeout} s: {query}")


def _inside_the_second_batch(db, proc) -> None:
    """After the first batch's audit event, once the second batch is marked, a moment into
    its store phase (where the kill leaves marked mails with their points gone)."""
    _wait(db, proc, "SELECT COUNT(*) AS n FROM audit_log WHERE event = 'retention_erased'")
    _wait(db, proc, "SELECT COUNT(*) AS n FROM erasure_marks")
    time.sleep(0.05)


def test_a_sigkilled_retention_process_leaves_nothing_half_deleted_and_a_rerun_finishes(
        env, db, monkeypatch, capsys):
    """GIVEN 300 expired mails with vector points, batches of 10
    WHEN `email-rag privacy retention` is SIGKILLed after its first audit event, and run again
    THEN after the kill every mail is either whole (its points there) or marked for the
    next pass, and after the rerun every expired mail is gone everywhere, each named by
    exactly one batch event, and the kept mail is whole."""
    _mailboxes(monkeypatch, support=30)
    monkeypatch.setenv("EMAIL_RAG_RETENTION_BATCH_SIZE", "50")
    box = make_mailbox(db, "support")
    expired = [_closed(db, make_email(db, box, status="history", from_addr=f"c{i}@x.example"),
                       LONG_AGO) for i in range(300)]
    kept = make_email(db, box, status="draft_ready")
    _index(get_settings(), {e: box for e in [*expired, kept]})

    child_env = {**os.environ, "PYTHONPATH": str(ROOT),
                 **{k: v for k, v in os.environ.items() if k.startswith("EMAIL_RAG_")}}
    proc = subprocess.Popen([sys.executable, "-m", "email_rag", "privacy", "retention",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=child_env)
    kill_when(proc, lambda: _inside_the_second_batch(db, proc))
    left = sorted(_ids(db) - {kept})
    assert 0 < len(left) < 300, "the kill did not land mid-run"
    marks = {r["email_id"] for r in db.fetchall("SELECT email_id FROM erasure_marks")}
    store = QdrantStore.from_settings(get_settings())
    try:
        half = [e for e in left if store.count(e) != 2 and e not in marks]
    finally:
        store.close()
    assert half == [], "mails with points gone but not marked for the next pass"

    code, done = _retention(capsys)
    assert code == 0 and done["state"] == "done", done
    assert _ids(db) == {kept}
    assert db.fetchone("SELECT COUNT(*) AS n FROM erasure_marks")["n"] == 0
    store = QdrantStore.from_settings(get_settings())
    try:
        assert store.count() == 2 and store.count(kept) == 2
    finally:
        store.close()
    named = [i for e in events_for(db, "mailbox", "support")
             for i in (e["detail"] if isinstance(e["detail"], dict)
                       else json.loads(e["detail"]))["email_ids"]]
    assert sorted(named) == sorted(expired)  # each erased mail named by exactly one batch


def test_the_scheduler_arms_one_pass_for_the_vector_worker_which_runs_it(env, db,
                                                                          monkeypatch):
    """GIVEN local Qdrant mode and a mailbox with retention WHEN the scheduler's periodic
    job runs THEN it arms one retention entry on the vector queue (coalesced while pending)
    without opening a store, and the vector worker's run erases the expired mail."""
    from email_rag.runtime.job_runner import JobRunner
    from email_rag.runtime.scheduler import periodic_jobs

    _mailboxes(monkeypatch, support=30)
    monkeypatch.setenv("EMAIL_RAG_RETENTION_INTERVAL_SECONDS", "77")
    box = make_mailbox(db, "support")
    _closed(db, make_email(db, box, status="sent"), LONG_AGO)
    kept = make_email(db, box, status="sent")
    scheduler = Services(get_settings())
    try:
        jobs = {name: (seconds, fn) for name, seconds, fn in periodic_jobs(scheduler)}
        assert jobs["retention"][0] == 77
        first = jobs["retention"][1]()
        again = jobs["retention"][1]()
        assert first["armed"] and again["job_id"] == first["job_id"] and not again["armed"]
        assert "vectors" not in vars(scheduler)
    finally:
        scheduler.close()
    row = db.fetchone("SELECT kind, queue, state FROM jobs WHERE id = %s", (first["job_id"],))
    assert row == {"kind": "retention", "queue": "email-rag-vectors", "state": "queued"}
    worker = Services(get_settings())
    try:
        assert JobRunner(worker, "w-vec", vector_owner=True).run(first["job_id"]) == "done"
    finally:
        worker.close()
    assert _ids(db) == {kept}
    [event] = events_for(db, "mailbox", "support")
    assert event["event"] == "retention_erased" and event["actor"] == "worker:jobs:w-vec"


def test_the_dry_run_prints_per_mailbox_what_would_go_and_deletes_nothing(env, db, monkeypatch,
                                                                          capsys):
    _mailboxes(monkeypatch, support=30, sales=0)
    box = make_mailbox(db, "support")
    raw, atts = _with_attachment("alice@customer.example")
    e = _closed(db, make_email(db, box, status="sent", raw=raw, attachments=atts), LONG_AGO)
    capsys.readouterr()
    assert main(["privacy", "retention", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "support (30 days, closed before " in out
    assert "1 mail(s), 1 attachment(s), 0 draft(s)" in out and "nothing was deleted" in out
    assert "sales" not in out and "alice" not in out.lower()
    assert _ids(db) == {e}


def test_a_send_journal_file_left_for_an_expired_mail_is_removed(env, db, monkeypatch):
    from email_rag.sending.journal import Acceptance, SendJournal

    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    e = make_email(db, box, status="approved")
    draft = make_draft(db, e, status="sent")
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (e,))
    _closed(db, e, LONG_AGO)
    with db.transaction() as cur:
        cur.execute("INSERT INTO send_attempts (draft_id, message_id, status) VALUES "
                    "(%s, '<r3@example.com>', 'sent')", (draft,))
        attempt = cur.lastrowid
    journal = SendJournal(get_settings().send_journal_dir)
    # a file a crash after the commit left behind (the relay's answer names the recipient)
    assert journal.record(Acceptance(attempt, "<r3@example.com>", "250 ok alice", NOW))
    assert journal.get(attempt, "<r3@example.com>") is not None
    svc = Services(get_settings())
    try:
        assert retention.run(svc, clock=lambda: NOW).mailboxes[0].mails == 1
    finally:
        svc.close()
    assert journal.get(attempt, "<r3@example.com>") is None
    assert list(get_settings().send_journal_dir.glob("*")) == []


def test_a_mail_a_worker_claims_while_its_points_are_deleted_is_left_marked(env, db,
                                                                          monkeypatch):
    """GIVEN an expired mail with a queued job WHEN a worker claims the job while the pass
    deletes the mail's vector points THEN the delete transaction sees it processing and
    leaves the mail (marked); after the job, the next pass erases it."""
    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    e = _closed(db, make_email(db, box, status="history"), LONG_AGO)
    job = make_job(db, e, kind="index_history", state="queued")
    svc = Services(get_settings())
    store_class = type(svc.vectors)
    real = store_class.replace_mail

    def claimed_meanwhile(store, email_id, points):
        db.execute("UPDATE jobs SET state = 'processing' WHERE id = %s", (job,))
        return real(store, email_id, points)

    monkeypatch.setattr(store_class, "replace_mail", claimed_meanwhile)
    try:
        first = retention.run(svc, clock=lambda: NOW)
    finally:
        svc.close()
    assert (first.mailboxes[0].mails, first.mailboxes[0].busy) == (0, 1)
    assert _ids(db) == {e}
    assert db.fetchone("SELECT email_id FROM erasure_marks") == {"email_id": e}

    monkeypatch.setattr(store_class, "replace_mail", real)
    db.execute("UPDATE jobs SET state = 'done' WHERE id = %s", (job,))
    svc = Services(get_settings())
    try:
        second = retention.run(svc, clock=lambda: NOW)
    finally:
        svc.close()
    assert second.mailboxes[0].mails == 1 and _ids(db) == set()
    assert not db.fetchall("SELECT * FROM erasure_marks") and not db.fetchall("SELECT * FROM jobs")


def test_a_sigkilled_forget_process_is_finished_by_running_forget_again(env, db, capsys):
    """privacy forget deletes through the same erasure code: killed inside its second batch
    of 50, every mail is whole or marked, and the same command again erases the person
    everywhere (verification included)."""
    box = make_mailbox(db, "support")
    alice = [make_email(db, box, status="received", from_addr="alice@customer.example")
             for _ in range(300)]
    carol = make_email(db, box, status="received", from_addr="carol@other.example")
    _index(get_settings(), {e: box for e in [*alice, carol]})
    child_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "email_rag", "privacy", "forget",
                             "alice@customer.example", "--reason", "Art. 17", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env)
    def second_batch_marked() -> None:
        _wait(db, proc, "SELECT COUNT(*) <= 251 AS n FROM emails")
        _wait(db, proc, "SELECT COUNT(*) AS n FROM erasure_marks")
        time.sleep(0.05)

    kill_when(proc, second_batch_marked)
    left = sorted(_ids(db) - {carol})
    assert 0 < len(left) < 300
    marks = {r["email_id"] for r in db.fetchall("SELECT email_id FROM erasure_marks")}
    store = QdrantStore.from_settings(get_settings())
    try:
        assert [e for e in left if store.count(e) != 2 and e not in marks] == []
    finally:
        store.close()

    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["privacy", "forget", "alice@customer.example", "--reason", "Art. 17",
                 "--json"])
    done = json.loads(capsys.readouterr().out)["data"]
    assert code == 0 and (done["state"], done["remaining"]) == ("done", {}), done
    assert _ids(db) == {carol} and not db.fetchall("SELECT * FROM erasure_marks")
    store = QdrantStore.from_settings(get_settings())
    try:
        assert store.count() == 2 and store.count(carol) == 2
    finally:
        store.close()


def test_the_admin_page_of_a_mail_retention_deleted_shows_what_happened_to_it(
        env, db, tmp_path, monkeypatch, client):
    """The admin's page of mail N after retention: its own events and the batch event that
    deleted it; an id that never was a mail stays an error."""
    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    e = _closed(db, make_email(db, box, status="sent", subject="Router on fire"), LONG_AGO)
    AuditLog(db, tmp_path / "spool.jsonl").record(
        AuditEvent("worker", "email", e, "state_changed", "approved", "sent"))
    svc = Services(get_settings())
    try:
        assert retention.run(svc, clock=lambda: NOW).mailboxes[0].mails == 1
    finally:
        svc.close()
    c = client("root")
    page = c.get(f"/admin/mails/{e}")
    assert page.status_code == 200
    html = page.text
    assert "no longer exists" in html and "Router on fire" not in html
    assert html.index("state_changed") < html.index("retention_erased")
    assert c.get("/admin/mails/99999").status_code == 400


def test_a_reply_erased_in_a_later_batch_than_its_parent_leaves_no_edge_behind(env, db,
                                                                             monkeypatch):
    """The parent mail goes in the first batch, its reply in the second: the reply's
    reply_to edge (keyed by both ends) is deleted although the parent's row is gone by then,
    and a reply kept (in an open case) loses its edge to an erased parent too."""
    from email_rag.adapters.graph import EDGES

    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    parent = _closed(db, make_email(db, box, status="sent", message_id="<p@x>"), LONG_AGO)
    child = _closed(db, make_email(db, box, status="sent", message_id="<c@x>",
                                   in_reply_to="<p@x>"), LONG_AGO)
    other = _closed(db, make_email(db, box, status="sent", message_id="<o@x>"), LONG_AGO)
    kept = make_email(db, box, status="draft_ready", in_reply_to="<o@x>")
    with graphed(db, monkeypatch) as (svc, recorder):
        assert len(recorder.collections["reply_to"]) == 2
        assert retention.run(svc, clock=lambda: NOW, batch=1).mailboxes[0].mails == 3
        svc.close()
        assert set(recorder.collections["mails"]) == {f"m{kept}"}
        edges = [e for name in EDGES for e in recorder.collections[name].values()]
        assert not [e for e in edges if f"m{parent}" in e["_from"] + e["_to"]
                    or f"m{child}" in e["_from"] + e["_to"]
                    or f"m{other}" in e["_from"] + e["_to"]], edges


def test_a_lock_wait_timeout_in_the_delete_transaction_is_repeated(env, db, monkeypatch):
    """A worker holds the mail's row a moment longer than the lock wait (1 s here): the
    delete transaction is rolled back and repeated, and the pass ends done."""
    import threading

    from email_rag.db import Database
    from tests.conftest import MARIADB

    _mailboxes(monkeypatch, support=30)
    box = make_mailbox(db, "support")
    e = _closed(db, make_email(db, box, status="sent"), LONG_AGO)
    other = Database(**MARIADB, database=db.database)
    holding = threading.Event()

    def hold() -> None:
        with other.transaction() as cur:
            cur.fetchall("SELECT id FROM emails WHERE id = %s FOR UPDATE", (e,))
            holding.set()
            time.sleep(1.5)

    holder = threading.Thread(target=hold)
    svc = Services(get_settings())
    try:
        svc.db.execute("SET SESSION innodb_lock_wait_timeout = 1")
        real_replace = type(svc.vectors).replace_mail

        def then_lock(store, email_id, points):  # the worker takes the row meanwhile
            holder.start()
            holding.wait(10)
            return real_replace(store, email_id, points)

        monkeypatch.setattr(type(svc.vectors), "replace_mail", then_lock)
        done = retention.run(svc, clock=lambda: NOW)
    finally:
        if holder.is_alive():
            holder.join(10)
        svc.close()
        other.close()
    assert done.state == "done" and done.mailboxes[0].mails == 1
    assert _ids(db) == set()
