"""The poller against the real Dovecot, MariaDB and Redis: exactly one row and one job per mail."""

from __future__ import annotations

import json
import threading

import pytest
from email_rag_harness.testing.mails import mail

from email_rag.adapters.imap import FetchedMail
from email_rag.core.errors import DatabaseBusyError
from email_rag.ingest import store
from email_rag.ingest.poller import Poller
from email_rag.ingest.store import (
    BatchTarget,
    PrepareOptions,
    prepare,
    store_batch,
    store_batch_retrying,
)
from tests.integration.ingest_helpers import emails, events, jobs, mailbox_row, services_for


@pytest.fixture
def svc(settings, mailbox):
    services = services_for(settings, mailbox)
    yield services
    services.close()


def test_happy_path_stores_rows_jobs_cursor_and_hands_off_to_redis(svc, db, mailbox):
    """GIVEN 5 mails WHEN polled twice THEN 5 rows, 5 queued jobs in Redis, cursor at 5."""
    mailbox.append_many([mail(i, extra={"Cc": "chef@example.com"}) for i in range(1, 6)])
    result = Poller(svc).poll()
    assert result.totals | {} == {"fetched": 5, "new": 5, "duplicate": 0, "queued": 5,
                                  "skipped": 0, "failed": 0, "too_large": 0, "reused_id": 0,
                                  "missing": 0, "enqueued": 5, "enqueue_failed": 0}
    rows = emails(db)
    assert [r["message_id"] for r in rows] == [f"<mail-{i}@example.org>" for i in range(1, 6)]
    first = rows[0]
    assert (first["status"], first["parse_status"], first["folder"], first["uid"]) == (
        "received", "pending", "INBOX", 1)
    assert first["from_addr"] == "kunde@example.org" and first["subject"] == "Anfrage 1"
    assert first["cc_addrs"] == "chef@example.com" and first["to_addrs"] == "support@example.com"
    assert bytes(first["raw"]) == mail(1, extra={"Cc": "chef@example.com"})
    assert first["raw_size"] == len(first["raw"]) and str(first["sent_at"]) == "2026-11-02 09:30:00"
    assert len(first["thread_key"]) == 64
    job_rows = jobs(db)
    assert [(j["kind"], j["job_key"], j["state"], j["queue"]) for j in job_rows] == [
        ("process_email", f"process_email:{r['id']}", "queued", "email-rag") for r in rows]
    assert all(j["enqueued_at"] is not None for j in job_rows)
    assert svc.queue.depths(["email-rag"]) == {"email-rag": 5}
    assert all(svc.queue.is_pending(j["id"]) for j in job_rows)
    cursor = db.fetchone("SELECT * FROM mailbox_cursors")
    assert cursor["last_uid"] == 5 and cursor["folder"] == "INBOX"
    received = events(db, "received", "email")
    assert len(received) == 5
    assert json.loads(received[0]["detail"])["job_id"] == job_rows[0]["id"]
    mb = mailbox_row(db, mailbox.name)
    assert mb["last_success_at"] is not None and mb["lease_owner"] is None
    # a second poll finds nothing new and fetches nothing again
    again = Poller(svc).poll()
    assert again.totals["fetched"] == 0 and len(emails(db)) == 5


def test_duplicate_delivery_two_uids_same_message_id_is_one_row_one_job(svc, db, mailbox):
    mailbox.append(mail(1))
    mailbox.append(b"Received: from mx2.example\r\n" + mail(1))  # same Message-ID, new UID
    mailbox.append(mail(2))
    result = Poller(svc).poll()
    assert (result.totals["new"], result.totals["duplicate"]) == (2, 1)
    assert len(emails(db)) == 2 and len(jobs(db)) == 2
    [dup] = events(db, "duplicate_delivery")
    assert json.loads(dup["detail"])["uid"] == 2 and dup["entity_id"] == str(emails(db)[0]["id"])
    mailbox.append(mail(1))  # and once more in a later poll
    assert Poller(svc).poll().totals["duplicate"] == 1
    assert len(emails(db)) == 2 and len(jobs(db)) == 2


def test_missing_message_id_twice_is_deduplicated_on_content(svc, db, mailbox):
    no_id = mail(1, message_id=None)
    mailbox.append_many([no_id, no_id, mail(2, message_id=None), b"Message-ID: <>\r\n" + no_id])
    result = Poller(svc).poll()
    assert (result.totals["new"], result.totals["duplicate"]) == (2, 2)
    rows = emails(db)
    assert [r["message_id"] for r in rows] == [None, None] and len(jobs(db)) == 2


