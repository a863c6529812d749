"""Ingest speed: the poller against bare scripts doing the same I/O, in the same run.

    python -m bench ingest [--mails 10000] [--runs 3] [--memory-sizes 1000,10000] [--json]

A private Dovecot gets N mails of the seeded corpus (support mail of realistic
size, threads, a few PDF attachments, auto-replies, bounces, malformed mail, a
few duplicate deliveries) as maildir files; then, alternating, each run on a
fresh database and an empty Redis db:

- bare fetch+insert: imapclient UID FETCH BODY.PEEK[] in batches, one
  executemany INSERT of the raw mails per batch into a plain table, one commit
  per batch (the baseline of the target);
- bare same I/O: the same fetch plus the statements and commits the poller makes
  per batch, without its logic: one transaction with the lease renewal, the dedup
  lookup of the batch's keys, the mail rows and the job rows (the poller's own
  ``ingest_insert_emails`` and ``jobs_insert``, each an executemany of its one-row
  form), both audit rows per mail (the mail
  received, its job queued) in one executemany, the cursor and the previous
  batch's ``enqueued_at``; then one RQ pipeline per batch (the last batch's
  ``enqueued_at`` after the loop, as the poller) - for context: RQ's enqueue alone
  costs about as much as fetch and insert;
- poller: ``Poller.poll()`` (header parse, dedup, loop guard, job rows, cursor,
  lease, audit, hand-off to RQ).

Reported: mails/s (best of the runs), milliseconds per mail by phase (fetch,
prepare, store, hand-off, other) and the ratios (target poller >= 0.7 x bare same
I/O; the ratio to bare fetch+insert for context); then the poller's peak RSS polling a 1,000- and a
10,000-mail folder, each in a subprocess (``email-rag poll --once``, peak RSS
from the kernel's rusage of that child): memory must stay flat in mailbox
size (target: the larger folder's peak within 20 % of the smaller's).
The bare baseline imports imapclient directly on purpose: it is what the
adapter is measured against. Each run checks its rows before it counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

from imapclient import IMAPClient

from email_rag.adapters.imap import ImapMailbox
from email_rag.adapters.imap import connect as imap_connect
from email_rag.adapters.queue import JobQueue
from email_rag.core.settings import MailboxConfig
from email_rag.db import Database, slot_params, sql
from email_rag.ingest import poller as poller_module
from email_rag.ingest.poller import Poller
from email_rag.wiring.services import Services
from email_rag_harness.testing.corpus import deliveries, generate
from email_rag_harness.testing.dovecot import Dovecot, DovecotUser, mailboxes_json

from .common import CheckFailed, Report, Target, Workspace, rate, ratio

RATIO_TARGET = 0.7
RSS_GROWTH_TARGET = 1.2
AUDIT_DETAIL = json.dumps({"mailbox": "u1", "folder": "INBOX", "uid": 1234, "uidvalidity": 1796029741,
                           "size": 1500, "dedup": "message_id", "kind": "normal", "job_id": 1234,
                           "queue": "email-rag"})
# the columns of the poller's ``ingest_insert_emails``, in its order
EMAIL_COLUMNS = ("mailbox_id", "dedup_key", "content_hash", "message_id", "folder", "uidvalidity",
                 "uid", "thread_key", "in_reply_to", "references_header", "from_addr",
                 "from_name", "to_addrs", "cc_addrs", "reply_addr", "reply_rule", "subject",
                 "sent_at", "raw", "raw_size", "parse_status", "parse_error", "auto_reason",
                 "status", "status_reason", "body_text", "body_html", "attachments",
                 "attachment_text", "index_status", "direction", "answered_via")
# those that are the same for every bare mail
BARE_EMAIL = {"mailbox_id": 1, "folder": "INBOX", "uidvalidity": 1, "in_reply_to": None,
              "references_header": None, "from_addr": "kunde@example.org", "from_name": None,
              "to_addrs": "support@example.com", "cc_addrs": None, "sent_at": None,
              "parse_status": "pending", "parse_error": None, "auto_reason": None,
              "status": "received", "status_reason": None, "body_text": None, "body_html": None,
              "attachments": None, "reply_addr": "kunde@example.org", "reply_rule": "from",
              "attachment_text": None, "index_status": "pending", "direction": "in",
              "answered_via": None}
LABELS = ("bare fetch+insert", "bare same I/O", "poller")
# where a run's time goes, per mail: the same phases for the bare scripts and the poller
PHASES = ("fetch", "prepare", "store", "hand-off", "other")


class Phases:
    """Seconds per phase of one run, summed over its batches (``with phases("fetch"):``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self(name):
                return fn(*args, **kwargs)
        return wrapper

    def timed_iter(self, name: str, it: Iterator[Any]) -> Iterator[Any]:
        while True:
            with self(name):
                try:
                    item = next(it)
                except StopIteration:
                    return
            yield item

    def per_mail_ms(self, elapsed: float, mails: int) -> dict[str, float]:
        """Milliseconds per mail by phase; ``other``: the rest of the run's wall time."""
        out = {k: self.seconds.get(k, 0.0) for k in PHASES if k != "other"}
        out["other"] = max(0.0, elapsed - sum(out.values()))
        out["total"] = elapsed
        return {k: round(v * 1000 / mails, 3) for k, v in out.items()}


def audit_row(at: datetime, entity_type: str, entity_id: int, event: str,
              detail: str) -> dict[str, Any]:
    """The parameters of ``audit_insert`` for one event of the bare same-I/O script."""
    return {"event_uid": uuid.uuid4().hex, "at": at, "actor": "system:poller",
            "entity_type": entity_type, "entity_id": str(entity_id), "event": event,
            "from_state": None, "to_state": event, "attempt": None, "detail": detail}


def mailbox_mails(n: int) -> list[bytes]:
    """n deliveries of the seeded corpus (duplicates delivered twice, as a mail server does)."""
    return deliveries(generate(n, seed=11))[:n]


def bare(user: DovecotUser, db: Database, batch: int, queue: JobQueue | None,
         same_io: bool = False, phases: Phases | None = None) -> float:
    """Fetch and insert with no logic; ``same_io`` adds every write the poller does."""
    phases = phases or Phases()
    db.execute(sql("bench_create_raw_mails"))
    db.execute(sql("bench_mailbox_insert"), {"name": "bare", "address": ""})
    started = time.perf_counter()
    with IMAPClient(user.host, port=user.port, ssl=False) as c:
        c.login(user.username, user.password)
        c.select_folder("INBOX", readonly=True)
        uids = c.search(["UID", "1:*"])
        enqueued: list[int] = []  # handed to Redis, enqueued_at set with the next commit
        for i in range(0, len(uids), batch):
            with phases("fetch"):
                data = c.fetch(uids[i:i + batch], ["RFC822.SIZE", "BODY.PEEK[]"])
            if not same_io:
                with phases("prepare"):
                    rows = [{"uid": u, "sha": hashlib.sha256(v[b"BODY[]"]).hexdigest(),
                             "size": len(v[b"BODY[]"]), "raw": v[b"BODY[]"]}
                            for u, v in data.items()]
                with phases("store"), db.transaction() as cur:
                    cur.executemany(sql("bench_insert_raw_mail"), rows)
            else:  # the same statements, rows and commits the poller makes, without its logic
                with phases("prepare"):
                    rows = [{**BARE_EMAIL,
                             "dedup_key": hashlib.sha256(b"%d:" % u + v[b"BODY[]"]).hexdigest(),
                             "content_hash": hashlib.sha256(v[b"BODY[]"]).hexdigest(),
                             "message_id": f"<mail-{u}@example.org>", "uid": u,
                             "thread_key": hashlib.sha256(str(u).encode()).hexdigest(),
                             "subject": f"Anfrage {u}", "raw": v[b"BODY[]"],
                             "raw_size": len(v[b"BODY[]"])} for u, v in data.items()]
                    keys = [r["dedup_key"] for r in rows]
                with phases("store"), db.transaction() as cur:
                    cur.execute(sql("bench_bare_lease"))
                    cur.fetchall(sql("bench_bare_existing", keys=len(keys)), slot_params(keys=keys))
                    ids = [int(r["id"]) for r in cur.fetchall_many(  # the poller's statement
                        sql("ingest_insert_emails", rows=(1, len(EMAIL_COLUMNS))),
                        [slot_params(rows=[tuple(r[c] for c in EMAIL_COLUMNS)]) for r in rows])]
                    jobs = [int(r["id"]) for r in cur.fetchall_many(  # the poller's statement
                        sql("jobs_insert", rows=(1, 6)),
                        [slot_params(rows=[("process_email", f"process_email:{k}", k, None,
                                            "bench", "queued")]) for k in ids])]
                    at = datetime.now(UTC).replace(tzinfo=None)
                    cur.executemany(sql("audit_insert"),  # the poller's statement, one for both
                                    [audit_row(at, "email", k, "received", AUDIT_DETAIL)
                                     for k in ids]
                                    + [audit_row(at, "job", k, "queued", '{"mailbox": "u1"}')
                                       for k in jobs])
                    cur.execute(sql("bench_bare_cursor"),
                                {"last_uid": uids[min(i + batch, len(uids)) - 1]})
                    if enqueued:  # the previous batch's jobs, with this batch's commit
                        cur.execute(sql("ingest_mark_enqueued", ids=len(enqueued)),
                                    slot_params(ids=enqueued))
                enqueued = []
            if queue is not None:
                with phases("hand-off"):
                    queue.enqueue(("bench", k) for k in jobs)
                enqueued = jobs
        if enqueued:  # the last batch's, as the poller does after its last batch
            with phases("store"):
                db.execute(sql("ingest_mark_enqueued", ids=len(enqueued)),
                           slot_params(ids=enqueued))
    elapsed = time.perf_counter() - started
    if not same_io:
        got = db.fetchone(sql("bench_raw_mails_check")) or {}
        if (int(got.get("n") or 0), int(got.get("uids") or 0)) != (len(uids), len(uids)):
            raise CheckFailed(f"bare fetch+insert stored {got}, expected {len(uids)} distinct UIDs")
    return elapsed


def poller_run(ws: Workspace, user: DovecotUser, db: Database, batch: int,
               expect: dict[str, int], phases: Phases | None = None
               ) -> tuple[float, dict[str, Any]]:
    svc = Services(ws.settings(db, mailboxes=[user.config], imap_fetch_batch=batch))
    phases = phases or Phases()
    try:
        started = time.perf_counter()
        result = svc_poll(svc, phases)
        elapsed = time.perf_counter() - started
        extra = {"commits": svc.db.commits, "statements": svc.db.statements,
                 "redis_round_trips": svc.queue.round_trips, "totals": result}
        check_poll(db, svc, result, expect)
    finally:
        svc.close()
    return elapsed, extra


def timed_imap(phases: Phases) -> Callable[[MailboxConfig, float], ImapMailbox]:
    """The poller's IMAP connection with the time spent fetching batches counted."""
    def factory(config: MailboxConfig, timeout: float) -> ImapMailbox:
        imap = imap_connect(config, timeout)
        fetch_new = imap.fetch_new
        imap.fetch_new = (  # type: ignore[method-assign]
            lambda *a, **kw: phases.timed_iter("fetch", fetch_new(*a, **kw)))
        return imap
    return factory


def svc_poll(svc: Services, phases: Phases | None = None) -> dict[str, int]:
    """One poll; with ``phases`` the time of its steps is counted (fetch: the IMAP batches,
    prepare: header parse and keys, store: the batch transaction, hand-off: RQ)."""
    if phases is None:
        res = Poller(svc).poll()
    else:
        poller = Poller(svc, imap_factory=timed_imap(phases))
        poller._hand_off = phases.timed("hand-off", poller._hand_off)  # type: ignore[method-assign]
        with mock.patch.object(poller_module, "prepare",
                               phases.timed("prepare", poller_module.prepare)), \
                mock.patch.object(poller_module, "store_batch_retrying",
                                  phases.timed("store", poller_module.store_batch_retrying)):
            res = poller.poll()
    box = res.mailboxes[0]
    if box.status != "ok":
        raise RuntimeError(f"poll of the bench mailbox ended {box.status}: {box.error}")
    return res.totals


def profiled_poll(ws: Workspace, user: DovecotUser, batch: int, expect: dict[str, int],
                  folder: Path, mails: int) -> list[dict[str, Any]]:
    """One more poll, under cProfile (``folder/poller.prof``): the top functions per mail."""
    import cProfile

    from .worker import profile_top

    folder.mkdir(parents=True, exist_ok=True)
    db = ws.fresh()
    prof = cProfile.Profile()
    try:
        prof.runcall(poller_run, ws, user, db, batch, expect)
    finally:
        db.close()
    prof.dump_stats(str(folder / "poller.prof"))
    return profile_top(folder / "poller.prof", mails)


def check_poll(db: Database, svc: Services, totals: dict[str, int], expect: dict[str, int]) -> None:
    """Every delivered mail seen once; one row per distinct mail; one job per job-worthy mail."""
    emails = int(db.fetchone(sql("bench_count_emails"))["n"])
    jobs = int(db.fetchone(sql("bench_count_jobs"))["n"])
    queued = svc.queue.queue(svc.settings.queue_name).count
    got = {"fetched": totals["fetched"], "new": totals["new"], "rows": emails,
           "jobs": jobs, "enqueued": totals["enqueued"], "in_redis": queued}
    want = {"fetched": expect["deliveries"], "new": expect["distinct"],
            "rows": expect["distinct"], "jobs": totals["queued"], "enqueued": totals["queued"],
            "in_redis": totals["queued"]}
    if got != want or totals["new"] + totals["duplicate"] != totals["fetched"]:
        raise CheckFailed(f"poller result {got} (totals {totals}), expected {want}")


def peak_rss(ws: Workspace, user: DovecotUser, db: Database, batch: int) -> dict[str, Any]:
    """``email-rag poll --once`` in a subprocess; its peak RSS from the kernel (wait4)."""
    env = ws.env(db, mailboxes=json.loads(mailboxes_json([user.config])), imap_fetch_batch=batch)
    proc = subprocess.Popen([sys.executable, "-m", "email_rag", "poll", "--once", "--json"],
                            env=env, cwd=ws.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started = time.perf_counter()
    out, err = b"", b""
    import threading

    def drain() -> None:
        nonlocal out, err
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(10)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 2):  # 2: some mails unparseable (the corpus has a few)
        raise RuntimeError(f"email-rag poll exited {proc.returncode}: "
                           f"{(err or out).decode(errors='replace')[-1500:]}")
    data = json.loads(out.decode())["data"]
    return {"peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "seconds": round(seconds, 2),
            "fetched": data.get("totals", {}).get("fetched", data.get("fetched"))}


def run(args: Any) -> Report:
    mails = args.mails or 10_000
    runs = args.runs or (3 if mails >= 1000 else 1)
    sizes = args.memory_sizes or [max(1, mails // 10), mails]
    batch = args.batch
    best = dict.fromkeys(LABELS, 1e9)
    phase_ms: dict[str, dict[str, float]] = {}  # of each label's best run
    extra: dict[str, Any] = {}
    memory: list[dict[str, Any]] = []
    raws = mailbox_mails(max([mails, *sizes]))
    with Workspace("ingest") as ws:
        dovecot = Dovecot().start()
        ws.on_exit(dovecot.stop)
        user = dovecot.add_user()
        t = time.perf_counter()
        user.deliver(raws[:mails])
        deliver_s = time.perf_counter() - t
        with user.imap() as imap:  # let Dovecot assign the UIDs before timing anything
            imap.select("INBOX")
        expect = {"deliveries": mails,
                  "distinct": len({hashlib.sha256(r).hexdigest() for r in raws[:mails]})}
        mailbox_bytes = sum(len(r) for r in raws[:mails])
        for _ in range(runs):
            for label in LABELS:
                db = ws.fresh()
                phases = Phases()
                if label == "poller":
                    elapsed, extra = poller_run(ws, user, db, batch, expect, phases)
                else:
                    same = label == "bare same I/O"
                    q = JobQueue(ws.redis_url) if same else None
                    try:
                        elapsed = bare(user, db, batch, q, same_io=same, phases=phases)
                    finally:
                        if q:
                            q.close()
                db.close()
                if elapsed < best[label]:
                    best[label] = elapsed
                    phase_ms[label] = phases.per_mail_ms(elapsed, mails)
        if getattr(args, "profile", None):
            extra["profile"] = profiled_poll(ws, user, batch, expect, Path(args.profile), mails)
        for size in sizes:
            box = user if size == mails else dovecot.add_user()
            if box is not user:
                box.deliver(raws[:size])
                with box.imap() as imap:
                    imap.select("INBOX")
            db = ws.fresh()
            m = peak_rss(ws, box, db, batch)
            db.close()
            if m["fetched"] != size:
                raise CheckFailed(f"the {size}-mail poll fetched {m['fetched']}")
            memory.append({"mails": size, **m,
                           "mailbox_mb": round(sum(len(r) for r in raws[:size]) / 1e6, 1)})
    rates = {k: rate(mails, v) for k, v in best.items()}
    r = ratio(rates["poller"], rates["bare same I/O"])
    growth = ratio(memory[-1]["peak_rss_mb"], memory[0]["peak_rss_mb"]) if memory else None
    figures = {
        "mails": mails, "batch": batch, "runs": runs, "mailbox_mb": round(mailbox_bytes / 1e6, 1),
        "deliver_maildir_mails_per_s": rate(mails, deliver_s), "mails_per_s": rates,
        "ratio": r, "ratio_fetch_insert": ratio(rates["poller"], rates["bare fetch+insert"]),
        "ms_per_mail": phase_ms,
        "poller_last_run": {k: v for k, v in extra.items() if k not in ("totals", "profile")},
        "poller_totals": extra.get("totals"),
        "per_mail": {k: round(extra[k] / mails, 3) for k in ("commits", "statements",
                                                             "redis_round_trips") if k in extra},
        "memory": memory, "rss_growth": growth,
    }
    rows = [{"run": label, "mails/s": rates[label],
             "ratio": ratio(rates["poller"], rates[label]) if label != "poller" else "",
             **{f"{k} ms": phase_ms[label][k] for k in (*PHASES, "total")}}
            for label in LABELS]
    rows += [{"run": f"poller peak RSS, {m['mails']} mails ({m['mailbox_mb']} MB)",
              "mails/s": rate(m["mails"], m["seconds"]), "ratio": "",
              "peak RSS MB": m["peak_rss_mb"]} for m in memory]
    targets = [Target(f"poller / bare same I/O >= {RATIO_TARGET}", r, RATIO_TARGET),
               Target(f"peak RSS {memory[-1]['mails']} / {memory[0]['mails']} mails <= "
                      f"{RSS_GROWTH_TARGET}", growth, RSS_GROWTH_TARGET, False)]
    summary = (f"ingest ({mails} mails, {figures['mailbox_mb']} MB): poller {rates['poller']} "
               f"mails/s ({phase_ms['poller']['total']} ms per mail) vs bare same I/O "
               f"{rates['bare same I/O']} ({phase_ms['bare same I/O']['total']} ms; ratio {r}), "
               f"vs bare fetch+insert {rates['bare fetch+insert']} (ratio "
               f"{figures['ratio_fetch_insert']}); peak RSS "
               + ", ".join(f"{m['peak_rss_mb']} MB at {m['mails']}" for m in memory))
    checks = [f"every run fetched all {mails} deliveries; the poller stored {expect['distinct']} "
              "distinct mails once each, one job per job-worthy mail, all enqueued",
              "the bare insert stored every UID once"]
    notes = [f"best of {runs} alternating runs; batches of {batch} UIDs; per mail (poller): "
             + ", ".join(f"{k} {v}" for k, v in figures["per_mail"].items())]
    if extra.get("profile"):
        figures["profile"] = extra["profile"]
        notes.append("profile (one poll under cProfile; own time per mail, cumulative in "
                     "brackets):")
        notes += [f"  {t['own_ms_per_mail']:7.3f} ms ({t['cum_ms_per_mail']:7.3f}) "
                  f"{t['calls_per_mail']:6.1f} calls  {t['function']}" for t in extra["profile"]]
    notes.append("ms per mail by phase (best run of each): fetch = IMAP FETCH of the batches, "
                 "prepare = building the rows (poller: header parse, keys, loop guard), store = "
                 "the batch transactions (and enqueued_at), hand-off = the RQ pipeline, other = "
                 "the rest of the wall time (login, SEARCH, lease, cursor)")
    columns = ["run", "mails/s", "ratio", *(f"{k} ms" for k in (*PHASES, "total")),
               "peak RSS MB"]
    return Report("ingest", summary, columns, rows, figures,
                  targets, checks, notes)
