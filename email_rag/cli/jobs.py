"""Admin commands over queue entries and failed mails.

``email-rag jobs list [--state S]``, ``email-rag cleanup``,
``email-rag failed list``, ``email-rag failed retry ID|--all``,
``email-rag failed resolve ID|--mail ID --note TEXT``. ``failed list`` is the web
failure console's list (``console.attention_items``): every mail a human must look
at, poller failures and too-large mails included. Retry and resolve are decided on
the business state (``JobStore.retry`` / ``resolve_mail``); a refusal exits 1 with
the reason. Both are audited with the acting user (``--by``, default the login name).

``failed retry --all`` is a long command (core/run_result.py): every dead entry, one at a
time, with the checkpoint of db/run_results.py; mails in ``manual`` that could be retried
are skipped and counted (``--include-manual`` retries them too).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| an entry's business state refuses the retry | no (counted failed, the reason shown) | yes | after a human fixed it |
| SIGTERM / Ctrl-C midway | no: stops after the entry in hand | yes (checkpoint) | yes: run it again ("resuming: N done earlier") |
| killed (SIGKILL) midway | no | yes: each entry committed on its own; the checkpoint names the entry in hand | yes: the next run asks the entry's state |
| MariaDB or Redis lost midway | no (the command stops: interrupted) | yes | yes: run it again when `email-rag status` is green |
"""

from __future__ import annotations

import threading
from dataclasses import asdict

from ..core.actors import command_line
from ..core.errors import PermanentError, TransientError
from ..core.run_result import RunResult
from ..core.states import JobState, MailStatus
from ..db.run_results import RunLog
from ..review import console
from ..runtime.maintenance import cleanup_stuck
from .output import ExitCode, Outcome, stop_on_signals, table

COLUMNS = ["id", "kind", "email_id", "state", "attempts", "next_run_at", "mail_status",
           "worker", "last_error"]
FAILED_COLUMNS = ["email_id", "why", "status", "job_id", "job_state", "attempts", "actions",
                  "last_error"]


def register(sub, common) -> None:
    jobs = sub.add_parser("jobs", parents=[common], help="queue entries")
    jsub = jobs.add_subparsers(dest="jobs_command", metavar="SUBCOMMAND", required=True)
    lst = jsub.add_parser("list", parents=[common], help="list queue entries")
    lst.add_argument("--state", action="append", choices=[s.value for s in JobState])
    lst.add_argument("--limit", type=int, default=100)
    lst.set_defaults(handler=list_jobs)

    cleanup = sub.add_parser("cleanup", parents=[common],
                             help="reset entries stuck in processing into the retry cycle")
    cleanup.set_defaults(handler=run_cleanup)

    redispatch = sub.add_parser("redispatch", parents=[common],
                                help="enqueue waiting entries that Redis lost (outbox)")
    redispatch.add_argument("--grace", type=float, default=5.0,
                            help="leave entries enqueued less than this many seconds ago alone")
    redispatch.set_defaults(handler=run_redispatch)

    failed = sub.add_parser("failed", parents=[common], help="failed, dead and manual items")
    fsub = failed.add_subparsers(dest="failed_command", metavar="SUBCOMMAND", required=True)
    flist = fsub.add_parser("list", parents=[common], help="what needs a human")
    flist.add_argument("--limit", type=int, default=200)
    flist.set_defaults(handler=list_failed)
    retry = fsub.add_parser("retry", parents=[common],
                            help="re-run from the first unconfirmed step")
    target = retry.add_mutually_exclusive_group(required=True)
    target.add_argument("job_id", nargs="?", type=int)
    target.add_argument("--all", action="store_true", help="every dead entry (mails in "
                        "manual are skipped and counted unless --include-manual)")
    retry.add_argument("--include-manual", action="store_true",
                       help="with --all: also retry the entries of mails in manual that can be "
                            "retried (a human parked them: only when you mean it)")
    retry.add_argument("--by", default=None, help="acting user (default: login name)")
    retry.add_argument("--note", default="")
    retry.set_defaults(handler=retry_failed)
    resolve = fsub.add_parser("resolve", parents=[common], help="close by hand with a note")
    which = resolve.add_mutually_exclusive_group(required=True)
    which.add_argument("job_id", nargs="?", type=int)
    which.add_argument("--mail", type=int, dest="email_id", help="the mail id instead of a job id")
    resolve.add_argument("--note", required=True)
    resolve.add_argument("--by", default=None)
    resolve.set_defaults(handler=resolve_failed)


