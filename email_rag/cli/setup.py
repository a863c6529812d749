"""``email-rag setup [--base-url URL]``: the first start's one-time link.

While no account exists, it prints a link to the web's set-up page (valid for an
hour, usable once): the first admin is created there, then the first mailbox is added and
its history import started (auth/first_start.py). Once an account exists it prints nothing
secret and exits 1: log in, or add users with `email-rag users add`.
"""

from __future__ import annotations

from ..auth import first_start
from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("setup", parents=[common], help="first start: print a one-time link "
                       "to the web's set-up page (creates the first admin)")
    p.add_argument("--base-url", help="the web UI's address as the browser reaches it "
                   "(default: http://EMAIL_RAG_WEB_HOST:EMAIL_RAG_WEB_PORT)")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    if not first_start.needs_setup(svc.db):
        return Outcome(ExitCode.ERROR, "An account exists already: set-up is done. Log "
                       "in to the web UI, or add users with `email-rag users add`.",
                       {"needs_setup": False})
    s = svc.settings
    base = (args.base_url or f"http://{s.web_host}:{s.web_port}").rstrip("/")
    link = f"{base}/setup?token={first_start.new_link(svc.db)}"
    minutes = first_start.LINK_SECONDS // 60
    return Outcome(ExitCode.OK, f"Open this link to create the first admin account (it works "
                   f"once, for {minutes} minutes):\n\n  {link}\n\nThen add your first mailbox "
                   "and start its history import on the pages that follow.",
                   {"needs_setup": True, "link": link, "valid_minutes": minutes})
