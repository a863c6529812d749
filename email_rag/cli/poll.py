"""``email-rag poll``: fetch new mail from the configured IMAP mailboxes.

``--once`` polls every mailbox once and exits; without it the command polls
every ``poll_interval_seconds`` until SIGTERM/SIGINT, finishing the batch in
hand first (a batch is one transaction: stopping never leaves half a batch). It reads
the mailboxes again every cycle: one added, changed, disabled or removed (web admin,
``email-rag mailboxes``) is polled - or no longer - from the next cycle, without a restart.

The result is a ``RunResult`` (core/run_result.py; items are mails): ``completed`` (0)
every mailbox polled and, with ``--once``, the re-count in MariaDB agrees;
``nothing_to_do`` (0) no new mail; ``completed_with_failures`` (2) some mails could not be
parsed (stored raw with the reason, status failed); ``partial`` (2) some mailboxes could not
be polled while others were; ``interrupted`` (2) stopped on request after a committed batch;
``verification_failed`` (3) the re-count of what MariaDB holds does not match what the poll
counted; ``failed`` (1) no mailbox could be polled at all (IMAP failure, backoff, error) -
the state is still safe, it is retried.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..core.errors import EmailRagError
from ..core.redact import redact_text
from ..core.run_result import EndState, RunResult
from ..ingest.poller import COUNTERS, Poller, PollResult
from .output import ExitCode, Outcome, stop_on_signals, table

log = logging.getLogger(__name__)

COLUMNS = ["mailbox", "folder", "status", "fetched", "new", "duplicate", "queued", "skipped",
           "failed", "too_large", "reused_id", "missing", "enqueue_failed"]


def register(sub, common) -> None:
    p = sub.add_parser("poll", parents=[common],
                       help="fetch new mail from the IMAP mailboxes into MariaDB and the queue")
    p.add_argument("--once", action="store_true",
                   help="poll once and exit (default: every poll_interval_seconds until stopped)")
    p.add_argument("--mailbox", action="append", metavar="NAME",
                   help="only this mailbox (repeatable; default: all configured)")
    p.add_argument("--force", action="store_true",
                   help="poll a mailbox even while it is in backoff after failures")
    p.set_defaults(handler=run)


NO_MAILBOX = ("No mailbox is polled: add one in the web admin (/admin/mailboxes) or with "
              "`email-rag mailboxes add`, or set EMAIL_RAG_MAILBOXES (docs/mailboxes.md).")


def run(args, svc) -> Outcome:
    if args.once and not svc.mailboxes.active(fresh=True):
        return Outcome(ExitCode.ERROR, NO_MAILBOX + " Nothing was done.",
                       {"error": "no_mailboxes"})
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        poller = svc.poller(stop=stop)
        if args.once:
            return render(poller.poll(args.mailbox, force=args.force, recount=True))
        return _loop(poller, args, svc, stop)
    finally:
        restore()


def _loop(poller: Poller, args, svc, stop: threading.Event) -> Outcome:
    """Poll every interval until stopped; a failed cycle (e.g. MariaDB down) is logged and
    the next cycle tries again - a long-running poller does not die of an outage."""
    cycles, totals = 0, dict.fromkeys(COUNTERS, 0)
    last = PollResult()
    while not stop.is_set():
        try:
            last = poller.poll(args.mailbox, force=args.force and cycles == 0)
        except EmailRagError as e:
            log.error("poll cycle failed (%s); trying again in %s s", redact_text(str(e)),
                      svc.settings.poll_interval_seconds)
        else:
            for k in COUNTERS:
                totals[k] += last.total(k)
        cycles += 1
        stop.wait(svc.settings.poll_interval_seconds)
    return render(last, cycles=cycles, cumulative=totals)


def render(result: PollResult, cycles: int = 1,
           cumulative: dict[str, int] | None = None) -> Outcome:
    t = result.totals
    rows: list[dict[str, Any]] = []
    for mb in result.mailboxes:
        if not mb.folders:
            rows.append({"mailbox": mb.name, "folder": "-", "status": mb.status})
        for f in mb.folders:
            rows.append({"mailbox": mb.name, "folder": f.folder, "status": mb.status,
                         **{c: getattr(f, c) for c in COLUMNS[3:]}})
    data = {"mailboxes": [m.as_dict() for m in result.mailboxes], "totals": t, "cycles": cycles}
    if cumulative is not None:
        data["cumulative"] = cumulative
    polled = [m for m in result.mailboxes if m.status in ("ok", "interrupted")]
    lines = [
        f"Polled {len(polled)} of {len(result.mailboxes)} mailbox(es): fetched {t['fetched']} "
        f"mail(s), {t['new']} new ({t['queued']} queued for processing, {t['skipped']} "
        f"recorded without reply by the loop guard, {t['too_large']} too large for a human, "
        f"{t['failed']} unparseable), {t['duplicate']} duplicate(s) ignored."
    ]
    if cycles > 1 and cumulative:
        lines.append(f"Stopped after {cycles} poll cycles; in total {cumulative['new']} new mail(s).")
    if t["reused_id"]:
        lines.append(f"{t['reused_id']} mail(s) reuse the Message-ID of a stored mail with other "
                     "content: kept with status manual for a human (never dropped).")
    if t["missing"]:
        lines.append(f"The server listed {t['missing']} UID(s) without returning a body: the "
                     "cursor waits below them and the next poll fetches them again (after "
                     "EMAIL_RAG_MISSING_UID_POLLS polls they become manual mails).")
    verified: bool | None = None
    recounted = [m for m in result.mailboxes if m.recounted is not None]
    if recounted:  # each polled mailbox counted in MariaDB under its lease
        mails = sum(m.recounted["mails"] for m in recounted)
        jobs = sum(m.recounted["jobs"] for m in recounted)
        new, queued = (sum(m.total(c) for m in recounted) for c in ("new", "queued"))
        data["recounted"] = {"mails_stored": mails, "jobs_created": jobs,
                             "mails_now": sum(m.recounted["mails_now"] for m in recounted)}
        verified = (mails, jobs) == (new, queued)
        if verified:
            lines.append(f"Re-counted in MariaDB: {mails} new mail row(s) and {jobs} new "
                         f"processing entr{'y' if jobs == 1 else 'ies'}, as reported.")
        else:
            lines.append(f"Re-counted in MariaDB: {mails} new mail row(s) and {jobs} new "
                         f"processing entr{'y' if jobs == 1 else 'ies'}, not the {new} and "
                         f"{queued} the poll counted (a batch did not commit, or mail was "
                         "stored by a process that ignores the poll lease): check "
                         "`email-rag status`.")
    interrupted = any(m.status == "interrupted" for m in result.mailboxes)
    if interrupted:
        lines.append("Stopped on request after a committed batch; the next poll continues there.")
    for mb in result.mailboxes:
        if mb.status == "busy":
            lines.append(f"Mailbox {mb.name} skipped: another poller is polling it ({mb.error}).")
    if t["enqueue_failed"]:
        lines.append(f"Redis was unreachable at hand-off: {t['enqueue_failed']} job(s) stay "
                     "queued in MariaDB and are dispatched later by the scheduler's redispatch; "
                     "nothing is lost.")
    if t["failed"]:
        lines.append(f"{t['failed']} mail(s) could not be parsed: stored raw with status failed "
                     "and the reason in parse_error, for an admin to review.")
    for mb in result.unpolled:
        if mb.status == "backoff":
            lines.append(f"Mailbox {mb.name} not polled: in backoff until {mb.backoff_until} "
                         f"after {mb.consecutive_failures} failure(s). It is retried then; use "
                         "--force to try now.")
        else:
            hint = (" Login was refused: check the mailbox credentials."
                    if mb.needs_attention else " Check host, port and network.")
            lines.append(f"Mailbox {mb.name} could not be polled: {mb.error}. Nothing is lost; "
                         f"it is retried after backoff (until {mb.backoff_until}).{hint}")
    status = end_state(result, polled, verified, interrupted)
    run = RunResult(status, processed=t["new"], failed=t["failed"], remaining=t["missing"],
                    verified=verified, item="mail",
                    what=f"Polled {len(polled)} of {len(result.mailboxes)} mailbox(es).",
                    safe="State is safe: each batch was committed together with its cursor.",
                    next=NEXT.get(status))
    return Outcome.of(run, "\n".join(lines), data, table(rows, COLUMNS))


NEXT = {EndState.VERIFICATION_FAILED: "email-rag status",
        EndState.PARTIAL: "email-rag poll --once", EndState.FAILED: "email-rag poll --once",
        EndState.INTERRUPTED: "email-rag poll --once",
        EndState.COMPLETED_WITH_FAILURES: "email-rag failed list"}


def end_state(result: PollResult, polled: list, verified: bool | None,
              interrupted: bool) -> EndState:
    """No mailbox polled: failed (1); the re-count disagrees: verification_failed (3);
    stopped on request: interrupted; some mailboxes not polled or UIDs listed without a
    body (the next poll fetches them): partial; unparseable
    mails: completed_with_failures (2); no new mail: nothing_to_do; else completed."""
    if result.unpolled and not polled:
        return EndState.FAILED
    if verified is False:
        return EndState.VERIFICATION_FAILED
    if interrupted:
        return EndState.INTERRUPTED
    if result.unpolled or result.totals["missing"]:
        return EndState.PARTIAL
    if result.totals["failed"]:
        return EndState.COMPLETED_WITH_FAILURES
    return EndState.COMPLETED if result.totals["new"] else EndState.NOTHING_TO_DO