def test_repoll_after_a_crash_before_the_commit_stores_everything_exactly_once(
        svc, db, mailbox, monkeypatch):
    """GIVEN the 2nd batch's transaction dies before its commit WHEN polled again THEN once."""
    mailbox.deliver([mail(i) for i in range(1, 11)])
    svc.settings.imap_fetch_batch = 3
    calls = {"n": 0}
    real = store.write_events

    def crash_in_second_batch(cur, evts):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("simulated crash inside the batch transaction")
        return real(cur, evts)

    monkeypatch.setattr(store, "write_events", crash_in_second_batch)
    crashed = Poller(svc).poll()
    assert crashed.mailboxes[0].status == "error"
    assert len(emails(db)) == 3 and len(jobs(db)) == 3  # batch 1 committed, batch 2 rolled back
    assert db.fetchone("SELECT last_uid FROM mailbox_cursors")["last_uid"] == 3
    monkeypatch.setattr(store, "write_events", real)
    after = Poller(svc).poll(force=True)
    assert after.totals["fetched"] == 7 and after.totals["duplicate"] == 0
    rows = emails(db)
    assert len(rows) == 10 and len({r["message_id"] for r in rows}) == 10
    assert len(jobs(db)) == 10 and svc.queue.depths(["email-rag"])["email-rag"] == 10


def test_two_pollers_started_at_once_store_each_mail_once(settings, db, mailbox):
    """GIVEN 300 mails WHEN two pollers (threads, own connections) start together THEN one
    row and one job per mail, and the lease let only one of them poll."""
    mailbox.deliver([mail(i) for i in range(300)])
    services = [services_for(settings, mailbox, imap_fetch_batch=20) for _ in range(2)]
    results = [None, None]
    barrier = threading.Barrier(2)

    def run(n: int) -> None:
        barrier.wait()
        results[n] = Poller(services[n]).poll()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)  # 300 mails through IMAP and MariaDB: slow on a busy machine
    for s in services:
        s.close()
    statuses = sorted(r.mailboxes[0].status for r in results)
    assert statuses in (["busy", "ok"], ["ok", "ok"])  # "ok","ok" only if run one after another
    assert sum(r.totals["new"] for r in results) == 300
    assert sum(r.totals["fetched"] for r in results) == 300  # no mail fetched by both
    assert db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT dedup_key) d FROM emails") == {
        "n": 300, "d": 300}
    assert db.fetchone("SELECT COUNT(*) n, COUNT(DISTINCT email_id) d FROM jobs") == {
        "n": 300, "d": 300}


def test_dedup_holds_even_when_two_writers_bypass_the_lease(settings, db, mailbox):
    """Belt and braces: the same batch stored by two transactions at once -> one row, one job.

    (Two such writers can deadlock on the unique keys; the rolled-back one is retried, as
    the poller does, and then finds every mail stored.)"""
    svc = services_for(settings, mailbox)
    db.execute("INSERT INTO mailboxes (name) VALUES (?)", (mailbox.name,))
    row = db.fetchone("SELECT id FROM mailboxes WHERE name = ?", (mailbox.name,))
    opts = PrepareOptions("email-rag.invalid")
    prepared = [prepare(FetchedMail(i, mail(i), 500), opts) for i in range(1, 51)]
    target = BatchTarget(row["id"], mailbox.name, "INBOX", 7, "email-rag")
    writers = [services_for(settings, mailbox) for _ in range(2)]
    results, barrier = [None, None], threading.Barrier(2)

    def run(n: int) -> None:
        barrier.wait()
        results[n] = store_batch_retrying(writers[n].db, target, prepared, 50)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)  # generous: a busy machine
    for w in writers + [svc]:
        w.close()
    assert sorted(len(r.new) for r in results) == [0, 50]
    assert sorted(len(r.duplicates) for r in results) == [0, 50]
    assert len(emails(db, "id")) == 50 and len(jobs(db)) == 50


def test_uidvalidity_change_starts_the_folder_over_without_duplicates(settings, db, mailbox):
    mailbox.create_folder("Support")
    mailbox.append_many([mail(i) for i in range(1, 4)], "Support")
    svc = services_for(settings, mailbox.config.model_copy(update={"folders": ["Support"]}))
    first = Poller(svc).poll()
    old = first.mailboxes[0].folders[0].uidvalidity
    # the server loses its UIDs: folder recreated, same mails plus one new one
    mailbox.delete_folder("Support")
    mailbox.create_folder("Support")
    mailbox.append_many([mail(i) for i in range(1, 5)], "Support")
    second = Poller(svc).poll()
    svc.close()
    folder = second.mailboxes[0].folders[0]
    assert folder.uidvalidity_changed and folder.uidvalidity != old
    assert (folder.fetched, folder.new, folder.duplicate) == (4, 1, 3)
    assert len(emails(db)) == 4 and len(jobs(db)) == 4
    [audit] = events(db, "uidvalidity_changed")
    detail = json.loads(audit["detail"])
    assert (detail["old_uidvalidity"], detail["new_uidvalidity"], detail["old_last_uid"]) == (
        old, folder.uidvalidity, 3)
    cursor = db.fetchone("SELECT * FROM mailbox_cursors WHERE folder = 'Support'")
    assert (cursor["uidvalidity"], cursor["last_uid"]) == (folder.uidvalidity, 4)


