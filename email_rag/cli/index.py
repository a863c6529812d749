"""``email-rag reindex`` and ``email-rag search``: the index from the command line.

Neither fights the vector worker for a local Qdrant folder (only one process
can open it):

- with a Qdrant server (``EMAIL_RAG_QDRANT_URL``) both run in this process;
- with a local folder that no process holds, both open it here, do their work
  and close it (a vector worker starting meanwhile waits for it, see
  ``vector_lock_wait_seconds``);
- with a local folder held by the vector worker, ``reindex`` queues an
  ``index_sync`` entry on the vector queue (durable in MariaDB; ``--wait N``
  follows it) and ``search`` is routed through the vector queue to that worker
  and waits for its answer (``--timeout``). Neither ever opens the folder then.

``reindex`` is a long command (core/run_result.py, items are mails): in this process
and in the vector worker the same run (indexing/sync_run.py, its failure table there) with
the checkpoint of db/run_results.py, committed in each mail's own transaction, so either
continues a run the other left; queued and followed with ``--wait``, it prints the vector
worker's run record, and a record too when the entry ends dead or failed (that run's
checkpoint if it confirmed mails, else ``failed``; ``next`` retries the entry) or the wait
runs out (``failed``, or ``partial`` once its run confirmed mails; ``next`` waits again).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ..core.actors import command_line
from ..core.errors import (
    PermanentError,
    QueueCallTimeoutError,
    StoreUnavailableError,
)
from ..core.records import Job
from ..core.rows import FromRow
from ..core.run_result import EndState, RunResult
from ..core.states import JobState
from ..db import sql
from ..db.run_results import RunLog
from ..indexing.local_store import is_local, try_open
from ..indexing.sync import Armed, arm, sync_queue
from ..indexing.sync_run import COMMAND, again, run_of, run_sync, unreached
from .output import ExitCode, Outcome, stop_on_signals, table


def register(sub, common) -> None:
    p = sub.add_parser("reindex", parents=[common],
                       help="re-index partially_indexed mail (or --all, or --email ID)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--all", action="store_true", help="every indexed mail, every store")
    scope.add_argument("--email", type=int, metavar="ID", help="one mail")
    p.add_argument("--queue", action="store_true",
                   help="hand the run to the vector worker even if this process could run it")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="when the run is queued: wait up to SECONDS for it to finish")
    p.add_argument("--by", default=None, help="acting user for the audit log (default: login)")
    p.set_defaults(handler=run_reindex)

    s = sub.add_parser("search", parents=[common], help="search indexed mail by meaning")
    s.add_argument("text")
    s.add_argument("--mailbox", metavar="NAME", help="only this mailbox")
    s.add_argument("--limit", type=int, default=10)
    s.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="how long to wait for the vector worker (local mode; default "
                        "EMAIL_RAG_SEARCH_TIMEOUT)")
    s.set_defaults(handler=run_search)


@dataclass(frozen=True)
class IndexState(FromRow):
    """A mail's index status (``index_status_of``)."""

    id: int
    index_status: str | None = None
    index_missing: str | None = None


@dataclass(frozen=True)
class MailboxName(FromRow):
    id: int
    name: str


def index_state(svc, email_id: int) -> IndexState | None:
    row = svc.db.fetchone(sql("index_status_of"), {"id": email_id})
    return IndexState.from_row(row) if row else None


def count_partial(svc) -> int:
    row = svc.db.fetchone(sql("index_count_partial"))
    return int(row["n"]) if row else 0


def mailboxes(svc) -> list[MailboxName]:
    return MailboxName.from_rows(svc.db.fetchall(sql("index_mailbox_names")))


def _actor(args) -> str:
    return command_line(args.by)


def run_reindex(args, svc) -> Outcome:
    scope = "all" if args.all else f"email:{args.email}" if args.email else "partial"
    if args.email and index_state(svc, args.email) is None:
        return Outcome(ExitCode.ERROR, f"Mail {args.email} does not exist. Nothing was done.",
                       {"scope": scope, "error": "not_found"})
    if scope == "partial" and not count_partial(svc):
        return Outcome.of(RunResult(EndState.NOTHING_TO_DO, verified=True, item="mail"),
                          "Nothing to re-index: no mail is partially_indexed.",
                          {"mode": "none", "scope": scope, "examined": 0, "reindexed": [],
                           "still_missing": {}})
    local = is_local(svc.settings)
    if not args.queue and (not local or try_open(svc)):
        return _run_here(svc, scope, _actor(args), local)
    return _queued(args, svc, scope, arm(svc, scope, actor=_actor(args)), local)


