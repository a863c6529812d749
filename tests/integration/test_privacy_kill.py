"""Issue 29: a real `email-rag privacy forget` process SIGKILLed at each phase of the erasure
(email_rag.privacy.erasure: mark, vector deletes, graph deletes, send journal and audit
spool, the MariaDB delete transaction) and the same command run again.

The kill points are made deterministic from outside the process, by what a real
deployment can do to it, never by a switch in the code:

- mark: another connection holds the first mail's row (``SELECT ... FOR UPDATE``); the
  mark ``INSERT ... SELECT`` waits inside its transaction (seen in INNODB_TRX);
- vector deletes: another process holds the write lock of the local Qdrant collection's
  SQLite storage (``BEGIN IMMEDIATE``); the first point delete of the batch waits;
- graph deletes: the graph store (an ``ArangoRecorder``: python-arango's real HTTP calls,
  NOT ArangoDB) holds the request deleting one mail's vertex unanswered;
- journal/spool: another process holds the audit spool's flock (as a process appending to
  it does); ``flush_spool`` waits in ``flock`` (seen in /proc/locks) after the batch's send
  journal files were removed;
- MariaDB delete transaction: another connection holds a ``mail_assignments`` row of a
  mail of the batch; the cascade of ``DELETE FROM emails`` waits, every other delete of the
  batch done inside the open transaction (INNODB_TRX: LOCK WAIT, rows modified).

Kills in the second batch of 50 are staged by holding the graph request of the first batch
while the next lock is taken (the process cannot pass it meanwhile).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from email_rag.adapters.graph import mail_key, person_key
from email_rag.adapters.vectors import QdrantStore
from email_rag.cli import main
from email_rag.core.index_ports import MailToIndex
from email_rag.core.settings import get_settings
from email_rag.db import Database
from email_rag.db.audit import AuditEvent, AuditLog, events_for
from email_rag.indexing.indexer import Indexer
from email_rag.privacy.personal_data import address_hash
from email_rag.sending.journal import Acceptance, SendJournal
from email_rag.wiring.services import Services
from tests.conftest import MARIADB
from tests.factories import make_email, make_mailbox
from tests.helpers import ROOT, kill_when
from tests.index_helpers import ArangoRecorder
from tests.integration.test_privacy_export_and_forget import _index, _with_attachment

ALICE = "alice@customer.example"
CAROL = "carol@other.example"
N_ALICE = 120  # batches of 50: 50, 50, 20
BATCH = 50
KILL_WITHIN = 120.0  # seconds a kill point may take to reach (a loaded machine is slow)


class GatedArango(ArangoRecorder):
    """The recorder, holding the DELETE of the ``mails`` vertex ``gate`` unanswered until
    ``open()``: ``apply=True`` then answers it as usual (a slow server), ``False`` drops it
    (the caller died: nothing of it is applied)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: str | None = None
        self.arrived = threading.Event()
        self._opened = threading.Event()
        self._apply = True

    def hold(self, email_id: int) -> None:
        self.gate, self._apply = mail_key(email_id), True
        self.arrived.clear()
        self._opened.clear()

    def open(self, apply: bool) -> None:
        self._apply = apply
        self.gate = None
        self._opened.set()

    def answer(self, method: str, path: str, params: dict[str, Any],
               body: Any) -> tuple[int, Any]:
        if (method == "DELETE" and path.endswith("/document/mails") and self.gate
                and self.gate in (body or [])):
            self.arrived.set()
            self._opened.wait(KILL_WITHIN * 2)
            if not self._apply:
                return 503, {"error": True, "code": 503, "errorNum": 503,
                             "errorMessage": "caller gone"}
        return super().answer(method, path, params, body)

    def of_mail(self, email_id: int) -> list[str]:
        """Every document of the mail (its vertex, its replies, the edges naming it)."""
        m_id = f"mails/{mail_key(email_id)}"
        found = []
        for name, docs in self.collections.items():
            for key, d in docs.items():
                if (key == mail_key(email_id) and name == "mails") or (
                        name == "replies" and d.get("email_id") == email_id) or (
                        m_id in (d.get("_from"), d.get("_to"))):
                    found.append(f"{name}/{key}")
        return sorted(found)


