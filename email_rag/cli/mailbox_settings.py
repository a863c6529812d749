"""``email-rag mailboxes add|edit|list|disable|enable|remove``: the mailboxes kept in MariaDB.

One flag per setting of a mailbox, named after it (``--host``, ``--port``, ``--username``,
``--security``, ``--address``, ``--smtp-host``, ``--oauth-client-id``,
``--service-level-hours``, ...: ``core.mailbox_fields.FIELDS``); a list is comma-separated
(``--folders INBOX,Support``); ``--unset KEY`` sets one back to its default (or drops a
section: ``--unset smtp``). A secret is given as ``--password VALUE`` or, kept out of the
process list and the shell history, ``--password-stdin`` (one line of standard input; with
several ``-stdin`` flags one line each, in the order of ``--help``). Secrets are stored
encrypted with the token key (EMAIL_RAG_OAUTH_TOKEN_KEY) and never printed.

``add`` and ``edit`` run ``mailboxes check`` on the new settings first: saved when it
passes; when it fails nothing is saved (exit 3: refused, 1: failed) unless ``--disabled``,
which saves it disabled with the check's report. ``--no-check`` saves without connecting.
Every change is audited with ``--by`` (default: the login). A mailbox of
EMAIL_RAG_MAILBOXES is listed with its source and cannot be changed here.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core import mailbox_fields as mf
from ..core.actors import command_line
from ..core.errors import BadInputError
from ..db.mailbox_configs import DATABASE
from ..ingest import history_import
from ..ops import mailbox_admin
from .output import ExitCode, Outcome, table

HISTORY_COLUMNS = ["mailbox", "state", "done", "total", "percent", "errors", "rate_per_s",
                   "seconds_left"]
LIST_COLUMNS = ["name", "source", "state", "host", "username", "auth", "last_check", "problem"]


def register(msub, common) -> None:
    for action, text in (("add", "add a mailbox (checked against its servers first)"),
                         ("edit", "change a mailbox's settings (checked first)")):
        p = msub.add_parser(action, parents=[common], help=text)
        p.add_argument("name", help="the mailbox's name (stable: used on the CLI and in "
                       "the database)")
        _setting_flags(p)
        p.add_argument("--unset", action="append", default=[], metavar="KEY",
                       help="set back to the default (e.g. smtp.password, team_name; or a "
                       "section: smtp, oauth, service_level)")
        p.add_argument("--disabled", action="store_true",
                       help="save it disabled (not polled), also when the check fails")
        p.add_argument("--no-check", action="store_true",
                       help="save without connecting to the servers")
        p.add_argument("--by", help="who makes the change (audited; default: your login)")
        p.set_defaults(handler=run_save, new=action == "add")
    lp = msub.add_parser("list", parents=[common], help="every mailbox: where it is defined, "
                         "whether it is polled, its last check")
    lp.add_argument("--all", action="store_true", help="removed mailboxes too")
    lp.set_defaults(handler=run_list)
    for action, text in (("disable", "stop polling a mailbox (its mail and jobs stay)"),
                         ("enable", "poll a disabled mailbox again"),
                         ("remove", "remove a mailbox: no longer polled or listed; its mail "
                          "stays (retention and erasure decide), its jobs finish")):
        p = msub.add_parser(action, parents=[common], help=text)
        p.add_argument("name")
        p.add_argument("--reason", default="", help="why (audited)")
        p.add_argument("--by", help="who (audited; default: your login)")
        p.set_defaults(handler=run_state, action=action)
    h = msub.add_parser("history", parents=[common], help="the history import of each "
                        "mailbox: mails indexed of the total, rate, time left, errors; "
                        "pause, resume or restart it")
    h.add_argument("name", nargs="?", help="one mailbox (default: all)")
    h.add_argument("action", nargs="?", choices=["pause", "resume", "restart"],
                   help="pause: its waiting index entries wait; resume; restart: its "
                   "failed entries again, then resume")
    h.add_argument("--by", help="who (audited; default: your login)")
    h.set_defaults(handler=run_history)


def _setting_flags(p: argparse.ArgumentParser) -> None:
    for spec in mf.FIELDS:
        text = spec.description.replace("%", "%%")
        if spec.kind == "bool":
            p.add_argument(spec.flag, dest=spec.dest, action=argparse.BooleanOptionalAction,
                           default=None, help=text)
            continue
        metavar = {"int": "N", "float": "N", "list": "A,B", "dates": "DATE,DATE",
                   "datetime": "DATE", "secret": "SECRET"}.get(spec.kind, "VALUE")
        p.add_argument(spec.flag, dest=spec.dest, metavar=metavar, default=None,
                       choices=[c for c in spec.choices if c] or None, help=text or None)
        if spec.secret:
            p.add_argument(spec.flag + "-stdin", dest=spec.dest + "__stdin",
                           action="store_true", help=f"read {spec.key} from standard input "
                           "(one line)")


def changes_from(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line: dotted key -> value (None: unset)."""
    changes: dict[str, Any] = {}
    for spec in mf.FIELDS:
        value = getattr(args, spec.dest, None)
        if spec.secret and getattr(args, spec.dest + "__stdin", False):
            if value is not None:
                raise BadInputError(f"{spec.flag} and {spec.flag}-stdin: give one of them")
            value = sys.stdin.readline().rstrip("\r\n")
            if not value:
                raise BadInputError(f"{spec.flag}-stdin: standard input had no line")
        if value is None:
            continue
        changes[spec.key] = value if isinstance(value, bool) else mf.parse(spec, value)
    for key in args.unset:
        key = key.removeprefix("--").replace("-", "_")
        key = next((f.key for f in mf.FIELDS if f.dest == key.replace(".", "__")
                    or f.key == key or f.flag == "--" + key.replace("_", "-")), key)
        changes[key] = None
    return changes


