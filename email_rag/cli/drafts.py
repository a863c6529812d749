"""``email-rag drafts list|show|approve|reject``: staff review from the terminal.

The web UI calls the same functions (email_rag.sending.review).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from ..core.errors import BadInputError
from ..review import queue
from ..sending import review
from ..sending.outcome import send_outcome_text
from .output import ExitCode, Outcome, table


def register(sub, common) -> None:
    drafts = sub.add_parser("drafts", parents=[common], help="review reply drafts")
    dsub = drafts.add_subparsers(dest="drafts_command", metavar="SUBCOMMAND", required=True)
    lst = dsub.add_parser("list", parents=[common],
                          help="drafts waiting for review (the web desk's queue), a page at a time")
    lst.add_argument("--mailbox")
    lst.add_argument("--category")
    lst.add_argument("--search", help="words in subject, sender or text (every word required)")
    lst.add_argument("--sort", choices=queue.SORTS, default="waiting",
                     help="waiting (longest first; default), priority or mailbox")
    lst.add_argument("--limit", type=_page_size, default=200, help="drafts per page (1-1000)")
    lst.add_argument("--after", metavar="CURSOR", help="the next page: the cursor the page "
                     "before printed")
    lst.set_defaults(handler=list_drafts)
    show = dsub.add_parser("show", parents=[common], help="mail, sources and draft")
    show.add_argument("draft_id", type=int)
    show.set_defaults(handler=show_draft)
    approve = dsub.add_parser("approve", parents=[common], help="approve (and so send) a draft")
    approve.add_argument("draft_id", type=int)
    approve.add_argument("--by", required=True, help="your user name (audited)")
    approve.add_argument("--edit-file", type=Path, help="send this text instead of the draft")
    approve.set_defaults(handler=approve_draft)
    reject = dsub.add_parser("reject", parents=[common], help="reject a draft")
    reject.add_argument("draft_id", type=int)
    reject.add_argument("--by", required=True)
    reject.add_argument("--reason", required=True)
    reject.set_defaults(handler=reject_draft)


def _page_size(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number from 1 to 1000")
    return n


def list_drafts(args, svc) -> Outcome:
    """One page of the review queue with the true count ("2 of 5"), the same query, order
    and paging as the web desk (an admin's terminal: every mailbox)."""
    query = queue.QueueQuery(args.mailbox or "", args.category or "", args.search or "",
                            args.sort)
    page = queue.queue_page(svc, None, query, after=args.after, limit=args.limit)
    rows = [{k: v for k, v in dataclasses.asdict(r).items() if k != "sort_key"} for r in page.rows]
    total = f"more than {page.total}" if page.capped else str(page.total)
    message = f"{len(rows)} of {total} draft(s) waiting for review"
    if rows and page.first_position is not None:
        message += f" (positions {page.first_position}-{page.first_position + len(rows) - 1})"
    if page.next_cursor:
        message += f"; next page: --after {page.next_cursor}"
    return Outcome(ExitCode.OK, message + ".",
                   {"drafts": rows, "total": page.total, "total_capped": page.capped,
                    "first_position": page.first_position, "next_cursor": page.next_cursor},
                   table(rows, ["id", "email_id", "status", "mailbox", "category", "priority",
                                "language", "age_s", "from_addr", "subject"],
                         fit=("from_addr", "subject")))


def show_draft(args, svc) -> Outcome:
    view = review.show(svc, args.draft_id)
    d, m = view.draft, view.mail
    lines = [
        f"Draft {d.id} (v{d.version}, {d.status}) for mail {m.id} in {m.mailbox}",
        f"Reply: {send_outcome_text(view.send_attempt)}" if view.send_attempt else
        "Reply: not approved — nothing is sent",
        f"From: {m.from_addr}   Subject: {m.subject}",
        f"Category: {m.category}  Priority: {m.priority}  Language: {m.language}",
    ]
    if view.newer_inbound:
        lines.append(f"!! STALE: newer mail {view.newer_inbound.id} arrived in this thread.")
    if d.stale_reason:
        lines.append(f"!! {d.stale_reason}")
    lines += ["", "--- original mail (untrusted text) ---", (m.body_text or "")[:5000]]
    if view.thread:
        lines += ["", "--- thread ---"] + [f"  #{t.id} {t.received_at} {t.from_addr}: "
                                          f"{t.subject} [{t.status}]" for t in view.thread]
    lines += ["", "--- sources used ---"]
    if view.basis == "no_source":
        lines.append("  no source: written without the team's knowledge (asks or defers)")
    lines += [f"  {s.get('ref')} {s.get('kind')}: {s.get('title')} ({s.get('link')})"
              if isinstance(s, dict) and s.get("ref") else f"  {json.dumps(s, default=str)[:300]}"
              for s in view.sources] or ["  (none)"]
    lines += ["", "--- draft ---", d.body]
    if view.trace:
        lines += ["", "--- where each line comes from ---"]
        lines += [f"  [{t.get('ref') or '-'}] {t.get('text')}" for t in view.trace
                  if isinstance(t, dict)]
    return Outcome(ExitCode.OK, "", dataclasses.asdict(view), "\n".join(lines))


def approve_draft(args, svc) -> Outcome:
    body = None
    if args.edit_file:
        try:
            body = args.edit_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise BadInputError(f"cannot read {args.edit_file}: {e}") from e
    r = review.approve(svc, args.draft_id, args.by, body)
    data = vars(r)
    # what is said about the sending is read from the attempt's state, never assumed
    attempt = svc.stores.rows_of(svc.db).send_of_draft(r.draft_id)
    data["outcome"] = outcome = send_outcome_text(attempt)
    follow = f"Follow it: email-rag sends list (attempt {r.send_attempt_id})."
    if r.action == "already_approved":
        return Outcome(ExitCode.OK, f"Draft {r.draft_id} was already approved "
                       f"(by {r.detail.get('approved_by')}); nothing changed, one send attempt "
                       f"only. Reply: {outcome}. {follow}", data)
    return Outcome(ExitCode.OK, f"Draft {r.draft_id} approved; send attempt {r.send_attempt_id} "
                   f"({r.message_id}) queued as job {r.job_id}. Reply: {outcome}. {follow}",
                   data)


def reject_draft(args, svc) -> Outcome:
    r = review.reject(svc, args.draft_id, args.by, args.reason)
    msg = (f"Draft {r.draft_id} rejected; the mail is closed as rejected." if r.action == "rejected"
           else f"Draft {r.draft_id} was already rejected.")
    return Outcome(ExitCode.OK, msg, vars(r))