class World:
    """Alice's 120 mails and Carol's 5, each with an attachment, a sent draft with an
    edit, a settled send attempt with a send journal file, a note, an assignment, a done
    queue entry, two audit events naming the customer, vector points and graph documents."""

    def __init__(self, db: Database, tmp_path: Path, graph: GatedArango) -> None:
        self.db, self.graph = db, graph
        self.cause = "forget"
        self.settings = get_settings()
        self.journal = SendJournal(self.settings.send_journal_dir)
        box = make_mailbox(db)
        db.execute("INSERT INTO users (name, role, password_hash) VALUES ('anna', 'staff', 'x')")
        user = db.fetchone("SELECT id FROM users WHERE name = 'anna'")["id"]
        self.alice: list[int] = []
        self.carol: list[int] = []
        self.attempts: dict[int, int] = {}
        audit = AuditLog(db, tmp_path / "setup-spool.jsonl")
        for i in range(N_ALICE + 5):
            who = CAROL if i % 25 == 3 else ALICE  # Carol's mails among Alice's
            raw, atts = _with_attachment(who)
            e = make_email(db, box, status="sent", from_addr=who, from_name=who.split("@")[0],
                           raw=raw, attachments=atts, subject=f"Invoice {i} from {who}",
                           message_id=f"<m{i}@{who.split('@')[1]}>")
            (self.carol if who == CAROL else self.alice).append(e)
            with db.transaction() as cur:
                cur.execute("INSERT INTO drafts (email_id, version, status, subject, body_draft,"
                            " body_final) VALUES (%s, 1, 'sent', 'Re', %s, %s)",
                            (e, f"Dear {who}", f"Dear {who}, refunded."))
                draft = cur.lastrowid
                cur.execute("INSERT INTO send_attempts (draft_id, message_id, status, tries, "
                            "sent_at, recipients) VALUES (%s, %s, 'sent', 1, NOW(6), %s)",
                            (draft, f"<r{draft}@example.com>", who))
                attempt = cur.lastrowid
                cur.execute("INSERT INTO draft_edits (draft_id, user_id, body) VALUES "
                            "(%s, %s, %s)", (draft, user, f"Dear {who}"))
                cur.execute("INSERT INTO mail_notes (email_id, user_id, author, body) VALUES "
                            "(%s, %s, 'anna', %s)", (e, user, f"{who} called"))
                cur.execute("INSERT INTO mail_assignments (email_id, user_id, assigned_by) "
                            "VALUES (%s, %s, 'anna')", (e, user))
                cur.execute("INSERT INTO jobs (kind, job_key, email_id, queue, state) VALUES "
                            "('process_email', %s, %s, 'email-rag', 'done')",
                            (f"process_email:{e}", e))
            self.attempts[e] = attempt
            audit.record(AuditEvent("worker", "email", e, "state_changed", "approved", "sent",
                                    detail={"to": who}),
                         AuditEvent("worker", "send_attempt", attempt, "relay_answer",
                                    detail={"answer": f"250 ok {who}"}))
            assert self.journal.record(Acceptance(attempt, f"<r{draft}@example.com>",
                                                  f"250 ok {who}", datetime(2026, 6, 1)))
        self.everyone = self.alice + self.carol
        _index(self.settings, {e: box for e in self.everyone})
        svc = Services(get_settings())
        try:
            for row in db.fetchall("SELECT * FROM emails ORDER BY id"):
                svc.graph.upsert_mail(Indexer(svc).graph_mail(MailToIndex.from_row(row)))
        finally:
            svc.close()
        self.before = self.rows()
        self.graph_before = {e: self.graph.of_mail(e) for e in self.everyone}
        self.events_before = self.event_count()
        assert all(len(docs) >= 3 for docs in self.graph_before.values())
        assert person_key(ALICE) in self.graph.collections["people"]

    def batch(self, n: int) -> list[int]:
        return self.alice[(n - 1) * BATCH:n * BATCH]

    def rows(self) -> dict[int, dict[str, Any]]:
        """Per mail: its rows per table, its attachments, its audit details."""
        db = self.db
        out: dict[int, dict[str, Any]] = {e: {"emails": 0, "attachments": 0, "drafts": 0,
                                              "send_attempts": 0, "draft_edits": 0,
                                              "mail_notes": 0, "mail_assignments": 0,
                                              "jobs": 0, "details": []}
                                          for e in self.everyone}

        def add(query: str, what: str) -> None:
            for r in db.fetchall(query):
                if int(r["e"]) in out:
                    out[int(r["e"])][what] += int(r["n"])

        add("SELECT id AS e, 1 AS n FROM emails", "emails")
        add("SELECT id AS e, JSON_LENGTH(attachments) AS n FROM emails", "attachments")
        add("SELECT email_id AS e, COUNT(*) AS n FROM drafts GROUP BY email_id", "drafts")
        add("SELECT d.email_id AS e, COUNT(*) AS n FROM send_attempts s JOIN drafts d "
            "ON d.id = s.draft_id GROUP BY d.email_id", "send_attempts")
        add("SELECT d.email_id AS e, COUNT(*) AS n FROM draft_edits x JOIN drafts d "
            "ON d.id = x.draft_id GROUP BY d.email_id", "draft_edits")
        add("SELECT email_id AS e, COUNT(*) AS n FROM mail_notes GROUP BY email_id",
            "mail_notes")
        add("SELECT email_id AS e, 1 AS n FROM mail_assignments", "mail_assignments")
        add("SELECT email_id AS e, COUNT(*) AS n FROM jobs GROUP BY email_id", "jobs")
        by_attempt = {str(a): e for e, a in self.attempts.items()}
        for r in db.fetchall("SELECT entity_type, entity_id, CAST(detail AS CHAR) AS d "
                             "FROM audit_log WHERE entity_type IN ('email', 'send_attempt') "
                             "ORDER BY id"):
            e = int(r["entity_id"]) if r["entity_type"] == "email" else by_attempt.get(
                r["entity_id"])
            if e in out:
                out[e]["details"].append(r["d"])
        return out

    def event_count(self) -> int:
        return int(self.db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE entity_type "
                                    "IN ('email', 'send_attempt')")["n"])

    def marks(self) -> set[int]:
        return {int(r["email_id"]) for r in self.db.fetchall(
            "SELECT email_id FROM erasure_marks WHERE cause = %s", (self.cause,))}

    def points(self) -> dict[int, int]:
        store = QdrantStore.from_settings(self.settings)
        try:
            return {e: store.count(e) for e in self.everyone}
        finally:
            store.close()

    def journal_left(self) -> set[int]:
        return {e for e, a in self.attempts.items()
                if (self.settings.send_journal_dir / f"attempt-{a}.json").exists()}


