"""History import (issue 31) against the real Dovecot, MariaDB and Redis: older mail and our
replies in Sent become indexed memory, never work; new mail stays work."""

from __future__ import annotations

import json
import signal
import threading
import time
from datetime import UTC, datetime

import pytest
from email_rag_harness.testing.dovecot import mailboxes_json
from email_rag_harness.testing.mails import mail

from email_rag.ingest import history
from email_rag.ingest.poller import Poller
from email_rag.runtime.job_runner import JobRunner
from tests.helpers import run_cli, spawn
from tests.integration.ingest_helpers import emails, events, jobs, services_for

OLD = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
SENT_REPLY = datetime(2026, 11, 3, 10, 0, tzinfo=UTC)
N = 200


def _answered(n: int) -> bool:  # flagged \Answered, with our reply in Sent
    return n % 5 == 0


def _flag_only(n: int) -> bool:  # flagged \Answered, the reply is not in Sent
    return n % 7 == 3 and not _answered(n)


def _reply(n: int) -> bytes:
    return mail(10_000 + n, subject=f"Re: Anfrage {n}", sender="support@example.com",
                to="kunde@example.org", message_id=f"<reply-{n}@example.com>",
                body=f"Guten Tag,\nBestellung {n} ist unterwegs.\n", date=SENT_REPLY,
                extra={"In-Reply-To": f"<mail-{n}@example.org>",
                       "References": f"<mail-{n}@example.org>"})


def _fill_history(mailbox) -> None:
    plain = [mail(n, date=OLD) for n in range(N) if not (_answered(n) or _flag_only(n))]
    mailbox.append_many(plain)
    with mailbox.imap() as imap:
        for n in range(N):
            if _answered(n) or _flag_only(n):
                imap.append("INBOX", mail(n, date=OLD), flags=[r"\Answered"])
    mailbox.create_folder("Sent")
    mailbox.append_many([_reply(n) for n in range(N) if _answered(n)], folder="Sent")


@pytest.fixture
def svc(settings, mailbox):
    services = services_for(settings, mailbox, history_import=True)
    yield services
    services.close()


def _count(db, query: str, *args) -> int:
    return int(next(iter(db.fetchone(query, args or None).values())))


