"""History import speed (issue 31): a mailbox with years of mail made searchable.

    python -m bench history [--mails 5000] [--batch 200] [--with-vectors] [--skip-bare]
                            [--index-batch N] [--json]

A private Dovecot gets N older mails in INBOX (dated before the cut-off) and our
replies to every 10th of them in Sent. Each run on a fresh database and Redis db:

- bare same I/O (``ingest.bare``): INBOX fetched and written with every write the
  poller makes, without its logic - the reference of the target;
- history import: ``Poller.poll()`` with the history import on (headers, dedup, the
  history decision, the parse at ingest, answered links, index-only jobs);
- indexing: every ``index_history`` job run in-process by a vector-owning
  ``JobRunner``, in batches (``history_index_batch``; ``--index-batch``); the
  embedder: hashing (tests only), or with ``--with-vectors`` the real one (Google's
  USE multilingual, local, on the CPU);
- searchable: every mail indexed, one vector point per chunk, and a search finds
  a mail by its words.

Reported: import mails/s (goal >= 0.5 x bare same I/O: nothing is drafted),
index mails/s, end to end mails/s, the measured time from the finished import to
all mails searchable, and the time to make 50,000 mails searchable (measured
when ``--mails 50000``, else 50,000 / end-to-end rate, marked as extrapolated).
Each run checks its rows before it counts.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import Any

from email_rag.adapters.queue import JobQueue
from email_rag.db import sql
from email_rag.ingest.poller import Poller
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services
from email_rag_harness.testing.dovecot import Dovecot
from email_rag_harness.testing.mails import bulk_mails, mail

from .common import CheckFailed, Report, Target, Workspace, rate, ratio
from .ingest import bare

RATIO_TARGET = 0.5
SEARCHABLE = 50_000


def _reply(n: int) -> bytes:
    return mail(100_000 + n, subject=f"Re: Anfrage {n}", sender="support@example.com",
                to=f"kunde{n}@example.org", message_id=f"<reply-{n}@example.com>",
                body=f"Guten Tag,\nIhre Anfrage {n} ist erledigt.\n",
                date=datetime(2026, 11, 3, 10, 0, tzinfo=UTC),
                extra={"In-Reply-To": f"<history-{n}@example.org>",
                       "References": f"<history-{n}@example.org>"})


def _progress(db: Any, total: int, seconds: float) -> None:
    """A line on stderr while a long run indexes (a run stopped early still says how far
    it got, measured)."""
    left = int(db.fetchone(sql("bench_history_not_indexed"))["n"])
    print(f"[bench history] {total - left}/{total} indexed after {seconds:.0f} s "
          f"({(total - left) / seconds:.1f} mails/s)", file=sys.stderr, flush=True)


def run(args: Any) -> Report:
    mails = args.mails or 5000
    batch = args.batch
    replies = [_reply(n) for n in range(0, mails, 10)]
    with Workspace("history") as ws:
        dovecot = Dovecot().start()
        ws.on_exit(dovecot.stop)
        user = dovecot.add_user()
        user.deliver(bulk_mails(mails, tag="history"))
        user.deliver(replies, folder="Sent")
        with user.imap() as imap:  # let Dovecot assign the UIDs before timing anything
            imap.select("INBOX")
            imap.select("Sent")
        bare_s = None
        if not args.skip_bare:
            db = ws.fresh()
            q = JobQueue(ws.redis_url)
            try:
                bare_s = bare(user, db, batch, q, same_io=True)
            finally:
                q.close()
                db.close()
        db = ws.fresh()
        extra: dict[str, Any] = {}
        if args.with_vectors:
            extra.update(embedding_backend="local", embedding_local_model="use",
                         embedding_dim=0)
        if args.index_batch:
            extra["history_index_batch"] = args.index_batch
        svc = Services(ws.settings(db, mailboxes=[user.config], imap_fetch_batch=batch,
                                   history_import=True, **extra))
        try:
            t = time.perf_counter()
            res = Poller(svc).poll()
            import_s = time.perf_counter() - t
            box = res.mailboxes[0]
            if box.status != "ok":
                raise RuntimeError(f"history poll ended {box.status}: {box.error}")
            total = mails + len(replies)
            rows = db.fetchone(sql("bench_history_rows"))
            work = db.fetchone(sql("bench_history_other_jobs"))
            if (int(rows["n"]), int(rows["h"]), int(rows["a"]), int(work["n"])) != (
                    total, total, len(replies), 0):
                raise CheckFailed(f"history import stored {rows}, other jobs {work}; expected "
                                  f"{total} history rows, {len(replies)} answered, no work")
            ids = [r["id"] for r in db.fetchall(sql("bench_history_job_ids"))]
            runner = JobRunner(svc, "bench-history", vector_owner=True)
            runner.warm_up()  # the embedder loaded before the clock starts (a worker has it)
            _ = svc.vectors.count()
            t = time.perf_counter()
            outcomes = []
            for i in ids:
                outcomes.append(runner.run(i))
                if outcomes[-1] == "done" and runner.results["done"] % 20 == 0:
                    _progress(db, total, time.perf_counter() - t)
            index_s = time.perf_counter() - t
            left = db.fetchone(sql("bench_history_not_indexed"))
            open_jobs = db.fetchone(sql("bench_history_open_jobs"))
            if (set(outcomes) - {"done", "skipped"} or int(left["n"])
                    or int(open_jobs["n"])):
                raise CheckFailed(f"index jobs ended {set(outcomes)}, {left['n']} mails not "
                                  f"indexed, {open_jobs['n']} entries open")
            points = svc.vectors.count()
            hits = svc.vectors.search(svc.embedder.embed([f"Anfrage {mails // 2}"])[0],
                                      limit=3)
            if points < total or not hits:
                raise CheckFailed(f"{points} vector points for {total} mails, {len(hits)} hits")
            batches = outcomes.count("done")
        finally:
            svc.close()
            db.close()
    bare_rate = rate(mails, bare_s) if bare_s else None
    import_rate = rate(total, import_s)
    index_rate = rate(total, index_s)
    e2e = rate(total, import_s + index_s)
    r = ratio(import_rate, bare_rate) if bare_rate else None
    measured = total >= SEARCHABLE
    hours = round((import_s + index_s) / 3600, 2) if measured else (
        round(SEARCHABLE / e2e / 3600, 2) if e2e else None)
    backend = "local:use-multilingual-v3-512" if args.with_vectors else "hashing (tests only)"
    figures = {"mails": mails, "replies": len(replies), "batch": batch,
               "index_batch": args.index_batch or "setting (128)", "index_jobs_run": batches,
               "vector_points": points,
               "seconds": {"import": round(import_s, 1), "import to searchable": round(index_s, 1),
                           "end to end": round(import_s + index_s, 1)},
               "mails_per_s": {"bare same I/O": bare_rate, "history import": import_rate,
                               "indexing": index_rate, "end to end": e2e},
               "ratio_import_bare_same_io": r, "hours_for_50000_searchable": hours,
               "hours_for_50000_measured": measured,
               "embedding_backend": backend}
    rows_out = [{"run": k, "mails/s": v} for k, v in figures["mails_per_s"].items()]
    summary = (f"history ({mails} mails + {len(replies)} replies in Sent): import "
               f"{import_rate} mails/s vs bare same I/O {bare_rate} (ratio {r}); from the "
               f"finished import to all searchable {index_s:.0f} s, indexing {index_rate} "
               f"mails/s ({backend} embeddings, {batches} batches); end to end {e2e} mails/s: "
               f"50,000 mails searchable in {hours} h "
               f"({'measured' if measured else 'extrapolated'})")
    targets = [Target(f"history import / bare same I/O >= {RATIO_TARGET}", r, RATIO_TARGET)
               ] if r is not None else []
    return Report("history", summary, ["run", "mails/s"], rows_out, figures, targets,
                  [f"every mail stored once as history, {len(replies)} linked to our reply, "
                   "no classify/draft job; every index job done, nothing left pending"],
                  ["the bare run reads INBOX only; the import reads INBOX and Sent"])