def _gone(row: dict[str, Any]) -> bool:
    """No row of the mail in any table, its audit events kept with their detail erased."""
    counts = {k: v for k, v in row.items() if k != "details"}
    return (not any(counts.values()) and len(row["details"]) >= 2
            and not any("alice" in d.lower() or "carol" in d.lower() for d in row["details"]))


def check_after_kill(w: World, *, gone: set[int], marked: set[int],
                     points_gone: set[int], graph_gone: set[int],
                     graph_partial: set[int] = frozenset(), journal_gone: set[int]) -> None:
    """After the kill: every mail whole or completely gone in MariaDB (never half), the
    stores' state of each mail as the phase the kill landed in leaves it, marks exactly on
    the mails the stores lost, and Carol whole everywhere."""
    rows, points = w.rows(), w.points()
    half = [e for e in w.everyone if rows[e] != w.before[e] and not _gone(rows[e])]
    assert half == [], f"half-deleted mails: {half[:5]}"
    assert {e for e in w.everyone if rows[e] != w.before[e]} == gone
    assert w.marks() == marked
    assert {e for e, n in points.items() if n == 0} == points_gone
    assert all(n == 2 for e, n in points.items() if e not in points_gone)
    graph_now = {e: w.graph.of_mail(e) for e in w.everyone}
    assert {e for e, docs in graph_now.items() if not docs} == graph_gone
    assert {e for e, docs in graph_now.items()
            if docs and docs != w.graph_before[e]} == graph_partial
    assert w.journal_left() == set(w.everyone) - journal_gone
    # a mail the stores lost is marked or gone: the next run finds it either way
    lost = {e for e in w.everyone if points[e] == 0 or graph_now[e] != w.graph_before[e]
            or e in journal_gone}
    assert lost <= marked | gone
    _carol_whole(w, rows, points, graph_now)