def _run_here(svc, scope: str, actor: str, local: bool) -> Outcome:
    """The sync in this process (indexing/sync_run.py: the checkpoint, the record);
    SIGTERM / Ctrl-C ends the walk after the mail in hand."""
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        done = run_sync(svc, scope, actor, stop)
    finally:
        restore()
    run = done.result
    if done.report is None:  # MariaDB lost midway
        return Outcome.of(run, f"Re-indexed {run.processed} mail(s) before MariaDB was lost; "
                          "nothing is half-written.", {"mode": "in_process", "scope": scope,
                                                      "run_id": done.run.id})
    report, remaining = done.report, done.partial_now
    data = {"mode": "in_process", **report.as_dict(), "partially_indexed_now": remaining}
    return Outcome.of(run, _said(scope, report, remaining, local), data)


def _said(scope: str, report: Any, remaining: int | None, local: bool) -> str:
    """What the run did, in words (the record says the counts and what to run next)."""
    done, missing = len(report.reindexed), len(report.still_missing)
    if report.stopped:
        return f"Stopped on request: re-indexed {done} mail(s)."
    if not report.examined:
        return f"Nothing to re-index ({scope}): no mail is missing from a store."
    where = "this process (the local store was free)" if local else "this process"
    msg = f"Re-indexed {done} of {report.examined} mail(s) in {where}."
    if report.ok and not remaining:
        return msg + (" Every store has them now (re-counted in MariaDB: no mail is "
                      "partially_indexed; audited: reindexed).")
    if report.ok:
        return msg + (f" Re-counted in MariaDB: {remaining} mail(s) are partially_indexed now "
                      "(an index write failed since, or a mail was not reached); the periodic "
                      "sync tries again, or run `email-rag reindex` once more.")
    errors = "; ".join(f"{s}: {e}" for s, e in report.errors.items())
    if missing:
        msg += (f" {missing} miss a store ({errors}): they are partially_indexed and the "
                "periodic sync tries again.")
    if report.unchanged and scope == "all":
        msg += (f" {report.unchanged} were not tried because the store was down ({errors}); "
                "they were left as they were.")
    return msg + " The state is safe. Fix the store and run `email-rag reindex` again."


def _queued(args, svc, scope: str, info: Armed, local: bool) -> Outcome:
    from ..adapters.vectors import describe_holder

    who = (f"The local Qdrant folder is held by {describe_holder(svc.settings.qdrant_path)}, "
           "so this command does not open it. " if local and not args.queue else "")
    data = {"mode": "queued", "scope": scope, **info}
    head = (f"{who}Queued index sync job {info['job_id']} ({scope}) on queue {info['queue']}"
            + ("" if info["armed"] else " (a run was already pending: joined it)") + ".")
    if not info["enqueued"]:
        head += " Redis did not take it now; the job row is queued in MariaDB and re-dispatch " \
                "will enqueue it."
    if args.wait <= 0:
        return Outcome(ExitCode.OK, head + " The worker started with --with-vectors runs it; "
                       "follow it with `email-rag jobs list`.", data)
    deadline = time.monotonic() + args.wait
    job: Job | None = None
    while time.monotonic() < deadline:
        row = svc.db.fetchone(sql("jobs_get"), {"id": info["job_id"]})
        job = Job.from_row(row) if row else None
        if job and job.state in ("done", "dead", "failed"):
            break
        time.sleep(0.2)
    state = str(job.state) if job else "unknown"
    data["final_state"] = state
    remaining = count_partial(svc)
    data["partially_indexed_now"] = remaining
    if args.email:
        mail = index_state(svc, args.email)
        data["index_status"] = mail.index_status if mail else None
        data["index_missing"] = mail.index_missing if mail else None
    ran = RunLog(svc.db).latest(COMMAND, scope) if state == "done" else None
    record = ran.result("mail", again(scope)) if ran else None
    if record is not None:  # the vector worker's run record (indexing/sync_run.py)
        data["run_id"] = ran.id
        return Outcome.of(record, f"{head} It ran: {remaining} mail(s) are partially_indexed "
                          "now.", data)
    if job is not None and state in (JobState.DEAD, JobState.FAILED):
        return _entry_failed(svc, scope, job, head, data)
    return _still_waiting(args, svc, scope, job, head, data)


def _error_class(job: Job) -> str:
    """The class of the entry's last error (``Class: text``): its text may quote a mail
    or a secret, so only the class is shown."""
    name = (job.last_error or "").partition(":")[0].strip()
    return name if name.isidentifier() else "error"


def _entry_failed(svc, scope: str, job: Job, head: str, data: dict[str, Any]) -> Outcome:
    """The queued entry ended dead, or failed with a retry scheduled. The record: its run's
    checkpoint when that run confirmed mails (interrupted: the retry's run continues it),
    else failed (nothing known to be done); ``next`` retries the entry now."""
    error = _error_class(job)
    data["error"] = error
    retry = f"email-rag failed retry {job.id}"
    after = ("it is dead (no automatic retry)" if job.state == JobState.DEAD
             else "the vector worker retries it later")
    what = f"The index sync entry {job.id} failed ({error}); {after}."
    ran = run_of(svc.db, scope, job)
    if ran is not None and (ran.processed or ran.failed):  # its run got that far
        data["run_id"] = ran.id
        record = ran.result("mail", retry) or RunResult(
            EndState.INTERRUPTED, processed=ran.processed, failed=ran.failed,
            remaining=unreached(svc.db, scope, ran), item="mail", next=retry,
            resumed_from=ran.resumed_from or None, what=what,
            safe="Checkpoint saved with each mail: the retry's run continues it.")
    else:
        record = RunResult(EndState.FAILED, remaining=unreached(svc.db, scope, None),
                           item="mail", next=retry, what=what,
                           safe="State is safe: no mail was changed by its run.")
    return Outcome.of(record, f"{head} It failed ({error}); its last error is in "
                      "`email-rag jobs list`.", data)


