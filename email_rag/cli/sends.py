"""``email-rag sends list [--status S]``,
``email-rag sends resolve ID --mark-sent|--resend|--give-up`` (the send decision)."""

from __future__ import annotations

import dataclasses

from ..core.states import SendStatus
from ..sending import admin
from ..sending.outcome import send_outcome_text
from .output import ExitCode, Outcome, table


def register(sub, common) -> None:
    sends = sub.add_parser("sends", parents=[common], help="send attempts")
    ssub = sends.add_subparsers(dest="sends_command", metavar="SUBCOMMAND", required=True)
    lst = ssub.add_parser("list", parents=[common], help="list send attempts")
    lst.add_argument("--status", choices=[s.value for s in SendStatus])
    lst.add_argument("--limit", type=int, default=200)
    lst.set_defaults(handler=list_sends)
    res = ssub.add_parser("resolve", parents=[common],
                          help="decide an attempt whose outcome is unknown")
    res.add_argument("attempt_id", type=int)
    how = res.add_mutually_exclusive_group(required=True)
    how.add_argument("--mark-sent", action="store_true", help="it did arrive")
    how.add_argument("--resend", action="store_true", help="it did not arrive: send once more")
    how.add_argument("--give-up", action="store_true",
                     help="send nothing more: the mail is resolved with your note")
    res.add_argument("--by", required=True)
    res.add_argument("--note", default="")
    res.add_argument("--despite-evidence", action="store_true",
                     help="resend although there is evidence that it may have arrived")
    res.set_defaults(handler=resolve)


def list_sends(args, svc) -> Outcome:
    # how the outcome was established, in words (email_rag/sending/outcome.py)
    rows = [{**dataclasses.asdict(a), "outcome": send_outcome_text(a)}
            for a in admin.list_attempts(svc, args.status, args.limit)]
    return Outcome(ExitCode.OK, f"{len(rows)} send attempt(s).", {"sends": rows},
                   table(rows, ["id", "draft_id", "email_id", "status", "verified_by", "tries",
                                "message_id", "outcome"]))


def resolve(args, svc) -> Outcome:
    decision = "mark_sent" if args.mark_sent else "resend" if args.resend else "give_up"
    new = admin.resolve_unknown(svc, args.attempt_id, args.by, decision, args.note,
                                args.despite_evidence)
    outcome = send_outcome_text(admin.get_attempt(svc, args.attempt_id))
    return Outcome(ExitCode.OK, f"Send attempt {args.attempt_id}: {outcome} (audited).",
                   {"attempt_id": args.attempt_id, "status": new, "outcome": outcome})