def test_loop_guard_records_without_job(settings, db, mailbox):
    """Our own mails, auto-replies, bulk and bounces are stored as no_reply; no job, parsed."""
    config = mailbox.config.model_copy(update={"address": "support@example.com"})
    svc = services_for(settings, config)
    mailbox.append_many([
        mail(1, extra={"X-Email-RAG": "draft=3"}),
        mail(2, message_id="<r-2@email-rag.invalid>"),
        mail(3, sender="Support <support@example.com>"),
        mail(4, extra={"Auto-Submitted": "auto-replied"}),
        mail(5, extra={"Precedence": "bulk"}),
        mail(6, sender="MAILER-DAEMON@mx.example.org"),
        mail(7),
    ])
    result = Poller(svc).poll()
    svc.close()
    assert (result.totals["new"], result.totals["skipped"], result.totals["queued"]) == (7, 6, 1)
    rows = emails(db, "status", "auto_reason", "parse_status", "body_text", "id")
    assert [r["auto_reason"] for r in rows] == [
        "own_mail:x-email-rag", "own_mail:message_id", "own_mail:from_address",
        "auto_submitted:auto-replied", "precedence:bulk", "bounce:mailer-daemon", None]
    assert [r["status"] for r in rows] == ["no_reply"] * 6 + ["received"]
    assert all(r["parse_status"] == "ok" and "Bestellung" in r["body_text"] for r in rows[:6])
    assert [j["email_id"] for j in jobs(db)] == [rows[6]["id"]]
    # recorded means fetched once: the next poll fetches nothing
    assert Poller(services_for(settings, config)).poll().totals["fetched"] == 0


def test_lease_held_by_a_live_poller_is_respected_expired_or_dead_taken_over(svc, db, mailbox):
    mailbox.append(mail(1))
    Poller(svc).poll()  # creates the mailboxes row
    mailbox.append(mail(2))
    db.execute("UPDATE mailboxes SET lease_owner = 'otherhost:1:abc', "
               "lease_until = NOW(6) + INTERVAL 60 SECOND")
    busy = Poller(svc).poll()
    assert busy.mailboxes[0].status == "busy" and busy.totals["fetched"] == 0
    assert "otherhost:1:abc" in busy.mailboxes[0].error
    db.execute("UPDATE mailboxes SET lease_until = NOW(6) - INTERVAL 1 SECOND")
    assert Poller(svc).poll().totals["new"] == 1
    [taken] = events(db, "lease_taken_over")
    assert json.loads(taken["detail"])["why"] == "lease expired"
    # a poller on this host whose process is gone does not block until expiry
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    mailbox.append(mail(3))
    db.execute("UPDATE mailboxes SET lease_owner = ?, lease_until = NOW(6) + INTERVAL 60 SECOND",
               (f"{socket.gethostname()[:60]}:{dead}:dead",))
    assert Poller(svc).poll().totals["new"] == 1
    assert json.loads(events(db, "lease_taken_over")[-1]["detail"])["why"] == (
        "owner process is dead")
    assert len(emails(db)) == 3


def test_a_lost_lease_rolls_the_batch_back(svc, db, mailbox):
    db.execute("INSERT INTO mailboxes (name, lease_owner, lease_until) VALUES "
               "(?, 'someone-else', NOW(6) + INTERVAL 60 SECOND)", (mailbox.name,))
    row = mailbox_row(db, mailbox.name)
    prepared = [prepare(FetchedMail(1, mail(1), 500), PrepareOptions("email-rag.invalid"))]
    from email_rag.core.errors import LeaseLostError

    with pytest.raises(LeaseLostError):
        store_batch(db, BatchTarget(row["id"], mailbox.name, "INBOX", 1, "email-rag", "me"),
                    prepared, 1)
    assert emails(db) == [] and jobs(db) == []


