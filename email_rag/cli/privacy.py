"""``email-rag privacy export ADDRESS --out FILE.zip``: everything stored about a person,
for an access request; ``email-rag privacy forget ADDRESS --reason TEXT [--dry-run]``:
erase it (email_rag.privacy.personal_data). ``email-rag privacy retention [--dry-run]``: one
retention pass now (email_rag.privacy.retention). Each prints a ``RunResult``
(core/run_result.py; items are mails): forget is ``partial`` (2) when a store is down (run
it again to finish: the erasure list is its checkpoint), ``verification_failed`` (3) when
the check afterwards still finds the person, ``completed`` (0) otherwise; retention is
``partial`` (2) when a store is down or mails were busy (the next pass finishes them)."""

from __future__ import annotations

from ..core.actors import command_line
from ..core.run_result import EndState, RunResult
from ..privacy import personal_data, retention
from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("privacy", parents=[common],
                       help="what is stored about a person: export or erase it")
    psub = p.add_subparsers(dest="privacy_command", metavar="ACTION", required=True)
    exp = psub.add_parser("export", parents=[common],
                          help="write everything stored about an address to one zip archive")
    exp.add_argument("address", help="the person's e-mail address (matched case-insensitively "
                                     "against from, reply-to, to and cc; never display names)")
    exp.add_argument("--out", required=True, help="the zip file to write")
    exp.add_argument("--by", default="cli:privacy", help="who asks (audited)")
    exp.set_defaults(handler=export)
    register_forget(psub, common)
    register_retention(psub, common)


def export(args, svc) -> Outcome:
    try:
        r = personal_data.export(svc, args.address, args.out, args.by)
    except OSError as e:
        return Outcome(ExitCode.ERROR, f"Could not write {args.out}: {e.strerror or e}. "
                       "Nothing was written.", {"error": type(e).__name__})
    run = RunResult.decide(processed=r.mails, item="mail", what=f"Wrote {r.out}.",
                           safe="Nothing was changed: an export only reads.")
    return Outcome.of(run, f"Wrote {r.out}: {r.mails} mail(s), {r.attachments} "
                      f"attachment(s), {r.drafts} draft(s), {r.send_attempts} send attempt(s), "
                      f"{r.audit_events} audit event(s).", vars(r))


def register_forget(psub, common) -> None:
    f = psub.add_parser("forget", parents=[common],
                        help="erase every mail from or to an address and all derived from it")
    f.add_argument("address", help="the person's e-mail address")
    f.add_argument("--reason", required=True, help="why (kept in the erasure list)")
    f.add_argument("--by", default="cli:privacy", help="who erases (audited)")
    f.add_argument("--dry-run", action="store_true",
                   help="only show what would be deleted, per store")
    f.set_defaults(handler=forget)


def forget(args, svc) -> Outcome:
    r = personal_data.forget(svc, args.address, args.reason, args.by, args.dry_run)
    data = vars(r)
    counts = ", ".join(f"{k} {v}" for k, v in r.plan.items())
    if r.state == "planned":
        return Outcome(ExitCode.OK, f"Would delete: {counts}. Nothing was deleted (--dry-run).",
                       data)
    left = r.plan.get("mails", r.erased + r.busy) - r.erased
    again = "email-rag privacy forget ADDRESS --reason ... (the same command again)"
    if r.state == "partial":
        run = RunResult(EndState.PARTIAL, processed=r.erased,
                        remaining=max(left, r.busy), item="mail", next=again,
                        what=f"Processing interrupted: {r.error}.",
                        safe="State is safe: each batch is erased in every store or not at "
                        "all; the erasure list keeps the request.")
        return Outcome.of(run, f"Partial: {r.erased} mail(s) erased; {r.error}. "
                          "Run the same command again to finish.", data)
    verified = not r.remaining
    run = RunResult.decide(processed=r.erased, verified=verified, item="mail",
                           next=None if verified else "email-rag privacy forget ADDRESS "
                           "--reason ... (again), then check the stores named above",
                           what=f"Erased {r.erased} mail(s) and what was derived from them.",
                           safe="The erasure is audited under the address's hash only.")
    if r.remaining:
        found = ", ".join(f"{k} {v}" for k, v in r.remaining.items())
        return Outcome.of(run, f"Erased {r.erased} mail(s), but the verification still "
                          f"finds: {found}.", data)
    return Outcome.of(run, f"Erased {r.erased} mail(s) ({counts}); the verification finds "
                      "nothing of the person in MariaDB, the vector store or the audit "
                      "details.", data)


def register_retention(psub, common) -> None:
    r = psub.add_parser("retention", parents=[common],
                        help="run one retention pass now: delete the cases of each mailbox "
                             "closed longer ago than its retention_days")
    r.add_argument("--dry-run", action="store_true",
                   help="only count what would be deleted, per mailbox")
    r.add_argument("--by", default=None, help="who runs it (audited; default: your login)")
    r.set_defaults(handler=run_retention)


def run_retention(args, svc) -> Outcome:
    r = retention.run(svc, dry_run=args.dry_run, actor=command_line(args.by))
    data = r.as_dict()
    lines = [f"{m.mailbox} ({m.retention_days} days, closed before {m.closed_before[:19]}): "
             f"{m.mails} mail(s), {m.attachments} attachment(s), {m.drafts} draft(s), "
             f"{m.draft_edits} edit(s), {m.send_attempts} send attempt(s)"
             + (f"; {m.busy} busy, left for a later pass" if m.busy else "")
             + (f"; {m.released} reopened, kept" if m.released else "")
             for m in r.mailboxes]
    listing = "\n".join(lines) if lines else "no mailbox has retention_days set"
    if r.state == "planned":
        return Outcome(ExitCode.OK, "Would delete the above (--dry-run): nothing was deleted.",
                       data, listing)
    erased = sum(m.mails for m in r.mailboxes)
    busy = sum(m.busy for m in r.mailboxes)
    if r.state == "partial":
        run = RunResult(EndState.PARTIAL, processed=erased,
                        remaining=busy, item="mail", next="email-rag privacy retention",
                        what=f"Processing interrupted: {r.error}.",
                        safe="State is safe: nothing is half-deleted.")
        return Outcome.of(run, f"Partial: {r.error}; deleted so far: the above. "
                          "Nothing is half-deleted; the next pass (or this command again) "
                          "finishes it.", data, listing)
    run = RunResult.decide(processed=erased, remaining=busy, item="mail",
                           next="email-rag privacy retention" if busy else None,
                           what="Retention pass done.", safe="State is safe: each case is "
                           "deleted in one batch or kept.")
    return Outcome.of(run, "Retention pass done: deleted the above.", data, listing)