def _carol_whole(w: World, rows: dict, points: dict, graph_now: dict) -> None:
    for e in w.carol:
        assert rows[e] == w.before[e] and points[e] == 2 and graph_now[e] == w.graph_before[e]
    assert set(w.carol) <= w.journal_left()
    assert person_key(CAROL) in w.graph.collections["people"]


def forget_again(w: World, capsys, spool: Path) -> None:
    """The same command again, in this process: done, and nothing of Alice anywhere."""
    get_settings.cache_clear()
    capsys.readouterr()
    code = main(["privacy", "forget", ALICE, "--reason", "Art. 17", "--json"])
    out = json.loads(capsys.readouterr().out)
    done = out["data"]
    assert code == 0 and (done["state"], done["remaining"]) == ("done", {}), done
    # the run's record (issue 43): completed and verified, nothing remaining
    assert (out["status"], out["verified"], out["remaining"]) == ("completed", True, 0), out
    rows, points = w.rows(), w.points()
    assert [e for e in w.alice if not _gone(rows[e])] == []
    assert not w.db.fetchall("SELECT * FROM erasure_marks")
    assert [e for e in w.alice if points[e]] == []
    graph_now = {e: w.graph.of_mail(e) for e in w.everyone}
    assert [e for e in w.alice if graph_now[e]] == []
    assert person_key(ALICE) not in w.graph.collections["people"]
    assert not [d for docs in w.graph.collections.values() for d in docs.values()
                if ALICE in json.dumps(d).lower()]
    assert w.journal_left() == set(w.carol)
    for f in spool.parent.glob(spool.name + "*"):
        assert "alice" not in f.read_text().lower(), f
    # the audit trail: no event lost, no detail names Alice, and the person's events say
    # what happened (the killed run's start without an end, then the run that finished)
    assert w.event_count() >= w.events_before
    assert w.db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE LOWER(CAST(detail AS "
                         "CHAR)) LIKE '%alice%'")["n"] == 0
    digest = address_hash(ALICE)
    assert [e["event"] for e in events_for(w.db, "person", digest)] == [
        "privacy_forget_started", "privacy_forget_started", "privacy_forget_done"]
    assert w.db.fetchone("SELECT state FROM privacy_erasures WHERE "
                         "address_hash = %s", (digest,))["state"] == "done"
    _carol_whole(w, rows, points, graph_now)


@contextmanager
def world(env, db, tmp_path, monkeypatch) -> Iterator[tuple[World, dict[str, str]]]:
    graph = GatedArango()
    monkeypatch.setenv("EMAIL_RAG_ARANGO_URL", graph.url)
    monkeypatch.setenv("EMAIL_RAG_ARANGO_TIMEOUT", str(KILL_WITHIN * 2))
    monkeypatch.setenv("EMAIL_RAG_SEND_JOURNAL_DIR", str(tmp_path / "journal"))
    get_settings.cache_clear()
    try:
        w = World(db, tmp_path, graph)
        child_env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}
        yield w, child_env
    finally:
        graph.open(apply=False)
        graph.close()


def start_forget(child_env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "email_rag", "privacy", "forget", ALICE,
                             "--reason", "Art. 17", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env)