def test_a_deadlocked_batch_transaction_is_retried(svc, db, mailbox, monkeypatch):

    mailbox.append_many([mail(1), mail(2)])
    real, calls = store.store_batch, {"n": 0}

    def deadlock_once(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise DatabaseBusyError("MariaDB error 1213: Deadlock found")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "store_batch", deadlock_once)
    result = Poller(svc).poll()
    assert result.mailboxes[0].status == "ok" and result.totals["new"] == 2 and calls["n"] == 2
    assert len(emails(db)) == 2 and len(jobs(db)) == 2


def test_poll_once_recounts_only_what_it_polled_under_its_lease(svc, db, mailbox, monkeypatch):
    """Two `poll --once` at the same moment: the one turned away from a busy mailbox must not
    count the lease holder's batches, committed meanwhile, as a discrepancy of its own (exit 2
    came from timing luck). The one that polls recounts its own mail under its lease."""
    from argparse import Namespace

    from email_rag.cli import poll as poll_cli
    from email_rag.cli.output import ExitCode
    from email_rag.ingest import mailbox_state as ms
    from tests.factories import make_email, make_job

    def busy_while_the_holder_commits(db_, config, owner, seconds, force=False):
        mb = ms.ensure_mailbox(db_, config)
        for _ in range(3):  # the holder's batch, committed while this poll is turned away
            make_job(db, make_email(db, mailbox_id=mb.id))
        return mb, ms.LeaseResult(False, "busy", holder="vm:1:other")

    args = Namespace(once=True, mailbox=None, force=False)
    with monkeypatch.context() as m:
        m.setattr(ms, "ensure_and_lease", busy_while_the_holder_commits)
        turned_away = poll_cli.run(args, svc)
    assert turned_away.exit_code == ExitCode.OK, turned_away.message
    assert turned_away.data["mailboxes"][0]["status"] == "busy"
    assert "Re-counted" not in turned_away.message

    mailbox.append_many([mail(i) for i in range(1, 4)])
    polled = poll_cli.run(args, svc)
    assert polled.exit_code == ExitCode.OK, polled.message
    assert polled.data["recounted"] == {"mails_stored": 3, "jobs_created": 3, "mails_now": 6}
    assert "Re-counted in MariaDB: 3 new mail row(s) and 3 new processing entries, as " \
           "reported." in polled.message


def test_a_successful_poll_resets_the_health_and_releases_its_lease_in_one_statement(
        svc, db, mailbox):
    """GIVEN a mailbox that had failed (backoff over) WHEN a poll succeeds THEN the failures
    are reset, the success time set and the lease released - by the success record's one
    statement, which releases the lease only when it is the caller's."""
    from email_rag.ingest import mailbox_state as ms

    mailbox.append(mail(1))
    Poller(svc).poll()  # creates the mailboxes row
    db.execute("UPDATE mailboxes SET consecutive_failures = 2, failing_since = NOW(6), "
               "backoff_until = NOW(6) - INTERVAL 1 SECOND, last_success_at = NULL")
    assert Poller(svc).poll().mailboxes[0].status == "ok"
    row = mailbox_row(db, mailbox.name)
    assert (row["consecutive_failures"], row["failing_since"], row["backoff_until"]) == (
        0, None, None)
    assert row["last_success_at"] is not None
    assert (row["lease_owner"], row["lease_until"]) == (None, None)
    assert len(events(db, "poll_recovered")) == 1

    held = ms.read_mailbox(db, mailbox.name)
    db.execute("UPDATE mailboxes SET lease_owner = 'someone-else', "
               "lease_until = NOW(6) + INTERVAL 60 SECOND")
    ms.record_success(db, held, release_owner="me")  # our lease was taken meanwhile: kept
    row = mailbox_row(db, mailbox.name)
    assert row["lease_owner"] == "someone-else" and row["lease_until"] is not None
    db.execute("UPDATE mailboxes SET lease_owner = 'me'")
    ms.record_success(db, held, release_owner="me")
    row = mailbox_row(db, mailbox.name)
    assert (row["lease_owner"], row["lease_until"]) == (None, None)


def test_the_insert_limits_come_from_the_max_allowed_packet_read_with_the_mailbox(
        svc, db, mailbox):
    """The mailbox's row is read with the connection's max_allowed_packet; the poll sizes its
    inserts from it (no read of its own)."""
    from dataclasses import replace

    from email_rag.ingest import mailbox_state as ms

    mb, lease = ms.ensure_and_lease(db, mailbox.config, "me", 60)
    assert lease.got and mb.max_allowed_packet == int(
        db.fetchone("SELECT @@max_allowed_packet AS p")["p"])
    small = replace(mb, max_allowed_packet=2_000_000)
    statements = svc.db.statements
    assert Poller(svc)._limits_for_packet(small) == (
        min(svc.settings.max_mail_bytes, 2_000_000 - 256_000), 1_000_000)
    assert svc.db.statements == statements
