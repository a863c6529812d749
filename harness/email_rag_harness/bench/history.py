"""History import speed (issue 31): a mailbox with years of mail made searchable.

    python -m bench history [--mails 5000] [--batch 200] [--json]

A private Dovecot gets N older mails in INBOX (dated before the cut-off) and our
replies to every 10th of them in Sent. Each run on a fresh database and Redis db:

- bare same I/O (``ingest.bare``): INBOX fetched and written with every write the
  poller makes, without its logic - the reference of the target;
- history import: ``Poller.poll()`` with the history import on (headers, dedup, the
  history decision, the parse at ingest, answered links, index-only jobs);
- indexing: every ``index_history`` job run in-process by a vector-owning
  ``JobRunner`` (the configured embedding backend: hashing by default).

Reported: import mails/s (goal >= 0.5 x bare same I/O: nothing is drafted),
index mails/s, end to end mails/s, and the time to make 50,000 mails searchable
(50,000 / end-to-end rate). Each run checks its rows before it counts.
"""

from __future__ import annotations

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
        db = ws.fresh()
        q = JobQueue(ws.redis_url)
        try:
            bare_s = bare(user, db, batch, q, same_io=True)
        finally:
            q.close()
            db.close()
        db = ws.fresh()
        svc = Services(ws.settings(db, mailboxes=[user.config], imap_fetch_batch=batch,
                                   history_import=True))
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
            t = time.perf_counter()
            outcomes = {runner.run(i) for i in ids}
            index_s = time.perf_counter() - t
            left = db.fetchone(sql("bench_history_not_indexed"))
            if outcomes != {"done"} or int(left["n"]):
                raise CheckFailed(f"index jobs ended {outcomes}, {left['n']} mails not indexed")
        finally:
            svc.close()
            db.close()
    bare_rate = rate(mails, bare_s)
    import_rate = rate(total, import_s)
    index_rate = rate(total, index_s)
    e2e = rate(total, import_s + index_s)
    r = ratio(import_rate, bare_rate)
    hours = round(SEARCHABLE / e2e / 3600, 2) if e2e else None
    figures = {"mails": mails, "replies": len(replies), "batch": batch,
               "mails_per_s": {"bare same I/O": bare_rate, "history import": import_rate,
                               "indexing": index_rate, "end to end": e2e},
               "ratio_import_bare_same_io": r, "hours_for_50000_searchable": hours,
               "embedding_backend": ws.settings(db).embedding_backend}
    rows_out = [{"run": k, "mails/s": v} for k, v in figures["mails_per_s"].items()]
    summary = (f"history ({mails} mails + {len(replies)} replies in Sent): import "
               f"{import_rate} mails/s vs bare same I/O {bare_rate} (ratio {r}); indexing "
               f"{index_rate} mails/s ({figures['embedding_backend']} embeddings); end to end "
               f"{e2e} mails/s: 50,000 mails searchable in {hours} h")
    return Report("history", summary, ["run", "mails/s"], rows_out, figures,
                  [Target(f"history import / bare same I/O >= {RATIO_TARGET}", r, RATIO_TARGET)],
                  [f"every mail stored once as history, {len(replies)} linked to our reply, "
                   "no classify/draft job; every index job done, nothing left pending"],
                  ["the bare run reads INBOX only; the import reads INBOX and Sent"])