def _actor(args) -> str:
    return command_line(args.by)


def list_jobs(args, svc) -> Outcome:
    rows = [listing.as_row() for listing in svc.jobs.list(args.state, args.limit)]
    return Outcome(ExitCode.OK, f"{len(rows)} queue entr{'y' if len(rows) == 1 else 'ies'}.",
                   {"jobs": rows}, table(rows, COLUMNS))


def list_failed(args, svc) -> Outcome:
    items = console.attention_items(svc, limit=args.limit)
    rows = [{**asdict(i), "why": ",".join(i.kinds), "actions": _actions(i)} for i in items]
    msg = (f"{len(rows)} mail(s) need attention. Retry with `email-rag failed retry JOB_ID`, "
           "close with `email-rag failed resolve JOB_ID|--mail ID --note ...`, decide an "
           "unknown send with `email-rag sends resolve ID`." if rows
           else "Nothing failed, dead or waiting for manual review.")
    data = [{k: r[k] for k in ("email_id", "kinds", "status", "status_reason", "subject",
                                "job_id", "job_kind", "job_state", "attempts", "last_error",
                                "send_id", "send_status", "can_retry", "can_resolve",
                                "can_decide_send")} for r in rows]
    return Outcome(ExitCode.OK, msg, {"items": data}, table(rows, FAILED_COLUMNS))


def _actions(item: console.AttentionItem) -> str:
    acts = [("retry", item.can_retry), ("resolve", item.can_resolve),
            (f"sends resolve {item.send_id}", item.can_decide_send)]
    return ", ".join(a for a, ok in acts if ok) or "-"


def retry_failed(args, svc) -> Outcome:
    actor = _actor(args)
    if args.all:
        return retry_all(args, svc, actor)
    if args.include_manual:
        return Outcome(ExitCode.ERROR, "--include-manual goes with --all. Nothing was done.",
                       {"error": "usage"})
    r = console.retry_jobs(svc, [args.job_id], actor, args.note)
    data = {"retried": r.retried, "back_to_review": r.to_review, "refused": r.refused,
            "enqueued": r.enqueued}
    parts = _retry_lines(r)
    code = ExitCode.ERROR if r.refused else ExitCode.OK
    return Outcome(code, " ".join(parts) or "Nothing to retry.", data)


SHOWN_IDS = 10  # a long run lists this many entry ids in words (--json has them all)


def _ids(ids: list[int]) -> str:
    more = len(ids) - SHOWN_IDS
    return str(ids) if more <= 0 else f"{ids[:SHOWN_IDS]} (+{more} more)"


def _retry_lines(r: console.RetryResult) -> list[str]:
    parts = []
    if r.retried:
        parts.append(f"Queued {len(r.retried)} entr{'y' if len(r.retried) == 1 else 'ies'} "
                     f"again {_ids(r.retried)}; each resumes at its first unconfirmed step."
                     + ("" if r.enqueued else " Redis is unreachable: re-dispatch enqueues "
                        "them (audited as enqueue_failed)."))
    if r.to_review:
        parts.append(f"Back to review {_ids(r.to_review)}: the relay refused the send; the "
                     "draft is pending review again with the refusal shown (fix the address and "
                     "approve, or reject).")
    for job_id, why in r.refused.items():
        parts.append(f"Not retried: entry {job_id}: {why}.")
    return parts


def retry_candidates(svc) -> tuple[list[int], list[int]]:
    """The dead entries (oldest first) and the retryable entries of mails in manual
    that are not dead (``failed retry --all`` skips those unless --include-manual)."""
    dead = [listing.job.id for listing in svc.jobs.list([JobState.DEAD], 100000)]
    known = set(dead)
    manual = [i.job_id for i in console.attention_items(svc, limit=100000)
              if i.status == MailStatus.MANUAL and i.can_retry and i.job_id
              and i.job_id not in known]
    return dead, manual


