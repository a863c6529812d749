"""Admin commands over queue entries and failed mails.

``email-rag jobs list [--state S]``, ``email-rag cleanup``,
``email-rag failed list``, ``email-rag failed retry ID|--all``,
``email-rag failed resolve ID --note TEXT``. Retry and resolve are audited
with the acting user (``--by``, default the login name).
"""

from __future__ import annotations

import getpass

from ..jobs import JobStore
from ..maintenance import cleanup_stuck
from ..states import JobState, MailStatus
from ..worker import retry_policy
from .output import ExitCode, Outcome, table

COLUMNS = ["id", "kind", "email_id", "state", "attempts", "next_run_at", "mail_status",
           "worker", "last_error"]


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
    target.add_argument("--all", action="store_true", help="every dead entry")
    retry.add_argument("--by", default=None, help="acting user (default: login name)")
    retry.add_argument("--note", default="")
    retry.set_defaults(handler=retry_failed)
    resolve = fsub.add_parser("resolve", parents=[common], help="close by hand with a note")
    resolve.add_argument("job_id", type=int)
    resolve.add_argument("--note", required=True)
    resolve.add_argument("--by", default=None)
    resolve.set_defaults(handler=resolve_failed)


def _store(svc) -> JobStore:
    return JobStore(svc.db, retry_policy(svc.settings))


def _actor(args) -> str:
    return f"cli:{args.by or getpass.getuser()}"


def list_jobs(args, svc) -> Outcome:
    rows = _store(svc).list(args.state, args.limit)
    return Outcome(ExitCode.OK, f"{len(rows)} queue entr{'y' if len(rows) == 1 else 'ies'}.",
                   {"jobs": rows}, table(rows, COLUMNS))


def list_failed(args, svc) -> Outcome:
    store = _store(svc)
    rows = [r for r in store.list([JobState.DEAD, JobState.FAILED, JobState.DONE], 100000)
            if r["state"] != JobState.DONE
            or r["mail_status"] in (MailStatus.MANUAL, MailStatus.FAILED)][: args.limit]
    msg = (f"{len(rows)} item(s) need attention. Retry with `email-rag failed retry ID`, "
           "or close with `email-rag failed resolve ID --note ...`." if rows
           else "Nothing failed, dead or waiting for manual review.")
    return Outcome(ExitCode.OK, msg, {"items": rows}, table(rows, COLUMNS))


def retry_failed(args, svc) -> Outcome:
    store = _store(svc)
    actor = _actor(args)
    ids = ([r["id"] for r in store.list([JobState.DEAD], 100000)] if args.all else [args.job_id])
    done = [i for i in ids if store.retry(i, actor, args.note)]
    refused = [i for i in ids if i not in done]
    if done:
        from ..dispatch import redispatch

        try:
            redispatch(svc)
        except Exception:  # noqa: BLE001 - the scheduler's re-dispatch will enqueue them
            pass
    data = {"retried": done, "refused": refused}
    if refused and not done:
        return Outcome(ExitCode.ERROR, f"Nothing retried: {refused} not found or not in a "
                       "retryable state (dead, failed, or done with a manual/failed mail).", data)
    code = ExitCode.PARTIAL if refused else ExitCode.OK
    return Outcome(code, f"Queued {len(done)} entr{'y' if len(done) == 1 else 'ies'} again "
                   f"{done}; each resumes at its first unconfirmed step."
                   + (f" Refused: {refused}." if refused else ""), data)


def resolve_failed(args, svc) -> Outcome:
    if _store(svc).resolve(args.job_id, _actor(args), args.note):
        return Outcome(ExitCode.OK, f"Entry {args.job_id} resolved by hand; the mail is marked "
                       "resolved with your note (audited).", {"resolved": args.job_id})
    return Outcome(ExitCode.ERROR, f"Entry {args.job_id} not found, or running/done: not resolved.",
                   {"resolved": None})


def run_cleanup(args, svc) -> Outcome:
    reset = cleanup_stuck(svc)
    rows = [{"id": r["id"], "worker": r["worker"], "state": r["state"]} for r in reset]
    return Outcome(ExitCode.OK, f"Reset {len(rows)} stuck entr{'y' if len(rows) == 1 else 'ies'} "
                   "into the retry cycle.", {"reset": rows}, table(rows, ["id", "worker", "state"])
                   if rows else "")


def run_redispatch(args, svc) -> Outcome:
    from ..dispatch import redispatch

    n = redispatch(svc, grace_seconds=args.grace)
    return Outcome(ExitCode.OK, f"Enqueued {n} waiting entr{'y' if n == 1 else 'ies'} that Redis "
                   "did not hold.", {"enqueued": n})
