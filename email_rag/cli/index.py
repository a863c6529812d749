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

``reindex`` in this process is a long command (core/run_result.py, items are mails) with
the checkpoint of db/run_results.py, committed in each mail's own transaction:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a store down | the store's tries, then the mail stays partially_indexed | yes | partial (2): run it again, or the periodic sync |
| SIGTERM / Ctrl-C midway | no: stops after the mail in hand | yes (checkpoint) | interrupted (2): run it again |
| killed (SIGKILL) midway | no | yes: the counts committed with each mail | the next run continues ("resuming") |
| MariaDB lost midway | no: the command stops | yes: up to the last committed mail | interrupted (2): run it again when MariaDB is up |
| the re-count finds partially_indexed mails after a clean run | no | yes | verification_failed (3): run it again |
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ..core.actors import command_line
from ..core.errors import (
    DatabaseUnavailableError,
    PermanentError,
    QueueCallTimeoutError,
    StoreUnavailableError,
)
from ..core.records import Job
from ..core.rows import FromRow
from ..core.run_result import EndState, RunResult
from ..db import sql
from ..db.run_results import RunLog
from ..indexing.local_store import is_local, try_open
from ..indexing.sync import Armed, arm, sync, sync_queue
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
    """The sync in this process under the checkpoint (db/run_results.py): each mail's count
    commits with the mail; SIGTERM / Ctrl-C ends the walk after the mail in hand; a run
    killed midway, or one that lost MariaDB (reported interrupted), is continued by the
    next (``--all`` after the last mail it confirmed, the partial scope by what is still
    partially_indexed)."""
    runs = RunLog(svc.db)
    run = runs.begin("reindex", scope, actor, remaining=_partial_now(svc, scope))
    start = int(run.cursor) if scope == "all" and run.cursor else 0

    counted = {"processed": 0, "failed": 0}  # as last committed with a mail

    def checkpoint(cur, mail_id: int, report) -> None:
        runs.progress(run, len(report.reindexed), len(report.still_missing),
                      cursor=str(mail_id), cur=cur)
        counted.update(processed=len(report.reindexed), failed=len(report.still_missing))

    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        report = sync(svc, scope, actor=actor, start_after=start, on_mail=checkpoint, stop=stop)
    except DatabaseUnavailableError as e:  # MariaDB lost midway: say how far, how to go on
        lost = RunResult(EndState.INTERRUPTED, item="mail", next=_again(scope),
                         resumed_from=run.resumed_from or None, **counted,
                         what=f"Processing interrupted: MariaDB was lost ({type(e).__name__}).",
                         safe="Checkpoint saved with each mail: run the same command again "
                         "when `email-rag status` shows MariaDB up; it continues there.")
        return Outcome.of(lost, f"Re-indexed {counted['processed']} mail(s) before MariaDB "
                          "was lost; nothing is half-written.", {"mode": "in_process",
                                                                 "scope": scope,
                                                                 "run_id": run.id})
    finally:
        restore()
    outcome = _reindexed_here(svc, scope, report, local, run.resumed_from or None)
    assert outcome.result is not None
    runs.finish(run, outcome.result, actor)
    return outcome


def _partial_now(svc, scope: str) -> int:
    """Mails of ``scope`` partially_indexed now, counted in MariaDB (not the sync's report)."""
    if scope.startswith("email:"):
        mail = index_state(svc, int(scope.split(":", 1)[1]))
        return int(bool(mail and mail.index_status == "partially_indexed"))
    return count_partial(svc)


def _again(scope: str) -> str:
    """The command that runs ``scope`` again (and continues its checkpoint)."""
    return "email-rag reindex" + {"partial": "", "all": " --all"}.get(
        scope, f" --email {scope.partition(':')[2]}")


def _reindexed_here(svc, scope: str, report: Any, local: bool,
                    resumed_from: int | None = None) -> Outcome:
    """The run's record: processed = mails re-indexed, failed = mails still missing a store,
    remaining = mails not tried (their store was down) or, when the run says it is done,
    the re-count in MariaDB of mails partially_indexed now (verification)."""
    remaining = _partial_now(svc, scope)
    data = {"mode": "in_process", **report.as_dict(), "partially_indexed_now": remaining}
    done, missing = len(report.reindexed), len(report.still_missing)
    where = "this process (the local store was free)" if local else "this process"
    again = _again(scope)
    if report.stopped:
        left = remaining if scope == "partial" else None
        run = RunResult(EndState.INTERRUPTED, processed=done, failed=missing,
                        remaining=left or 0, item="mail", next=again,
                        resumed_from=resumed_from,
                        what=f"Processing interrupted on request after {report.examined} "
                        "mail(s).", safe="Checkpoint saved: each mail was written with its "
                        "count; the next run continues after the last one.")
        return Outcome.of(run, f"Stopped on request: re-indexed {done} mail(s).", data)
    if not report.examined:
        return Outcome.of(RunResult(EndState.NOTHING_TO_DO, verified=not remaining,
                                    item="mail", resumed_from=resumed_from),
                          f"Nothing to re-index ({scope}): no mail is missing from a store.",
                          data)
    msg = f"Re-indexed {done} of {report.examined} mail(s) in {where}."
    if report.ok:
        run = RunResult.decide(processed=done, remaining=remaining, verified=not remaining,
                               item="mail", next=again if remaining else None,
                               resumed_from=resumed_from,
                               what=msg, safe="State is safe: each mail is written to every "
                               "store or stays partially_indexed.")
        if not remaining:
            return Outcome.of(run, msg + " Every store has them now (re-counted in MariaDB: "
                              "no mail is partially_indexed; audited: reindexed).", data)
        return Outcome.of(run, msg + f" Re-counted in MariaDB: {remaining} mail(s) are "
                          "partially_indexed now (an index write failed since, or a mail was "
                          "not reached); the periodic sync tries again, or run `email-rag "
                          "reindex` once more.", data)
    errors = "; ".join(f"{s}: {e}" for s, e in report.errors.items())
    if missing:
        msg += (f" {missing} miss a store ({errors}): they are partially_indexed and the "
                "periodic sync tries again.")
    if report.unchanged and scope == "all":
        msg += (f" {report.unchanged} were not tried because the store was down ({errors}); "
                "they were left as they were.")
    msg += " The state is safe. Fix the store and run `email-rag reindex` again."
    run = RunResult(EndState.PARTIAL if done else EndState.FAILED, processed=done,
                    failed=missing, remaining=report.unchanged, item="mail", next=again,
                    resumed_from=resumed_from,
                    what="A store failed midway.", safe="State is safe: the mails not "
                    "written to every store stay partially_indexed.")
    return Outcome.of(run, msg, data)


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
    if state == "done":
        code = ExitCode.OK if (not remaining if scope == "partial" else
                               data.get("index_status") != "partially_indexed") else ExitCode.PARTIAL
        return Outcome(code, f"{head} It ran: {remaining} mail(s) are partially_indexed now.", data)
    if state in ("dead", "failed"):
        return Outcome(ExitCode.ERROR, f"{head} It failed: {job.last_error if job else ''}. "
                       "See `email-rag failed list`.", data)
    # not "some items failed" (2): nothing is known to have failed; the wait ran out
    return Outcome(ExitCode.ERROR, f"{head} Not finished after {args.wait:g} s (state {state}); "
                   f"it stays queued on {sync_queue(svc.settings)}: is the vector worker running?",
                   data)


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
