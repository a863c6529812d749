"""Admin pages: failure console, per-mail timeline, audit log search, the mailbox check.

Retry and resolve call ``console`` (which uses ``JobStore.retry/resolve``) and
``sending.admin.resolve_unknown``; every action is audited with the admin's name.
The messages after an action are in the admin's language (``_tr``); the reason a
domain function gives for a refusal (``TransitionRefused``, ...) is shown as it is,
in English, inside the translated message.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse

from ..core.errors import BadInputError, PermanentError
from ..ops.mailbox_check import check_mailboxes
from ..review import console, timeline
from ..sending import admin as send_admin
from ..sending.outcome import N_
from .render import page, page_zone
from .render import tr as _tr
from .security import AdminUser, FormInt, FormStr, flash

router = APIRouter(prefix="/admin")


def _svc(request: Request):
    return request.app.state.pool.get()


def _back(kind: str) -> str:
    return f"/admin/failures?kind={kind}" if kind in console.KINDS else "/admin/failures"


@router.get("/failures")
def failures(request: Request, user: AdminUser, kind: str = ""):
    items = console.attention_items(_svc(request))
    counts = console.counts_by_kind(items)
    shown = [i for i in items if kind in i.kinds] if kind in console.KINDS else items
    return page(request, "failures.html", items=shown, counts=counts, total=len(items),
                kind=kind if kind in console.KINDS else "", kinds=console.KINDS)


@router.post("/failures/retry")
def retry(request: Request, user: AdminUser,
          job_id: Annotated[list[int] | None, Form()] = None, note: FormStr = "",
          kind: FormStr = ""):
    if not job_id:
        flash(request, "warn", _tr(request, user, "Select at least one entry to retry."))
        return RedirectResponse(_back(kind), status_code=303)
    r = console.retry_jobs(_svc(request), job_id, user.actor, note)
    if r.retried:
        text = _tr(request, user, "Queued again: %(ids)s. Each resumes at its first unconfirmed "
                   "step.", ids=_ids(r.retried))
        if not r.enqueued:
            text += " " + _tr(request, user, "The queue (Redis) is unreachable: they start when "
                              "re-dispatch runs.")
        flash(request, "ok", text)
    if r.to_review:
        flash(request, "ok", _tr(request, user, "Back to review: %(ids)s. The relay refused the "
                                 "reply; the draft waits for staff again with the refusal shown.",
                                 ids=_ids(r.to_review)))
    for refused_id, why in r.refused.items():
        flash(request, "error", _tr(request, user, "Not retried: #%(id)s: %(why)s. Nothing "
                                    "changed for it.", id=refused_id, why=why))
    return RedirectResponse(_back(kind), status_code=303)


@router.post("/failures/resolve")
def resolve(request: Request, user: AdminUser, email_id: FormInt, note: FormStr = "",
            kind: FormStr = ""):
    try:
        r = console.resolve_mail(_svc(request), email_id, user.actor, note)
    except (BadInputError, PermanentError) as e:
        flash(request, "error", _tr(request, user, "Mail #%(id)s not resolved: %(why)s",
                                    id=email_id, why=e))
        return RedirectResponse(_back(kind), status_code=303)
    flash(request, "ok", _tr(request, user, "Mail #%(id)s resolved by hand with your note "
                             "(status %(status)s); audited.", id=email_id,
                             status=r["mail_status"]),
          f"/admin/mails/{email_id}", _tr(request, user, "Timeline"))
    return RedirectResponse(_back(kind), status_code=303)


DECIDED = {  # what the flash says a send decision did (email_rag/sending/rules.py DECISIONS)
    "mark_sent": N_("Send attempt #%(id)s marked sent by you, not verified; nothing is sent "
                    "again (now %(status)s); audited."),
    "resend": N_("Send attempt #%(id)s queued to be sent once more (same Message-ID) (now "
                 "%(status)s); audited."),
    "give_up": N_("Send attempt #%(id)s given up: nothing is sent; the mail is resolved with "
                  "your note (now %(status)s); audited."),
}


@router.post("/sends/{attempt_id}/decide")
def decide_send(request: Request, user: AdminUser, attempt_id: int, decision: FormStr,
                note: FormStr = "", kind: FormStr = "", despite_evidence: FormStr = ""):
    if not note.strip():
        flash(request, "error", _tr(request, user, "Send attempt #%(id)s: say how you know (a "
                                    "note is required). Nothing changed.", id=attempt_id))
        return RedirectResponse(_back(kind), status_code=303)
    try:
        new = send_admin.resolve_unknown(_svc(request), attempt_id, user.actor, decision, note,
                                         despite_evidence=bool(despite_evidence))
    except PermanentError as e:  # TransitionRefused included: says which move and why
        flash(request, "error", _tr(request, user, "Send attempt #%(id)s not changed: %(why)s",
                                    id=attempt_id, why=e))
        return RedirectResponse(_back(kind), status_code=303)
    flash(request, "ok", _tr(request, user, DECIDED[decision], id=attempt_id, status=new))
    return RedirectResponse(_back(kind), status_code=303)


@router.get("/mailboxes/check")
def mailbox_check(request: Request, user: AdminUser):
    """``email-rag mailboxes check`` for every configured mailbox, on demand (it connects to
    the servers with the real settings: seconds, not a page to load on every visit)."""
    svc = _svc(request)
    reports = check_mailboxes(svc, [mb.name for mb in svc.mailboxes.active(fresh=True)])
    return page(request, "mailbox_check.html", reports=reports)


@router.get("/mails/{email_id}")
def mail_timeline(request: Request, user: AdminUser, email_id: int):
    svc = _svc(request)
    try:
        data = timeline.mail_timeline(svc, email_id)
    except PermanentError:
        events = timeline.deleted_mail_events(svc, email_id)
        if not events:
            raise
        return page(request, "mail_deleted.html", email_id=email_id, events=events)
    return page(request, "timeline.html", **vars(data))


@router.get("/audit")
def audit(request: Request, user: AdminUser, entity_type: str = "", entity_id: str = "",
          event: str = "", actor: str = "", since: str = "", until: str = "", limit: int = 200):
    svc = _svc(request)
    error, rows = None, []
    try:
        rows = timeline.search_audit(svc, entity_type, entity_id.strip(), event.strip(),
                                     actor.strip(), since, until, limit, page_zone(request))
    except BadInputError as e:
        error = str(e)
    return page(request, "audit.html", rows=rows, error=error, event_names=timeline.event_names(svc),
                entity_types=timeline.ENTITY_TYPES,
                f={"entity_type": entity_type, "entity_id": entity_id, "event": event,
                   "actor": actor, "since": since, "until": until, "limit": limit})


def _ids(ids: list[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)