def _still_waiting(args, svc, scope: str, job: Job | None, head: str,
                   data: dict[str, Any]) -> Outcome:
    """The wait ran out; the entry stays in MariaDB and runs in the vector worker. By
    docs/states.md: partial (2) when its run has confirmed mails, else failed (1: mails
    remain and none is done yet); ``next`` waits again (it joins the pending entry)."""
    state = data["final_state"]
    ran = run_of(svc.db, scope, job) if job and job.state == JobState.PROCESSING else None
    progress = ran is not None and bool(ran.processed or ran.failed)
    if progress:
        data["run_id"] = ran.id
    record = RunResult(EndState.PARTIAL if progress else EndState.FAILED,
                       processed=ran.processed if progress else 0,
                       failed=ran.failed if progress else 0,
                       remaining=unreached(svc.db, scope, ran), item="mail",
                       next=f"{again(scope)} --queue --wait {args.wait:g}",
                       resumed_from=(ran.resumed_from or None) if progress else None,
                       what=f"Not finished after {args.wait:g} s: the index sync entry is "
                       f"{state}.", safe="State is safe: the entry is kept in MariaDB and "
                       "runs when a vector worker takes it.")
    return Outcome.of(record, f"{head} Not finished after {args.wait:g} s (state {state}); "
                      f"it stays queued on {sync_queue(svc.settings)}: is the vector worker "
                      "running (`email-rag worker --with-vectors`)? Follow it with "
                      "`email-rag jobs list`.", data)


def run_search(args, svc) -> Outcome:
    mailbox_id = None
    if args.mailbox:
        mailbox_id = {m.name: m.id for m in mailboxes(svc)}.get(args.mailbox)
        if mailbox_id is None:
            return Outcome(ExitCode.ERROR, f"No mailbox named {args.mailbox!r}.",
                           {"results": [], "error": "unknown_mailbox"})
    if args.limit < 1:
        raise PermanentError("--limit must be at least 1")
    local = is_local(svc.settings)
    try:
        opened = not local or try_open(svc)
        if opened:
            from ..indexing.retrieval import Retriever

            results = Retriever(svc).search(args.text, mailbox_id, args.limit)
            mode = "in_process"
    except StoreUnavailableError as e:
        return Outcome(ExitCode.ERROR, f"The vector store is unavailable: {e}. Nothing was "
                       "changed; search needs it. Try again when `email-rag status` shows it up.",
                       {"results": [], "error": type(e).__name__, "detail": str(e)})
    if not opened:
        timeout = args.timeout if args.timeout is not None else svc.settings.search_timeout
        try:
            results = svc.queue.call(sync_queue(svc.settings), "email_rag.runtime.tasks.search",
                                     (args.text, mailbox_id, args.limit), timeout)
        except QueueCallTimeoutError as e:
            from ..adapters.vectors import describe_holder

            return Outcome(ExitCode.ERROR, f"The local Qdrant folder is held by "
                           f"{describe_holder(svc.settings.qdrant_path)}, so this command does "
                           f"not open it; the search was routed to the vector worker, but {e}. "
                           "Nothing was changed. Is `email-rag worker --with-vectors` running?",
                           {"results": [], "error": type(e).__name__, "detail": str(e)})
        mode = "vector_worker"
    names = {m.id: m.name for m in mailboxes(svc)}
    found = [{**h.as_dict(), "mailbox": names.get(int(h.mailbox_id))
              if h.mailbox_id is not None else None} for h in results]
    data = {"query": args.text, "mailbox": args.mailbox, "mode": mode,
            "embedding_backend": svc.settings.embedding_backend, "results": found}
    via = " (answered by the vector worker that owns the local store)" \
        if mode == "vector_worker" else ""
    if not results:
        return Outcome(ExitCode.OK, f"No indexed mail found{via}. Mail is searchable once its "
                       "index step ran (`email-rag reindex` fills gaps).", data)
    rows = [{**d, "snippet": h.snippet.replace("\n", " ")[:60]}
            for h, d in zip(results, found, strict=True)]
    return Outcome(ExitCode.OK, f"{len(results)} mail(s){via}.", data,
                   table(rows, ["email_id", "score", "mailbox", "subject", "has_sent_reply",
                                "snippet"], fit=("subject", "snippet")))