def until(proc: subprocess.Popen, what: str, found: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + KILL_WITHIN
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        assert proc.poll() is None, (what, proc.communicate())
        time.sleep(0.005)
    d = Database(**MARIADB)
    try:
        trx = d.fetchall("SELECT trx_state, LEFT(trx_query, 120) AS q, trx_mysql_thread_id "
                         "FROM information_schema.INNODB_TRX") + d.fetchall(
            "SELECT ID, DB, COMMAND, STATE, TIME, LEFT(INFO, 100) AS i FROM "
            "information_schema.PROCESSLIST WHERE DB LIKE 'hpk%'")
    finally:
        d.close()
    proc.send_signal(signal.SIGABRT)  # its faulthandler prints where it is
    raise AssertionError(f"not seen within {KILL_WITHIN} s: {what}\n{trx}\n"
                         f"{proc.communicate()[1][-3000:]}")


def waiting_trx(db: Database, query_start: str,
                listed: bool = False) -> Callable[[], dict | None]:
    """The forget process's connection, in a statement beginning with ``query_start`` for a
    second or more (one of its rows is held by the test: it waits), with its transaction
    from INNODB_TRX when that lists it (in LOCK WAIT; a transaction that has not written
    yet is not listed; ``listed``: wait until it is)."""
    def find() -> dict | None:
        row = db.fetchone("SELECT ID, TIME, STATE, INFO FROM information_schema.PROCESSLIST "
                          "WHERE DB = %s AND INFO LIKE %s AND TIME >= 1",
                          (db.database, query_start + "%"))
        if row:
            row["trx"] = db.fetchone(
                "SELECT trx_state, trx_rows_modified, trx_rows_locked FROM "
                "information_schema.INNODB_TRX WHERE trx_mysql_thread_id = %s", (row["ID"],))
        return row if row and (row["trx"] or not listed) else None
    return find


def graph_held(graph: GatedArango) -> Callable[[], bool]:
    return graph.arrived.is_set


def test_killed_inside_the_mark_transaction(env, db, tmp_path, monkeypatch, capsys):
    """Another erasure (a retention pass) has marked Alice's first mail and not committed
    yet: the mark INSERT of batch 1 waits inside its transaction and is killed there.
    Nothing changed anywhere; the rerun erases all."""
    with world(env, db, tmp_path, monkeypatch) as (w, child_env):
        holder = Database(**MARIADB, database=db.database).connect()
        try:
            holder.autocommit = False
            holder.cursor().execute(
                "INSERT INTO erasure_marks (email_id, mailbox_id, cause) SELECT id, mailbox_id,"
                " 'retention' FROM emails WHERE id = ?", (w.alice[0],))
            proc = start_forget(child_env)
            trx = kill_when(proc, lambda: until(
                proc, "the mark waiting", waiting_trx(db, "INSERT IGNORE INTO erasure_marks")))
            holder.rollback()  # the other pass called its mark off
        finally:
            holder.close()
        assert trx["trx"] is None or trx["trx"]["trx_state"] == "LOCK WAIT", trx
        check_after_kill(w, gone=set(), marked=set(), points_gone=set(), graph_gone=set(),
                         journal_gone=set())
        forget_again(w, capsys, Path(env["EMAIL_RAG_AUDIT_SPOOL_PATH"]))


def test_killed_waiting_on_the_first_vector_delete_of_the_second_batch(
        env, db, tmp_path, monkeypatch, capsys):
    """Batch 1 erased; batch 2 marked, its first point delete waiting on the local Qdrant
    storage's write lock (held by another process) when the kill lands: batch 2 whole and
    marked with every point there, batch 3 untouched."""
    with world(env, db, tmp_path, monkeypatch) as (w, child_env):
        storage = next(Path(w.settings.qdrant_path).rglob("storage.sqlite"))
        lock = sqlite3.connect(str(storage), isolation_level=None)
        try:
            w.graph.hold(w.batch(1)[-1])
            proc = start_forget(child_env)

            def second_batch_waits_on_qdrant() -> bool:
                until(proc, "batch 1 in the graph phase", graph_held(w.graph))
                lock.execute("BEGIN IMMEDIATE")  # the storage's write lock
                w.graph.open(apply=True)
                until(proc, "batch 2 marked", lambda: w.marks() == set(w.batch(2)))
                return until(proc, "its first point delete waiting for the lock",
                             lambda: _sleeping(proc.pid))

            kill_when(proc, second_batch_waits_on_qdrant)
            check_after_kill(w, gone=set(w.batch(1)), marked=set(w.batch(2)),
                             points_gone=set(w.batch(1)), graph_gone=set(w.batch(1)),
                             journal_gone=set(w.batch(1)))
        finally:
            lock.close()
        forget_again(w, capsys, Path(env["EMAIL_RAG_AUDIT_SPOOL_PATH"]))


def test_killed_in_the_graph_deletes_of_the_second_batch(env, db, tmp_path, monkeypatch,
                                                         capsys):
    """The graph store holds the request deleting the vertex of batch 2's third mail: the
    first two mails' documents are gone, the third's edges are gone and its vertex is not,
    the rest of the batch is whole in the graph; all of batch 2 lost its points and is
    marked, whole in MariaDB, its journal files still there."""
    with world(env, db, tmp_path, monkeypatch) as (w, child_env):
        third = w.batch(2)[2]
        w.graph.hold(third)
        proc = start_forget(child_env)
        kill_when(proc, lambda: until(proc, "batch 2's third graph delete", graph_held(w.graph)))
        w.graph.open(apply=False)  # the request of the dead process is never applied
        check_after_kill(w, gone=set(w.batch(1)), marked=set(w.batch(2)),
                         points_gone=set(w.batch(1) + w.batch(2)),
                         graph_gone=set(w.batch(1) + w.batch(2)[:2]), graph_partial={third},
                         journal_gone=set(w.batch(1)))
        forget_again(w, capsys, Path(env["EMAIL_RAG_AUDIT_SPOOL_PATH"]))


def _sleeping(pid: int) -> str | None:
    """The main thread's system call when it sleeps (SQLite's busy handler retries the lock
    between sleeps): /proc/PID/syscall starts with its number (x86-64: 35 nanosleep,
    230 clock_nanosleep)."""
    call = Path(f"/proc/{pid}/syscall").read_text().split()
    return " ".join(call[:1]) if call and call[0] in ("35", "230") else None


def _flock_waiters(pid: int) -> bool:
    """Whether ``pid`` waits for an flock (/proc/locks lists a waiter with ``->``)."""
    return any("->" in line and "FLOCK" in line and f" {pid} " in line
               for line in Path("/proc/locks").read_text().splitlines())


def test_killed_after_the_journal_waiting_for_the_audit_spool(env, db, tmp_path, monkeypatch,
                                                              capsys):
    """Another process appended an event of a batch-2 mail to the audit spool and holds its
    lock: batch 2's journal files are removed, its points and graph documents gone, and the
    kill lands in flush_spool's flock. Batch 2 whole in MariaDB and marked; the rerun
    flushes the spooled event and erases its detail."""
    spool = Path(env["EMAIL_RAG_AUDIT_SPOOL_PATH"])
    with world(env, db, tmp_path, monkeypatch) as (w, child_env):
        w.graph.hold(w.batch(2)[0])
        proc = start_forget(child_env)
        fd = -1
        try:
            def flush_waits() -> bool:
                nonlocal fd
                until(proc, "batch 2 in the graph phase", graph_held(w.graph))
                AuditLog(db, spool).spool([AuditEvent(
                    "worker", "email", w.batch(2)[5], "note_added", detail={"by": ALICE})])
                fd = os.open(spool, os.O_RDWR)
                fcntl.flock(fd, fcntl.LOCK_EX)
                w.graph.open(apply=True)
                return until(proc, "flush_spool waiting for the lock",
                             lambda: _flock_waiters(proc.pid))

            kill_when(proc, flush_waits)
        finally:
            if fd >= 0:
                os.close(fd)
        assert ALICE in spool.read_text()
        check_after_kill(w, gone=set(w.batch(1)), marked=set(w.batch(2)),
                         points_gone=set(w.batch(1) + w.batch(2)),
                         graph_gone=set(w.batch(1) + w.batch(2)),
                         journal_gone=set(w.batch(1) + w.batch(2)))
        forget_again(w, capsys, spool)
        [spooled] = [e for e in events_for(db, "email", w.batch(2)[5])
                     if e["event"] == "note_added"]
        assert "alice" not in json.dumps(spooled, default=str).lower()


def test_killed_inside_the_delete_transaction_of_the_second_batch(
        env, db, tmp_path, monkeypatch, capsys):
    """Another connection holds the assignment row of batch 2's tenth mail: the batch's
    transaction has erased the audit details and deleted the queue entries, send attempts,
    drafts with their edits and the first mails when the cascade waits; killed there, the
    rollback leaves batch 2 whole in MariaDB (audit details included) and marked."""
    with world(env, db, tmp_path, monkeypatch) as (w, child_env):
        holder = Database(**MARIADB, database=db.database)
        try:
            with holder.transaction() as cur:
                cur.fetchall("SELECT email_id FROM mail_assignments WHERE email_id = %s "
                             "FOR UPDATE", (w.batch(2)[9],))
                proc = start_forget(child_env)
                trx = kill_when(proc, lambda: until(
                    proc, "batch 2's delete transaction waiting",
                    waiting_trx(db, "DELETE FROM emails", listed=True)))
        finally:
            holder.close()
        # inside the transaction: 50 x 2 audit details, 50 jobs, 50 send attempts, 50
        # drafts and 9 mails at least changed
        assert trx["trx"]["trx_state"] == "LOCK WAIT", trx
        assert trx["trx"]["trx_rows_modified"] >= 100 + 3 * 50 + 9, trx
        check_after_kill(w, gone=set(w.batch(1)), marked=set(w.batch(2)),
                         points_gone=set(w.batch(1) + w.batch(2)),
                         graph_gone=set(w.batch(1) + w.batch(2)),
                         journal_gone=set(w.batch(1) + w.batch(2)))
        forget_again(w, capsys, Path(env["EMAIL_RAG_AUDIT_SPOOL_PATH"]))


def test_a_retention_pass_killed_in_the_graph_deletes_is_finished_by_the_next(
        env, db, tmp_path, monkeypatch, capsys):
    """Retention (Alice's 120 cases closed in 2020, Carol's today; batches of 50) killed
    while the graph store holds the delete of batch 2's third mail: the same state as
    forget's kill there; the next pass erases the marked batch first, then the rest, the
    person vertex of Alice (no stored mail names her any more) included, each erased mail
    named by exactly one batch event."""
    monkeypatch.setenv("EMAIL_RAG_MAILBOXES", json.dumps([{
        "name": "support", "username": "support@example.com", "port": 9,
        "retention_days": 30}]))
    monkeypatch.setenv("EMAIL_RAG_RETENTION_BATCH_SIZE", str(BATCH))
    with world(env, db, tmp_path, monkeypatch) as (w, child_env):
        w.cause = "retention"
        db.execute("UPDATE emails SET closed_at = '2020-01-01' WHERE from_addr = %s", (ALICE,))
        third = w.batch(2)[2]
        w.graph.hold(third)
        proc = subprocess.Popen([sys.executable, "-m", "email_rag", "privacy", "retention",
                                 "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=child_env)
        kill_when(proc, lambda: until(proc, "batch 2's third graph delete",
                                      graph_held(w.graph)))
        w.graph.open(apply=False)
        check_after_kill(w, gone=set(w.batch(1)), marked=set(w.batch(2)),
                         points_gone=set(w.batch(1) + w.batch(2)),
                         graph_gone=set(w.batch(1) + w.batch(2)[:2]), graph_partial={third},
                         journal_gone=set(w.batch(1)))
        assert person_key(ALICE) in w.graph.collections["people"]  # batch 3 still names her

        get_settings.cache_clear()
        capsys.readouterr()
        code = main(["privacy", "retention", "--json"])
        done = json.loads(capsys.readouterr().out)["data"]
        assert code == 0 and done["state"] == "done", done
        assert done["mailboxes"][0]["mails"] == N_ALICE - BATCH
        rows, points = w.rows(), w.points()
        assert [e for e in w.alice if not _gone(rows[e])] == []
        assert not db.fetchall("SELECT * FROM erasure_marks")
        assert [e for e in w.alice if points[e]] == []
        graph_now = {e: w.graph.of_mail(e) for e in w.everyone}
        assert [e for e in w.alice if graph_now[e]] == []
        assert person_key(ALICE) not in w.graph.collections["people"]
        assert w.journal_left() == set(w.carol)
        assert db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE LOWER(CAST(detail AS "
                           "CHAR)) LIKE '%alice%'")["n"] == 0
        assert w.event_count() >= w.events_before
        named = [i for e in events_for(db, "mailbox", "support")
                 if e["event"] == "retention_erased"
                 for i in (e["detail"] if isinstance(e["detail"], dict)
                           else json.loads(e["detail"]))["email_ids"]]
        assert sorted(named) == sorted(w.alice)
        _carol_whole(w, rows, points, graph_now)