def test_history_is_stored_indexed_linked_never_work_and_new_mail_is(svc, db, mailbox):
    _fill_history(mailbox)
    replies = sum(1 for n in range(N) if _answered(n))
    result = Poller(svc).poll()
    assert result.mailboxes[0].status == "ok", result.mailboxes[0].error
    assert result.total("history") == N + replies and result.total("new") == N + replies
    rows = emails(db, "id", "status", "direction", "message_id", "answered_via",
                  "answered_by", "thread_key", "index_status", "parse_status", "folder")
    assert len(rows) == N + replies
    assert {r["status"] for r in rows} == {"history"}
    assert {r["parse_status"] for r in rows} == {"pending"}  # headers only: the job parses
    assert sum(r["direction"] == "out" for r in rows) == replies
    assert {r["folder"] for r in rows if r["direction"] == "out"} == {"Sent"}
    # no classify / draft work, no review item: only index-only jobs on the history queue
    job_rows = jobs(db)
    assert {(j["kind"], j["queue"]) for j in job_rows} == {("index_history", "email-rag-history")}
    assert len(job_rows) == len(rows)
    assert svc.queue.depths(["email-rag"]) == {"email-rag": 0}
    by_mid = {r["message_id"]: r for r in rows}
    for n in range(N):
        row = by_mid[f"<mail-{n}@example.org>"]
        if _answered(n):
            assert row["answered_via"] == "sent_reply"
            assert row["answered_by"] == by_mid[f"<reply-{n}@example.com>"]["id"]
            assert row["thread_key"] == by_mid[f"<reply-{n}@example.com>"]["thread_key"]
        elif _flag_only(n):
            assert (row["answered_via"], row["answered_by"]) == ("flag", None)
        else:
            assert (row["answered_via"], row["answered_by"]) == (None, None)
    assert len(events(db, "answered_linked")) == replies
    before = history.progress(db)
    assert (before.total, before.done, before.replies) == (len(rows), 0, replies)

    # the worker that owns the vector store runs the index-only jobs: no LLM, no draft
    runner = JobRunner(svc, "w-history", vector_owner=True)
    outcomes = [runner.run(j["id"]) for j in job_rows]
    assert set(outcomes) == {"done"}
    indexed = emails(db, "index_status", "parse_status", "body_text")
    assert {(r["index_status"], r["parse_status"]) for r in indexed} == {("complete", "ok")}
    assert all("Bestellung" in r["body_text"] for r in indexed)
    assert _count(db, "SELECT COUNT(*) FROM drafts") == 0
    assert _count(db, "SELECT COUNT(*) FROM audit_log WHERE event LIKE 'llm%%'") == 0
    after = history.progress(db)
    assert (after.done, after.left, after.seconds_left) == (len(rows), 0, 0.0)
    assert after.rate_per_s > 0

    # new mail: work as always; one in an old thread is a follow-up of it
    now = datetime.now(UTC)
    follow = mail(900, subject="Re: Anfrage 5", date=now,
                  extra={"In-Reply-To": "<reply-5@example.com>",
                         "References": "<mail-5@example.org> <reply-5@example.com>"})
    mailbox.append_many([follow, mail(901, date=now)])
    second = Poller(svc).poll()
    assert (second.total("new"), second.total("history")) == (2, 0)
    new_rows = db.fetchall("SELECT id, status, thread_key FROM emails WHERE message_id IN "
                           "('<mail-900@example.org>', '<mail-901@example.org>') ORDER BY id")
    assert [r["status"] for r in new_rows] == ["received", "received"]
    assert new_rows[0]["thread_key"] == by_mid["<mail-5@example.org>"]["thread_key"]
    work = db.fetchall("SELECT email_id, queue FROM jobs WHERE kind = 'process_email'")
    assert sorted(w["email_id"] for w in work) == [r["id"] for r in new_rows]
    assert {w["queue"] for w in work} == {"email-rag"}

    # a re-run from UID 1 (cursors reset) duplicates nothing and creates no work
    db.execute("UPDATE mailbox_cursors SET last_uid = 0")
    again = Poller(svc).poll()
    assert again.total("new") == 0 and again.total("duplicate") == len(rows) + 2
    assert len(emails(db, "id")) == len(rows) + 2 and len(jobs(db)) == len(rows) + 2


def test_cutoff_is_stored_at_first_poll_and_changed_by_the_audited_admin_command(
        svc, db, mailbox, env):
    mailbox.append(mail(1, date=OLD))
    Poller(svc).poll()
    [mb] = db.fetchall("SELECT history_cutoff FROM mailboxes")
    first = mb["history_cutoff"]
    assert first is not None and abs((datetime.now(UTC).replace(tzinfo=None) - first)
                                     .total_seconds()) < 120
    assert [r["status"] for r in emails(db, "status")] == ["history"]
    Poller(svc).poll()  # a later poll keeps the stored cut-off
    assert db.fetchone("SELECT history_cutoff FROM mailboxes")["history_cutoff"] == first

    extra = {"EMAIL_RAG_MAILBOXES": mailboxes_json([mailbox.config]),
             "EMAIL_RAG_HISTORY_IMPORT": "true"}
    done = run_cli("mailboxes", "cutoff", mailbox.name, "2026-10-01", "--json",
                   env_extra=extra)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["data"]["to"] == "2026-10-01 00:00:00"
    [event] = events(db, "history_cutoff_changed")
    assert json.loads(event["detail"])["from"] == str(first)
    # from now on a mail of November is work, not history
    mailbox.append(mail(2, date=OLD))
    Poller(svc).poll()
    assert [r["status"] for r in emails(db, "status")] == ["history", "received"]
    bad = run_cli("mailboxes", "cutoff", mailbox.name, "yesterday", env_extra=extra)
    assert bad.returncode != 0 and "not an ISO date" in bad.stdout + bad.stderr
    # the progress figures in `email-rag status` (JSON and text)
    status = run_cli("status", "--json", env_extra=extra)
    figures = json.loads(status.stdout)["data"]["counts"]["history"]
    assert (figures["total"], figures["done"], figures["left"]) == (1, 0, 1)
    assert figures["seconds_left"] is None  # no index job done yet: no rate, no estimate
    assert "history:       0/1 indexed" in run_cli("status", env_extra=extra).stdout


