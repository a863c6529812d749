"""History import (issue 31) against the real Dovecot, MariaDB and Redis: older mail and our
replies in Sent become indexed memory, never work; new mail stays work."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from email_rag_harness.testing.dovecot import mailboxes_json
from email_rag_harness.testing.mails import mail

from email_rag.ingest import history
from email_rag.ingest.poller import Poller
from email_rag.runtime.job_runner import JobRunner
from tests.helpers import run_cli, run_job, spawn
from tests.integration.ingest_helpers import emails, events, jobs, services_for
from tests.integration.realpath import RealPath, llm  # noqa: F401 (fixture)

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
    # each solved case (linked or flagged) is an example with the one label its reply proves
    solved = {by_mid[f"<mail-{n}@example.org>"]["id"] for n in range(N)
              if _answered(n) or _flag_only(n)}
    labels = db.fetchall("SELECT email_id, source, category, priority, needs_reply, vector "
                         "FROM labelled_examples")
    assert {x["email_id"] for x in labels} == solved
    assert {(x["source"], x["category"], x["priority"], x["needs_reply"], x["vector"])
            for x in labels} == {("history", None, None, 1, None)}  # embedded once parsed
    before = history.progress(db)
    assert (before.total, before.done, before.replies) == (len(rows), 0, replies)

    # the worker that owns the vector store runs the index-only jobs: no LLM, no draft
    # (a job takes waiting ones with it: history_index_batch; their own deliveries are no-ops)
    runner = JobRunner(svc, "w-history", vector_owner=True)
    outcomes = [runner.run(j["id"]) for j in job_rows]
    batch = svc.settings.history_index_batch
    assert outcomes.count("done") == -(-len(job_rows) // batch) > 1
    assert set(outcomes) == {"done", "skipped"}
    assert {j["state"] for j in jobs(db)} == {"done"}
    indexed = emails(db, "index_status", "parse_status", "body_text")
    assert {(r["index_status"], r["parse_status"]) for r in indexed} == {("complete", "ok")}
    assert all("Bestellung" in r["body_text"] for r in indexed)
    vectors = db.fetchall("SELECT embedder, LENGTH(vector) AS n FROM labelled_examples")
    assert len(vectors) == len(solved) and all(v["n"] and v["embedder"] for v in vectors)
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


def test_a_mail_dated_in_the_second_of_the_first_poll_is_work_not_history(svc, db, mailbox):
    """A Date header has whole seconds; the cut-off stored at the first poll has microseconds.
    A mail sent in that same second is not older than the cut-off."""
    Poller(svc).poll()
    cutoff = db.fetchone("SELECT history_cutoff FROM mailboxes")["history_cutoff"]
    mailbox.append(mail(1, date=cutoff.replace(microsecond=0, tzinfo=UTC)))
    mailbox.append(mail(2, date=cutoff.replace(microsecond=0, tzinfo=UTC) - timedelta(seconds=1)))
    Poller(svc).poll()
    assert {r["message_id"]: r["status"] for r in emails(db, "message_id", "status")} == {
        "<mail-1@example.org>": "received", "<mail-2@example.org>": "history"}


def test_importer_killed_halfway_restarts_without_duplicates(env, db, mailbox, tmp_path):
    """A real `email-rag poll --once` SIGKILLed mid-import; the next poll finishes it. The
    history import is part of `poll`: the second poll's record (issue 43) counts the rest of
    the history mails as processed, completed and verified by its re-count, so the mails the
    killed run committed and the record add up to every mail once."""
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
    record = json.loads(again.stdout)
    assert (record["status"], record["verified"], record["failed"]) == ("completed", True, 0)
    assert at_kill + record["processed"] == total and record["resumeAvailable"] is False
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


TOPICS = [
    ("Rechnung 4711 doppelt abgebucht",
     "Hallo,\nmeine Rechnung 4711 wurde zweimal von meinem Konto abgebucht. Bitte "
     "erstatten Sie den doppelten Betrag.\nGruss\n"),
    ("Lieferung seit zwei Wochen unterwegs",
     "Hallo,\ndas Paket mit der Bestellung 88 ist seit zwei Wochen unterwegs und kommt "
     "nicht an.\nGruss\n"),
    ("Passwort zurücksetzen funktioniert nicht",
     "Hallo,\nder Link zum Zurücksetzen des Passworts im Kundenkonto ist abgelaufen.\n"),
    ("Adresse im Kundenkonto ändern",
     "Hallo,\nich bin umgezogen und möchte die Lieferadresse im Kundenkonto ändern.\n"),
]
PAST_REPLY = ("Guten Tag,\n\nwir haben die doppelte Abbuchung der Rechnung 4711 storniert. "
              "Eine doppelte Abbuchung buchen wir immer innerhalb von drei Werktagen auf Ihr "
              "Konto zurück.\n\n"
              "Freundliche Grüsse\nIhr Support-Team\n\n"
              "> meine Rechnung 4711 wurde zweimal von meinem Konto abgebucht.\n")


def test_a_new_mail_like_an_answered_history_mail_gets_a_draft_citing_our_past_reply(
        settings, mailbox, llm):  # noqa: F811 (fixture)
    # the bar lowered to what the test embedder (word hashing) gives a paraphrase: the bar
    # itself is measured on the labelled sets
    settings.draft_bar_past_reply = 0.05
    path = RealPath(settings, mailbox, llm, history_import=True)
    try:
        old = [mail(200 + i, subject=subj, body=body, date=OLD, sender=f"k{i}@example.org")
               for i, (subj, body) in enumerate(TOPICS)]
        mailbox.append_many(old)
        mailbox.create_folder("Sent")
        mailbox.append(mail(9200, subject=f"Re: {TOPICS[0][0]}", sender="support@example.com",
                            to="k0@example.org", message_id="<reply-200@example.com>",
                            body=PAST_REPLY, date=SENT_REPLY,
                            extra={"In-Reply-To": "<mail-200@example.org>",
                                   "References": "<mail-200@example.org>"}), folder="Sent")
        path.poll()
        outcomes = [run_job(path.runner, j["id"]) for j in jobs(path.db)]
        assert outcomes[0] == "done" and set(outcomes[1:]) <= {"skipped"}  # one batch
        assert {j["state"] for j in jobs(path.db)} == {"done"}
        by_mid = {r["message_id"]: r for r in emails(path.db, "id", "message_id", "answered_by")}
        question, reply = by_mid["<mail-200@example.org>"], by_mid["<reply-200@example.com>"]
        assert question["answered_by"] == reply["id"]
        assert not llm.requests  # the history cost no LLM call

        [new] = path.run(mail(300, subject="Doppelte Abbuchung der Rechnung 5123",
                              sender="neu@example.org", date=datetime.now(UTC),
                              body="Hallo,\nauch bei mir wurde die Rechnung 5123 zweimal "
                                   "abgebucht. Bitte erstatten Sie den doppelten Betrag.\n"))
        assert new["status"] == "draft_ready", new["status_reason"]
        [draft] = path.drafts(new["id"])
        stored = json.loads(draft["sources"])
        # the retrieve step found our past reply: our words, not the customer's quote
        [step] = path.db.fetchall("SELECT detail FROM email_steps WHERE email_id = ? AND "
                                  "step = 'retrieve'", (new["id"],))
        similar = json.loads(step["detail"])["similar"]
        [case] = [s for s in similar if s["email_id"] == question["id"]]
        assert case["reply"]["email_id"] == reply["id"] and case["reply"]["draft_id"] is None
        assert "4711 storniert" in case["reply"]["text"]
        assert "> meine Rechnung" not in case["reply"]["text"]
        # the draft cites it and carries its policy, never what was done for that customer
        assert stored["basis"] == "sources", stored["considered"]
        assert [s["origin"] for s in stored["sources"]] == [f"mail:{question['id']}"]
        assert "innerhalb von drei Werktagen" in draft["body_draft"]
        assert "4711" not in draft["body_draft"] and "storniert" not in draft["body_draft"]
        assert "Grüsse" not in draft["body_draft"].split("\n\n")[1]  # no sign-off carried
        assert not path.llm_inputs("draft")  # a German source for a German mail: no model
    finally:
        path.close()


# --- scale: 5,000 older mails (300 answered, our replies in Sent), then new mail ---

SCALE, SCALE_ANSWERED, SCALE_NEW = 5000, 300, 5


def _scale_mail(n: int) -> bytes:
    topic = ("Rechnung", "Lieferung", "Passwort", "Adresse", "Kündigung")[n % 5]
    return (f"From: Kunde {n} <kunde{n}@example.org>\r\nTo: support@example.com\r\n"
            f"Subject: {topic} Anfrage {n}\r\nDate: Mon, 02 Nov 2026 09:30:00 +0000\r\n"
            f"Message-ID: <old-{n}@example.org>\r\nMIME-Version: 1.0\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Hallo,\r\nich habe eine Frage zu {topic} und Vorgang {n}.\r\nGruss\r\n").encode()


def _scale_reply(n: int) -> bytes:
    return (f"From: Support <support@example.com>\r\nTo: kunde{n}@example.org\r\n"
            f"Subject: Re: Anfrage {n}\r\nDate: Tue, 03 Nov 2026 10:00:00 +0000\r\n"
            f"Message-ID: <old-reply-{n}@example.com>\r\nIn-Reply-To: <old-{n}@example.org>\r\n"
            f"References: <old-{n}@example.org>\r\nMIME-Version: 1.0\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Guten Tag,\r\nVorgang {n} ist erledigt.\r\n").encode()


def _deliver_answered(mailbox, raws: list[bytes]) -> None:
    """Maildir files in ``cur/`` with the R (\\Answered) and S (\\Seen) flags: how Dovecot
    keeps answered mail (thousands per second, like ``deliver``)."""
    target = mailbox.maildir("INBOX")
    uid, gid = mailbox.dovecot.mail_ids
    for i, raw in enumerate(raws):
        name = f"{int(time.time())}.M{i:07d}P{os.getpid()}.answered,S={len(raw)}:2,RS"
        path = target / "tmp" / name
        path.write_bytes(raw)
        if os.geteuid() == 0:
            os.chown(path, uid, gid)
        os.rename(path, target / "cur" / name)


def _answered_at_scale(n: int) -> bool:
    return n % (SCALE // SCALE_ANSWERED) == 0 and n // (SCALE // SCALE_ANSWERED) < SCALE_ANSWERED


@pytest.mark.slow
def test_5000_older_mails_then_new_mail_history_is_memory_and_new_mail_is_work(
        settings, mailbox, llm):  # noqa: F811 (fixture)
    path = RealPath(settings, mailbox, llm, history_import=True, imap_fetch_batch=500)
    try:
        answered = [n for n in range(SCALE) if _answered_at_scale(n)]
        assert len(answered) == SCALE_ANSWERED
        mailbox.deliver(_scale_mail(n) for n in range(SCALE) if not _answered_at_scale(n))
        _deliver_answered(mailbox, [_scale_mail(n) for n in answered])
        mailbox.deliver((_scale_reply(n) for n in answered), folder="Sent")
        total = SCALE + SCALE_ANSWERED
        db = path.db

        first = path.poll()
        assert first.mailboxes[0].status == "ok", first.mailboxes[0].error
        assert (first.total("history"), first.total("new")) == (total, total)
        counts = db.fetchone(
            "SELECT COUNT(*) AS n, COUNT(DISTINCT message_id) AS mids, "
            "SUM(status = 'history') AS h, SUM(direction = 'out') AS out_, "
            "SUM(answered_via = 'sent_reply') AS linked, SUM(answered_by IS NOT NULL) AS by_ "
            "FROM emails")
        assert {k: int(v) for k, v in counts.items()} == {
            "n": total, "mids": total, "h": total, "out_": SCALE_ANSWERED,
            "linked": SCALE_ANSWERED, "by_": SCALE_ANSWERED}
        # every answered mail carries the server's flag and is linked to its reply
        wrong = db.fetchone(
            "SELECT COUNT(*) AS n FROM emails e JOIN emails r ON r.id = e.answered_by "
            "WHERE r.in_reply_to <> e.message_id OR r.direction <> 'out'")
        assert int(wrong["n"]) == 0
        job_kinds = db.fetchall("SELECT kind, queue, COUNT(*) AS n FROM jobs "
                                "GROUP BY kind, queue")
        assert [(j["kind"], j["queue"], int(j["n"])) for j in job_kinds] == [
            ("index_history", "email-rag-history", total)]
        assert path.svc.queue.depths(["email-rag"]) == {"email-rag": 0}
        examples = db.fetchone("SELECT COUNT(*) AS n, SUM(source = 'history') AS h, "
                               "SUM(needs_reply = 1 AND category IS NULL) AS unknown "
                               "FROM labelled_examples")
        assert {k: int(v) for k, v in examples.items()} == {
            "n": SCALE_ANSWERED, "h": SCALE_ANSWERED, "unknown": SCALE_ANSWERED}

        # progress before indexing, as `email-rag status` shows it
        extra = {"EMAIL_RAG_MAILBOXES": mailboxes_json([mailbox.config]),
                 "EMAIL_RAG_HISTORY_IMPORT": "true"}
        status = run_cli("status", "--json", env_extra=extra)
        figures = json.loads(status.stdout)["data"]["counts"]["history"]
        assert (figures["total"], figures["done"], figures["left"], figures["replies"]) == (
            total, 0, total, SCALE_ANSWERED)

        # a stream of new mail arrives while the history waits for its index jobs
        now = datetime.now(UTC)
        new = [mail(70_000 + i, subject=f"Rechnung Anfrage neu {i}", date=now)
               for i in range(SCALE_NEW)]
        path.deliver(*new)
        second = path.poll()
        assert (second.total("new"), second.total("history")) == (SCALE_NEW, 0)

        # the history worker indexes everything (no LLM), the new mail is worked as always
        outcomes = [path.runner.run(j["id"]) for j in db.fetchall(
            "SELECT id FROM jobs WHERE kind = 'index_history' ORDER BY id")]
        assert set(outcomes) == {"done", "skipped"}  # batches: the others rode along
        assert int(db.fetchone("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'index_history' "
                               "AND state <> 'done'")["n"]) == 0
        assert not llm.requests  # all of the history cost no LLM call
        assert set(path.work()) == {"done"}
        indexed = db.fetchone(
            "SELECT COUNT(*) AS n, SUM(index_status = 'complete') AS ok, "
            "SUM(parse_status = 'ok') AS parsed FROM emails WHERE status = 'history'")
        assert {k: int(v) for k, v in indexed.items()} == {"n": total, "ok": total,
                                                           "parsed": total}
        assert path.svc.vectors.count() >= total
        assert int(db.fetchone("SELECT COUNT(*) AS n FROM labelled_examples "
                               "WHERE vector IS NULL")["n"]) == 0
        drafts = db.fetchall("SELECT e.message_id FROM drafts d JOIN emails e "
                             "ON e.id = d.email_id ORDER BY e.id")
        assert [d["message_id"] for d in drafts] == [f"<mail-{70_000 + i}@example.org>"
                                                     for i in range(SCALE_NEW)]
        # each draft is written from the team's sources or is the no-source reply, both by
        # code (no model call in the customer's own language): its basis says which
        bases = [json.loads(r["sources"])["basis"] for r in db.fetchall(
            "SELECT sources FROM drafts ORDER BY email_id")]
        assert len(bases) == SCALE_NEW and set(bases) <= {"sources", "no_source"}, bases
        assert not [r for r in llm.requests if r["kind"] == "draft"]
        done = json.loads(run_cli("status", "--json", env_extra=extra).stdout)
        figures = done["data"]["counts"]["history"]
        assert (figures["done"], figures["left"], figures["seconds_left"]) == (total, 0, 0.0)
        assert figures["rate_per_s"] > 0
        assert f"history:       {total}/{total} indexed" in run_cli(
            "status", env_extra=extra).stdout
    finally:
        path.close()
