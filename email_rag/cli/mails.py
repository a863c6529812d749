"""``email-rag mails no-reply list|confirm|reply``: staff decide on mails the LLM
suggested need no reply (email_rag.review.no_reply). The web UI calls the same functions."""

from __future__ import annotations

from ..review import no_reply
from .output import ExitCode, Outcome, table


def register(sub, common) -> None:
    mails = sub.add_parser("mails", parents=[common], help="decisions about single mails")
    msub = mails.add_subparsers(dest="mails_command", metavar="SUBCOMMAND", required=True)
    nr = msub.add_parser("no-reply", parents=[common],
                         help="mails the model suggested need no reply: confirm or ask for one")
    nsub = nr.add_subparsers(dest="no_reply_command", metavar="ACTION", required=True)
    lst = nsub.add_parser("list", parents=[common], help="mails waiting for the decision")
    lst.add_argument("--mailbox")
    lst.add_argument("--limit", type=int, default=200)
    lst.set_defaults(handler=list_mails)
    for action, text in (("confirm", "no reply is right: close the mail as no_reply"),
                         ("reply", "the mail needs a reply: draft one")):
        p = nsub.add_parser(action, parents=[common], help=text)
        p.add_argument("email_id", type=int)
        p.add_argument("--by", required=True, help="your user name (audited)")
        p.add_argument("--note", default="")
        p.set_defaults(handler=decide, reply=action == "reply")


def list_mails(args, svc) -> Outcome:
    rows = no_reply.list_suggested(svc, args.mailbox, args.limit)
    return Outcome(ExitCode.OK, f"{len(rows)} mail(s) suggested for no reply (the model says "
                   "so, or the sender takes no replies) wait for a decision (confirm or reply).",
                   {"mails": rows},
                   table(rows, ["id", "mailbox", "category", "language", "from_addr", "subject",
                                "summary"], fit=("from_addr", "subject", "summary")))


def decide(args, svc) -> Outcome:
    r = no_reply.decide(svc, args.email_id, args.by, args.reply, args.note)
    data = vars(r)
    if r.action == "unchanged":
        return Outcome(ExitCode.OK, f"Mail {r.email_id} is {r.status}, not waiting for a "
                       "no-reply decision; nothing changed.", data)
    if r.action == "confirmed":
        return Outcome(ExitCode.OK, f"Mail {r.email_id}: no reply, confirmed by {args.by}.", data)
    queued = "queued" if r.enqueued else "queued in MariaDB (re-dispatch puts it on Redis)"
    return Outcome(ExitCode.OK, f"Mail {r.email_id} needs a reply: job {r.job_id} {queued}; the "
                   "draft appears in `email-rag drafts list` when the worker has written it.", data)
