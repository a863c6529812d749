"""``email-rag idle``: IMAP IDLE on every configured folder; a mail is ingested on arrival.

Runs until SIGTERM/SIGINT, also while no mailbox is polled yet: the mailboxes are read
again every ``poll_interval_seconds`` (one added in the web admin gets its watcher, a
disabled or removed one's stops). One process per mailbox holds it (the poll lease); a second
``idle`` process waits and takes over when the first is gone. Servers without IDLE are
polled every ``poll_interval_seconds`` by the same process. Keep the scheduler running:
its poll job is the safety net while no ``idle`` process holds a mailbox.

Exit codes: 0 stopped on request; 1 configuration refused or a named mailbox unknown
(nothing was done).
"""

from __future__ import annotations

import threading
from dataclasses import asdict

from ..ingest.idle import watch
from .output import ExitCode, Outcome, stop_on_signals, table

COLUMNS = ["mailbox", "idle_supported", "leases", "sessions", "notifications", "refreshes",
           "safety_polls", "failures", "alarms", "new", "missed"]


def register(sub, common) -> None:
    p = sub.add_parser("idle", parents=[common],
                       help="ingest mail on arrival (IMAP IDLE; polling where the server has none)")
    p.add_argument("--mailbox", action="append", metavar="NAME",
                   help="only this mailbox (repeatable; default: all configured, one thread each)")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        stats = watch(svc.settings, args.mailbox, stop, services=svc)
    finally:
        restore()
    rows = [{"mailbox": n, **{k: v for k, v in asdict(st).items() if k != "polls"}}
            for n, st in stats.items()]
    new = sum(st.new for st in stats.values())
    return Outcome(ExitCode.OK, f"IDLE stopped on request; {new} new mail(s) stored while it ran. "
                   "State is safe: every batch was committed with its cursor; the lease is "
                   "released and the scheduled poll or another idle process continues.",
                   {"mailboxes": rows}, table(rows, COLUMNS))
