"""``email-rag users add|list|disable|enable``: web UI accounts.

The password of ``users add`` comes from ``--password-file FILE`` (first line),
the environment variable ``EMAIL_RAG_NEW_USER_PASSWORD`` (for scripts), or an
interactive prompt (asked twice, never echoed). It is never printed or audited.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import sys
from pathlib import Path

from ..auth import users
from ..core.actors import command_line
from ..core.errors import BadInputError
from ..core.states import UserRole
from .output import ExitCode, Outcome, table

PASSWORD_ENV = "EMAIL_RAG_NEW_USER_PASSWORD"


def register(sub, common) -> None:
    p = sub.add_parser("users", parents=[common], help="web UI users")
    usub = p.add_subparsers(dest="users_command", metavar="SUBCOMMAND", required=True)
    add = usub.add_parser("add", parents=[common], help="create a user")
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=[r.value for r in UserRole])
    add.add_argument("--password-file", type=Path,
                     help=f"read the password from this file (else ${PASSWORD_ENV}, else a prompt)")
    add.set_defaults(handler=add_user)
    lst = usub.add_parser("list", parents=[common], help="list users")
    lst.set_defaults(handler=list_users)
    for name, disabled in (("disable", True), ("enable", False)):
        d = usub.add_parser(name, parents=[common], help=f"{name} a user (sessions end at once)"
                            if disabled else "enable a user again")
        d.add_argument("name")
        d.set_defaults(handler=set_disabled, disabled=disabled)
    for name, assigned in (("assign", True), ("unassign", False)):
        a = usub.add_parser(name, parents=[common],
                            help=f"{name} a mailbox to a staff member (admins see all)")
        a.add_argument("name")
        a.add_argument("mailbox")
        a.set_defaults(handler=set_mailbox, assigned=assigned)


def _actor() -> str:
    return command_line(None)


def _password(args) -> str:
    if args.password_file:
        try:
            lines = args.password_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise BadInputError(f"cannot read the password file {args.password_file}: "
                                f"{type(e).__name__}") from e
        return lines[0] if lines else ""
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    if not sys.stdin.isatty():
        raise BadInputError(f"no password given: use --password-file, ${PASSWORD_ENV}, "
                            "or run in a terminal to be asked")
    first = getpass.getpass(f"Password for {args.name}: ")
    if getpass.getpass("Again: ") != first:
        raise BadInputError("the two passwords differ; no user created")
    return first


def add_user(args, svc) -> Outcome:
    user_id = users.add_user(svc.db, args.name, args.role, _password(args), _actor())
    return Outcome(ExitCode.OK, f"User {args.name} ({args.role}) created; they can log in to the "
                   "web UI now (`email-rag web`).",
                   {"id": user_id, "name": args.name, "role": args.role})


def list_users(args, svc) -> Outcome:
    rows = [dataclasses.asdict(u) for u in users.list_users(svc.db)]
    shown = [{**r, "disabled": "yes" if r["disabled"] else "no"} for r in rows]
    return Outcome(ExitCode.OK, f"{len(rows)} user(s).", {"users": rows},
                   table(shown, ["id", "name", "role", "disabled", "last_login_at",
                                 "mailboxes"]))


def set_disabled(args, svc) -> Outcome:
    what = "disabled" if args.disabled else "enabled"
    if not users.set_disabled(svc.db, args.name, args.disabled, _actor()):
        return Outcome(ExitCode.ERROR, f"No user {args.name!r}; nothing changed.",
                       {"name": args.name, what: False})
    note = " Their open sessions stop working at the next request." if args.disabled else ""
    return Outcome(ExitCode.OK, f"User {args.name} {what} (audited).{note}",
                   {"name": args.name, what: True})


def set_mailbox(args, svc) -> Outcome:
    changed = users.set_mailbox(svc.db, args.name, args.mailbox, args.assigned, _actor())
    what = "assigned to" if args.assigned else "unassigned from"
    if not changed:
        return Outcome(ExitCode.OK, f"Nothing changed: no user {args.name!r} or mailbox "
                       f"{args.mailbox!r}, or it was {what} them already.",
                       {"name": args.name, "mailbox": args.mailbox, "changed": False})
    return Outcome(ExitCode.OK, f"Mailbox {args.mailbox} {what} {args.name} (audited); it "
                   "applies at their next request.",
                   {"name": args.name, "mailbox": args.mailbox, "changed": True})