def run_save(args, svc) -> Outcome:
    changes = changes_from(args)
    if not args.new and not changes:
        return Outcome(ExitCode.ERROR, f"Nothing to change for mailbox {args.name}: give "
                       "the settings to change (see --help).")
    result = mailbox_admin.save(svc, args.name, changes, command_line(args.by), new=args.new,
                                disabled=args.disabled, check=not args.no_check)
    text = "\n".join(report_lines(result.report)) if result.report else ""
    data = result.as_dict()
    if not result.saved:
        code = ExitCode(result.report.exit_code if result.report else 1)
        return Outcome(code, f"Mailbox {args.name} NOT saved: its check failed (see the "
                       "steps above). Nothing changed. Fix the settings, or save it disabled "
                       "with --disabled and fix it later.", data, text)
    what = "added" if args.new else ("changed: " + ", ".join(result.changed)
                                      if result.changed else "unchanged")
    state = ("polled from the next poll (no restart needed)" if result.enabled else
             f"disabled: not polled until `email-rag mailboxes enable {args.name}`")
    return Outcome(ExitCode.OK, f"Mailbox {args.name} {what}; {state}. Audited.", data, text)


def run_list(args, svc) -> Outcome:
    entries = [e for e in svc.mailboxes.entries(fresh=True) if args.all or not e.removed]
    rows = []
    for e in entries:
        check = e.stored.check_summary if e.stored and e.stored.checked_at else ""
        rows.append({"name": e.name, "source": e.source,
                     "state": "removed" if e.removed else "polled" if e.polled
                     else "disabled" if not e.enabled else "not usable",
                     "host": e.config.host if e.config else "",
                     "username": e.config.username if e.config else "",
                     "auth": e.config.auth if e.config else "",
                     "last_check": (check or "")[:60], "problem": (e.problem or "")[:80]})
    message = (f"{len(rows)} mailbox(es); {sum(e.polled for e in entries)} polled. Those of "
               "EMAIL_RAG_MAILBOXES (source environment) are changed in the environment; the "
               "others with `email-rag mailboxes edit NAME` or in the web admin.")
    return Outcome(ExitCode.OK, message, {"mailboxes": [e.as_dict() for e in entries]},
                   table(rows, LIST_COLUMNS))


def run_state(args, svc) -> Outcome:
    store = svc.mailboxes.store
    actor = command_line(args.by)
    entry = svc.mailboxes.entry(args.name, fresh=True) if any(
        e.name == args.name for e in svc.mailboxes.entries(fresh=True)) else None
    if entry is not None and entry.source != DATABASE:
        return Outcome(ExitCode.ERROR, f"Mailbox {args.name} is defined in "
                       "EMAIL_RAG_MAILBOXES: change it there. Nothing changed.")
    if args.action == "remove":
        store.remove(args.name, actor)
        return Outcome(ExitCode.OK, f"Mailbox {args.name} removed: no longer polled (from "
                       "the next poll); its mail stays (retention and erasure decide), its "
                       "queued jobs finish. Audited.", {"mailbox": args.name, "removed": True})
    enabled = args.action == "enable"
    changed = store.set_enabled(args.name, enabled, actor, args.reason)
    state = "polled from the next poll" if enabled else "no longer polled from the next poll"
    return Outcome(ExitCode.OK, f"Mailbox {args.name} {args.action}d: {state}"
                   f"{'' if changed else ' (it already was)'}. Audited.",
                   {"mailbox": args.name, "enabled": enabled, "changed": changed})


def run_history(args, svc) -> Outcome:
    from ..jobs.dispatch import redispatch

    did = ""
    if args.action:
        if not args.name:
            return Outcome(ExitCode.ERROR, f"Say which mailbox to {args.action}.")
        actor = command_line(args.by)
        if args.action == "pause":
            n = history_import.pause(svc.db, args.name, actor)
            did = f"History import of {args.name} paused ({n} waiting entries parked). "
        else:
            n = (history_import.resume(svc.db, args.name, actor) if args.action == "resume"
                 else history_import.restart(svc.db, svc.jobs, args.name, actor))
            redispatch(svc)
            did = (f"History import of {args.name} {args.action}ed ({n} entries "
                   f"{'due again' if args.action == 'resume' else 'with errors restarted'}). ")
    shown = [p for p in history_import.progress(svc.db) if not args.name or p.mailbox ==
             args.name]
    rows = [p.as_dict() for p in shown]
    left = sum(p.left for p in shown)
    message = did + (f"{sum(p.done for p in shown)} of {sum(p.total for p in shown)} history "
                     f"mails indexed, {left} left, {sum(p.errors for p in shown)} error(s). "
                     "Audited." if args.action else "")
    return Outcome(ExitCode.OK, message.strip() or "No history import yet.",
                   {"imports": rows}, table(rows, HISTORY_COLUMNS))


def report_lines(r) -> list[str]:
    """A mailbox check as text, one step a line (``check``, ``add``, ``edit``)."""
    lines = [f"mailbox {r.mailbox}: {'ok' if r.ok else 'FAILED'}"]
    for step in r.steps:
        mark = "ok  " if step.ok else ("--  " if step.ok is None else "FAIL")
        lines.append(f"  {mark} {step.name:<12} {step.detail}")
        if step.hint:
            lines.append(f"       -> {step.hint}")
    return lines