def test_importer_killed_halfway_restarts_without_duplicates(env, db, mailbox, tmp_path):
    """A real `email-rag poll --once` SIGKILLed mid-import; the next poll finishes it."""
    total = 300
    mailbox.append_many([mail(n, date=OLD) for n in range(total)])
    extra = {"EMAIL_RAG_MAILBOXES": mailboxes_json([mailbox.config]),
             "EMAIL_RAG_HISTORY_IMPORT": "true", "EMAIL_RAG_IMAP_FETCH_BATCH": "10"}
    proc = spawn("poll", "--once", env_extra=extra, log=tmp_path / "poll.log")
    deadline = time.monotonic() + 60
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        stored = _count(db, "SELECT COUNT(*) FROM emails")
        if stored >= 30:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    at_kill = _count(db, "SELECT COUNT(*) FROM emails")
    assert 0 < at_kill < total, (at_kill, (tmp_path / "poll.log").read_text()[-2000:])
    again = run_cli("poll", "--once", "--json", env_extra=extra)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _count(db, "SELECT COUNT(*) FROM emails") == total
    assert _count(db, "SELECT COUNT(DISTINCT message_id) FROM emails") == total
    assert _count(db, "SELECT COUNT(*) FROM jobs WHERE kind = 'index_history'") == total
    assert _count(db, "SELECT COUNT(*) FROM jobs WHERE kind <> 'index_history'") == 0
    assert _count(db, "SELECT COUNT(*) FROM emails WHERE status <> 'history'") == 0


def test_a_reply_stored_before_the_mail_it_answers_is_linked_when_that_mail_arrives(
        svc, db, mailbox):
    mailbox.create_folder("Sent")
    mailbox.append(_reply(3), folder="Sent")
    Poller(svc).poll()
    mailbox.append(mail(3, date=OLD))
    Poller(svc).poll()
    rows = {r["message_id"]: r for r in emails(db, "id", "message_id", "answered_by",
                                                "answered_via", "direction")}
    inbound, reply = rows["<mail-3@example.org>"], rows["<reply-3@example.com>"]
    assert (inbound["answered_by"], inbound["answered_via"]) == (reply["id"], "sent_reply")
    assert (reply["direction"], reply["answered_by"]) == ("out", None)
    assert [e["entity_id"] for e in events(db, "answered_linked")] == [str(inbound["id"])]


def test_two_pollers_at_once_store_each_history_mail_once_and_create_no_work(
        settings, db, mailbox):
    mailbox.append_many([mail(n, date=OLD) for n in range(100)])
    services = [services_for(settings, mailbox, history_import=True) for _ in range(2)]
    try:
        results: list = []
        threads = [threading.Thread(target=lambda s=s: results.append(Poller(s).poll()))
                   for s in services]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert sorted(r.mailboxes[0].status for r in results) in (["busy", "ok"], ["ok", "ok"])
        Poller(services[0]).poll()  # whatever the busy one left
    finally:
        for s in services:
            s.close()
    assert _count(db, "SELECT COUNT(*) FROM emails") == 100
    assert _count(db, "SELECT COUNT(DISTINCT message_id) FROM emails") == 100
    assert _count(db, "SELECT COUNT(*) FROM jobs WHERE kind = 'index_history'") == 100
    assert _count(db, "SELECT COUNT(*) FROM jobs WHERE kind <> 'index_history'") == 0
