"""The sync as a long command: ``run_sync`` walks ``sync`` under the checkpoint of
db/run_results.py (command ``reindex``, the scope as its scope) and ends with the run's
record (core/run_result.py, items are mails). ``email-rag reindex`` in its own process and
the vector worker's ``index_sync`` entry run this one function, so either continues a run
the other left: a vector worker killed midway leaves its run ``running`` with the count
committed with each mail, and the next run of the scope (the entry again after the
stuck-job reset, or ``email-rag reindex``) says "resuming" and does the rest.

Failure table (one run):

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a store down | the store's tries, then the mail stays partially_indexed | yes | partial (2): run it again, or the periodic sync |
| stopped on request (SIGTERM / Ctrl-C of the CLI) | no: after the mail in hand | yes (checkpoint) | interrupted (2): run it again |
| killed (SIGKILL, the vector worker's process) midway | no | yes: the counts committed with each mail | the next run of the scope continues ("resuming") |
| MariaDB lost midway | no: the run stops | yes: up to the last committed mail | interrupted (2): run it again when MariaDB is up |
| the re-count finds partially_indexed mails after a clean run | no | yes | verification_failed (3): run it again |
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import DatabaseUnavailableError
from ..core.records import Job
from ..core.run_result import EndState, RunResult
from ..core.states import Actor
from ..db import sql
from ..db.connection import Database
from ..db.run_results import Run, RunLog, RunRow
from ..jobs.context import ServiceContext
from ..jobs.handoff import Handoff
from .sync import SyncReport, sync, sync_queue

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

COMMAND = "reindex"  # the checkpoint's command, whichever process runs the scope


@dataclass(frozen=True)
class SyncRun:
    """A finished (or lost) run: its checkpoint row, the walk's report, the record, and the
    partially_indexed mails of the scope now; ``lost``: MariaDB was lost midway (no report,
    no re-count)."""

    run: Run
    report: SyncReport | None
    result: RunResult
    partial_now: int | None
    lost: DatabaseUnavailableError | None = None


def again(scope: str) -> str:
    """The command that runs ``scope`` again (and continues its checkpoint)."""
    return "email-rag reindex" + {"partial": "", "all": " --all"}.get(
        scope, f" --email {scope.partition(':')[2]}")


def partial_now(db: Database, scope: str) -> int:
    """Mails of ``scope`` partially_indexed now, counted in MariaDB (not the sync's report)."""
    if scope.startswith("email:"):
        row = db.fetchone(sql("index_status_of"), {"id": int(scope.split(":", 1)[1])})
        return int(bool(row and row["index_status"] == "partially_indexed"))
    row = db.fetchone(sql("index_count_partial"))
    return int(row["n"]) if row else 0


def run_of(db: Database, scope: str, job: Job) -> RunRow | None:
    """The checkpoint of the run that ``job``'s last attempt started: the newest run of the
    scope, if it began after that attempt's claim (None: the newest run began before it, so
    the attempt began none; a run another process began after the claim is not told apart)."""
    ran = RunLog(db).latest(COMMAND, scope)
    if ran is None or job.started_at is None or ran.started_at is None \
            or ran.started_at < job.started_at:
        return None
    return ran


def unreached(db: Database, scope: str, ran: RunRow | None) -> int:
    """Mails of ``scope`` that the unfinished run ``ran`` (None: not begun) has not
    reached, counted in MariaDB now: ``partial``: the partially_indexed mails less those the
    run tried and failed; ``all``: every mail whose index step ran, after the run's cursor;
    ``email:ID``: the mail, until the run tried it."""
    tried = ran.processed + ran.failed if ran else 0
    if scope == "all":
        after = int(ran.cursor_key) if ran and ran.cursor_key else 0
        row = db.fetchone(sql("index_count_all"), {"after": after})
        return int(row["n"]) if row else 0
    if scope.startswith("email:"):
        mail = db.fetchone(sql("index_status_of"), {"id": int(scope.split(":", 1)[1])})
        return int(mail is not None and not tried)
    return max(partial_now(db, scope) - (ran.failed if ran else 0), 0)


def run_sync(services: ServiceContext, scope: str, actor: str,
             stop: threading.Event | None = None) -> SyncRun:
    """The sync of ``scope`` under the checkpoint: each mail's count commits with the mail;
    ``stop`` ends the walk after the mail in hand; a run killed midway, or one that lost
    MariaDB (interrupted), is continued by the next (``all`` after the last mail it
    confirmed, the partial scope by what is still partially_indexed)."""
    runs = RunLog(services.db)
    run = runs.begin(COMMAND, scope, actor, remaining=partial_now(services.db, scope))
    start = int(run.cursor) if scope == "all" and run.cursor else 0
    counted = {"processed": 0, "failed": 0}  # as last committed with a mail

    def checkpoint(cur, mail_id: int, report: SyncReport) -> None:
        runs.progress(run, len(report.reindexed), len(report.still_missing),
                      cursor=str(mail_id), cur=cur)
        counted.update(processed=len(report.reindexed), failed=len(report.still_missing))

    try:
        report = sync(services, scope, actor=actor, start_after=start, on_mail=checkpoint,
                      stop=stop)
    except DatabaseUnavailableError as e:  # MariaDB lost midway: say how far, how to go on
        lost = RunResult(EndState.INTERRUPTED, item="mail", next=again(scope),
                         resumed_from=run.resumed_from or None, **counted,
                         what=f"Processing interrupted: MariaDB was lost ({type(e).__name__}).",
                         safe="Checkpoint saved with each mail: run the same command again "
                         "when `email-rag status` shows MariaDB up; it continues there.")
        return SyncRun(run, None, lost, None, e)
    remaining = partial_now(services.db, scope)
    result = sync_result(scope, report, remaining, run.resumed_from or None)
    runs.finish(run, result, actor)
    return SyncRun(run, report, result, remaining)


def sync_result(scope: str, report: SyncReport, remaining: int,
                resumed_from: int | None = None) -> RunResult:
    """The run's record: processed = mails re-indexed, failed = mails still missing a store,
    remaining = mails not tried (their store was down) or, when the run says it is done,
    the re-count in MariaDB of mails partially_indexed now (verification)."""
    done, missing = len(report.reindexed), len(report.still_missing)
    if report.stopped:
        return RunResult(EndState.INTERRUPTED, processed=done, failed=missing,
                         remaining=remaining if scope == "partial" else 0, item="mail",
                         next=again(scope), resumed_from=resumed_from,
                         what=f"Processing interrupted on request after {report.examined} "
                         "mail(s).", safe="Checkpoint saved: each mail was written with its "
                         "count; the next run continues after the last one.")
    if not report.examined:
        return RunResult(EndState.NOTHING_TO_DO, verified=not remaining, item="mail",
                         resumed_from=resumed_from)
    what = f"Re-indexed {done} of {report.examined} mail(s)."
    if report.ok:
        return RunResult.decide(processed=done, remaining=remaining, verified=not remaining,
                                item="mail", next=again(scope) if remaining else None,
                                resumed_from=resumed_from, what=what,
                                safe="State is safe: each mail is written to every store or "
                                "stays partially_indexed.")
    return RunResult(EndState.PARTIAL if done else EndState.FAILED, processed=done,
                     failed=missing, remaining=report.unchanged, item="mail",
                     next=again(scope), resumed_from=resumed_from,
                     what="A store failed midway.", safe="State is safe: the mails not "
                     "written to every store stay partially_indexed.")


def run_job(services: ServiceContext, job: Job, worker: str) -> Handoff | None:
    """Handler of ``index_sync`` queue entries (in the worker that owns the vector store)."""
    queue = sync_queue(services.settings)
    if job.queue != queue:
        return Handoff(queue, f"index sync runs on queue {queue}")
    scope = job.job_key.split(":", 1)[1]
    done = run_sync(services, scope, actor=f"{Actor.WORKER}:{worker}")
    if done.lost is not None:  # the runner waits for MariaDB and runs the entry again
        raise done.lost
    log.info("index sync job %s (%s): %s", job.id, scope, done.result.as_json())
    return None
