"""``email-rag privacy export ADDRESS --out FILE.zip``: everything stored about a person,
for an access request; ``email-rag privacy forget ADDRESS --reason TEXT [--dry-run]``:
erase it (email_rag.review.privacy). forget exits 2 (partial) when a store is down: run it
again to finish."""

from __future__ import annotations

from ..review import privacy
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


def export(args, svc) -> Outcome:
    try:
        r = privacy.export(svc, args.address, args.out, args.by)
    except OSError as e:
        return Outcome(ExitCode.ERROR, f"Could not write {args.out}: {e.strerror or e}. "
                       "Nothing was written.", {"error": type(e).__name__})
    return Outcome(ExitCode.OK, f"Wrote {r.out}: {r.mails} mail(s), {r.attachments} "
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
    r = privacy.forget(svc, args.address, args.reason, args.by, args.dry_run)
    data = vars(r)
    counts = ", ".join(f"{k} {v}" for k, v in r.plan.items())
    if r.state == "planned":
        return Outcome(ExitCode.OK, f"Would delete: {counts}. Nothing was deleted (--dry-run).",
                       data)
    if r.state == "partial":
        return Outcome(ExitCode.PARTIAL, f"Partial: {r.erased} mail(s) erased; {r.error}. "
                       "Run the same command again to finish.", data)
    if r.remaining:
        left = ", ".join(f"{k} {v}" for k, v in r.remaining.items())
        return Outcome(ExitCode.VERIFY_FAILED, f"Erased {r.erased} mail(s), but the "
                       f"verification still finds: {left}.", data)
    return Outcome(ExitCode.OK, f"Erased {r.erased} mail(s) ({counts}); the verification "
                   "finds nothing of the person in MariaDB, the vector store or the audit "
                   "details.", data)
