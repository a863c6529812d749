"""Ingest speed: the poller against bare scripts doing the same I/O, in the same run.

    PYTHONPATH=. .venv/bin/python -m bench.ingest --mails 2000

A private Dovecot gets N mails (maildir files); then, alternating, each run on
a fresh database:
- bare fetch+insert: imapclient UID FETCH BODY.PEEK[] in batches, one
  executemany INSERT of the raw mails per batch, one commit per batch;
- bare same I/O: the same plus every write the poller makes (job rows, one audit
  row per mail, cursor, one RQ pipeline per batch, enqueued_at), without its logic;
- poller: ``Poller.poll()`` (header parse, dedup, job rows, cursor, audit,
  hand-off to RQ, enqueued_at).
Prints mails/s (best of the runs) and the ratios. The design target is
poller >= 70 % of the bare rate; "same I/O" is the fair comparison (RQ's own
enqueue alone costs about as much as fetch+insert). The bare baseline imports imapclient
directly on purpose: it is what the adapter is measured against.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import redis
from imapclient import IMAPClient

from email_rag.adapters.queue import JobQueue
from email_rag.app import Services
from email_rag.db import Database
from email_rag.db.migrate import ensure_database, migrate
from email_rag.ingest.poller import Poller
from email_rag.settings import Settings
from email_rag.testing.dovecot import Dovecot
from email_rag.testing.mails import bulk_mails

MARIADB = dict(host="127.0.0.1", port=3306, user="root", password="")
AUDIT_DETAIL = json.dumps({"mailbox": "u1", "folder": "INBOX", "uid": 1234, "uidvalidity": 1796029741,
                           "size": 1500, "dedup": "message_id", "kind": "normal", "job_id": 1234,
                           "queue": "email-rag"})


def fresh_db() -> tuple[str, Database]:
    name = f"erag_bench_{uuid.uuid4().hex[:8]}"
    db = Database(**MARIADB, database=name)
    ensure_database(db, name)
    migrate(db)
    return name, db


def drop(db: Database) -> None:
    name = db.database
    db.close()
    server = Database(**MARIADB)
    server.execute(f"DROP DATABASE IF EXISTS `{name}`")
    server.close()


def claim_redis() -> tuple[str, redis.Redis, str]:
    claim = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    owner = uuid.uuid4().hex
    for n in range(15, 0, -1):
        if claim.set(f"email-rag-test-claim:{n}", owner, nx=True, ex=900):
            return f"redis://127.0.0.1:6379/{n}", claim, f"email-rag-test-claim:{n}"
    raise SystemExit("no free Redis db")


def bare(user, db: Database, batch: int, queue: JobQueue | None, same_io: bool = False) -> float:
    """Fetch and insert with no logic; ``same_io`` adds every write the poller does."""
    db.execute("INSERT INTO mailboxes (name) VALUES ('bare')")
    started = time.perf_counter()
    with IMAPClient(user.host, port=user.port, ssl=False) as c:
        c.login(user.username, user.password)
        c.select_folder("INBOX", readonly=True)
        uids = c.search(["UID", "1:*"])
        next_id = 1
        for i in range(0, len(uids), batch):
            data = c.fetch(uids[i:i + batch], ["RFC822.SIZE", "BODY.PEEK[]"])
            ids = list(range(next_id, next_id + len(data)))
            if not same_io:
                rows = [(1, hashlib.sha256(v[b"BODY[]"]).hexdigest(), "INBOX", u, v[b"BODY[]"],
                         len(v[b"BODY[]"]), "received") for u, v in data.items()]
                with db.transaction() as cur:
                    cur.executemany("INSERT INTO emails (mailbox_id, dedup_key, folder, uid, raw,"
                                    " raw_size, status) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            else:  # the same columns, rows and sizes the poller writes, without its logic
                rows = [(1, hashlib.sha256(v[b"BODY[]"]).hexdigest(), f"<mail-{u}@example.org>",
                         "INBOX", 1, u, hashlib.sha256(str(u).encode()).hexdigest(), None, None,
                         "kunde@example.org", None, "support@example.com", None,
                         f"Anfrage {u}", None, v[b"BODY[]"], len(v[b"BODY[]"]), "pending", None,
                         None, "received", None, None, None, None) for u, v in data.items()]
                with db.transaction() as cur:
                    cur.execute("UPDATE mailboxes SET lease_until = NOW(6) WHERE id = 1")
                    cur.executemany(
                        "INSERT INTO emails (mailbox_id, dedup_key, message_id, folder, uidvalidity,"
                        " uid, thread_key, in_reply_to, references_header, from_addr, from_name,"
                        " to_addrs, cc_addrs, subject, sent_at, raw, raw_size, parse_status,"
                        " parse_error, auto_reason, status, status_reason, body_text, body_html,"
                        " attachments) VALUES (" + ", ".join("?" * 25) + ")", rows)
                    cur.executemany("INSERT INTO jobs (kind, job_key, email_id, queue, state)"
                                    " VALUES ('process_email', ?, ?, 'bench', 'queued')",
                                    [(f"process_email:{k}", k) for k in ids])
                    cur.executemany(
                        "INSERT INTO audit_log (event_uid, at, actor, entity_type, entity_id,"
                        " event, to_state, detail) VALUES (?, NOW(6), 'poller', 'email', ?,"
                        " 'received', 'received', ?)",
                        [(uuid.uuid4().hex, str(k), AUDIT_DETAIL) for k in ids])
                    cur.execute("INSERT INTO mailbox_cursors (mailbox_id, folder, uidvalidity,"
                                " last_uid) VALUES (1, 'INBOX', 1, ?) ON DUPLICATE KEY UPDATE"
                                " last_uid = VALUES(last_uid)", (uids[min(i + batch, len(uids)) - 1],))
            if queue is not None:
                queue.enqueue(("bench", k) for k in ids)
                if same_io:
                    marks = ", ".join("?" * len(ids))
                    db.execute(f"UPDATE jobs SET enqueued_at = NOW(6) WHERE id IN ({marks})", ids)
            next_id += len(rows)
    return time.perf_counter() - started


def poller_run(user, db_name: str, redis_url: str, batch: int, spool: Path,
               trace: bool = False) -> tuple[float, dict]:
    settings = Settings(db_name=db_name, redis_url=redis_url, mailboxes=[user.config],
                        imap_fetch_batch=batch, audit_spool_path=spool)
    svc = Services(settings)
    poller = Poller(svc)
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    result = poller.poll()
    elapsed = time.perf_counter() - started
    extra = {"commits": svc.db.commits, "redis_round_trips": svc.queue.round_trips,
             "totals": result.totals}
    if trace:
        extra["peak_traced_mb"] = round(tracemalloc.get_traced_memory()[1] / 1e6, 1)
        tracemalloc.stop()
    svc.close()
    return elapsed, extra


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mails", type=int, default=2000)
    ap.add_argument("--size", type=int, default=1400, help="approximate bytes per mail")
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="also one traced run (peak Python heap)")
    args = ap.parse_args(argv)

    redis_url, claim, claim_key = claim_redis()
    r = redis.Redis.from_url(redis_url)
    dovecot = Dovecot().start()
    spool = Path(tempfile.mkdtemp()) / "spool.jsonl"
    best = {"bare fetch+insert": 1e9, "bare same I/O": 1e9, "poller": 1e9}
    extra: dict = {}
    try:
        user = dovecot.add_user()
        t = time.perf_counter()
        user.deliver(bulk_mails(args.mails, args.size))
        deliver_s = time.perf_counter() - t
        with user.imap() as imap:  # let Dovecot assign the UIDs before timing anything
            imap.select("INBOX")
        for _ in range(args.runs):
            for label in best:
                r.flushdb()
                name, db = fresh_db()
                try:
                    if label == "poller":
                        elapsed, extra = poller_run(user, name, redis_url, args.batch, spool)
                    else:
                        same = label == "bare same I/O"
                        q = JobQueue(redis_url) if same else None
                        elapsed = bare(user, db, args.batch, q, same_io=same)
                        if q:
                            q.close()
                finally:
                    drop(db)
                best[label] = min(best[label], elapsed)
        if args.memory:
            r.flushdb()
            name, db = fresh_db()
            try:
                _, traced = poller_run(user, name, redis_url, args.batch, spool, trace=True)
                extra["peak_traced_mb"] = traced["peak_traced_mb"]
            finally:
                drop(db)
    finally:
        dovecot.stop()
        r.flushdb()
        if claim.get(claim_key):
            claim.delete(claim_key)
    rates = {k: round(args.mails / v) for k, v in best.items()}
    report = {
        "mails": args.mails, "bytes_per_mail": args.size, "batch": args.batch,
        "runs": args.runs, "deliver_maildir_mails_per_s": round(args.mails / deliver_s),
        "mails_per_s": rates,
        "poller_vs_bare_fetch_insert": round(rates["poller"] / rates["bare fetch+insert"], 2),
        "poller_vs_bare_same_io": round(rates["poller"] / rates["bare same I/O"], 2),
        "poller_last_run": extra,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