def retry_all(args, svc, actor: str) -> Outcome:
    dead, manual = retry_candidates(svc)
    ids = dead + (manual if args.include_manual else [])
    skipped = 0 if args.include_manual else len(manual)
    scope = "all+manual" if args.include_manual else "all"
    runs = RunLog(svc.db)
    run = runs.begin("failed-retry", scope, actor, remaining=len(ids),
                     settled=lambda item: int(item) not in ids)
    total = console.RetryResult()
    stop = threading.Event()
    restore = stop_on_signals(stop)
    lost = ""
    try:
        for n, job_id in enumerate(ids):
            if stop.is_set():
                break
            try:
                runs.item(run, str(job_id))
                r = console.retry_jobs(svc, [job_id], actor, args.note)
                total.retried += r.retried
                total.to_review += r.to_review
                total.refused.update(r.refused)
                total.enqueued = total.enqueued or r.enqueued
                done = len(total.retried) + len(total.to_review)
                runs.progress(run, done, len(total.refused), skipped, len(ids) - n - 1)
            except TransientError as e:  # MariaDB or Redis lost: stop, resume later
                lost = type(e).__name__
                break
    finally:
        restore()
    processed = len(total.retried) + len(total.to_review)
    remaining = len(ids) - processed - len(total.refused)
    interrupted = bool(remaining) and (stop.is_set() or bool(lost))
    why = (f"{lost}: a service was lost midway" if lost else "stopped on request")
    next_cmd = "email-rag failed retry --all" + (" --include-manual" if args.include_manual
                                                  else "")
    result = RunResult.decide(
        processed=processed, failed=len(total.refused), remaining=remaining,
        interrupted=interrupted, skipped=skipped, item="entry",
        resumed_from=run.resumed_from or None,
        what=(f"Processing interrupted ({why}) after {processed} of {len(ids)} entries."
              if interrupted else f"Retried {processed} of {len(ids)} dead or manual entries."
              if args.include_manual else f"Retried {processed} of {len(ids)} dead entries."),
        safe="State is safe: each entry was retried in its own transaction; checkpoint saved.",
        skipped_why=(f"{skipped} mail(s) in manual can be retried but --all leaves them to a "
                     "human: add --include-manual, or retry one with `email-rag failed retry "
                     "JOB_ID`." if skipped else ""),
        next=(next_cmd if interrupted else "email-rag failed list" if total.refused else None))
    if not lost:
        runs.finish(run, result, actor)
    data = {"retried": total.retried, "back_to_review": total.to_review,
            "refused": total.refused, "enqueued": total.enqueued, "skipped_manual": manual
            if not args.include_manual else [], "run_id": run.id}
    return Outcome.of(result, " ".join(_retry_lines(total)), data)


def resolve_failed(args, svc) -> Outcome:
    actor = _actor(args)
    try:
        if args.email_id is not None:
            r = console.resolve_mail(svc, args.email_id, actor, args.note)
            what = f"Mail {args.email_id}"
        else:
            r = console.resolve_job(svc, args.job_id, actor, args.note)
            what = f"Entry {args.job_id}" + (f" (mail {r['email_id']})" if r["email_id"] else "")
    except PermanentError as e:
        target = f"mail {args.email_id}" if args.email_id is not None else f"entry {args.job_id}"
        return Outcome(ExitCode.ERROR, f"Not resolved: {target}: {e}. Nothing changed.",
                       {"resolved": None, "error": str(e)})
    return Outcome(ExitCode.OK, f"{what} resolved by hand with your note (audited).",
                   {"resolved": r})


def run_cleanup(args, svc) -> Outcome:
    reset = cleanup_stuck(svc)
    rows = [{"id": job.id, "worker": job.worker, "state": str(job.state)} for job in reset]
    return Outcome(ExitCode.OK, f"Reset {len(rows)} stuck entr{'y' if len(rows) == 1 else 'ies'} "
                   "into the retry cycle.", {"reset": rows}, table(rows, ["id", "worker", "state"])
                   if rows else "")


def run_redispatch(args, svc) -> Outcome:
    from ..jobs.dispatch import redispatch

    n = redispatch(svc, grace_seconds=args.grace)
    return Outcome(ExitCode.OK, f"Enqueued {n} waiting entr{'y' if n == 1 else 'ies'} that Redis "
                   "did not hold.", {"enqueued": n})
