"""Work on a case beyond approve and reject: put it aside until a date (pending/snooze),
reopen a closed one, forward it to an address.

The domain functions are ``email_rag.review.snooze``, ``email_rag.review.reopen`` and
``email_rag.sending.forward``; every route checks the mail's mailbox first
(``desk.require_mail``: another mailbox's mail is "not found"), answers with a redirect and
says what happened (POST, redirect, GET; CSRF on every form).
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse

from ..core.errors import BadInputError, StateRefused
from ..core.states import MAIL_REOPENABLE, Actor
from ..db import sql
from ..review import assignment, bulk, desk, reopen, saved_views, snooze
from ..sending import forward
from ..sending.outcome import N_
from .labels import label
from .queue_filters import back_to, queue_of
from .render import tr as _tr
from .render import user_zone
from .security import FormStr, StaffUser, flash

if TYPE_CHECKING:
    from ..wiring.services import Services

router = APIRouter()

def _svc(request: Request):
    return request.app.state.pool.get()


def context(svc: Services, email_id: int, status: str,
            status_reason: str | None = None) -> dict[str, Any]:
    """What the mail and draft pages show of a case's pending date, reopen and forwards."""
    return {"snoozed": snooze.current(svc, email_id),
            "reopened": reopen.reopened_reason(status_reason),
            "snoozable": status in snooze.SNOOZABLE,
            "reopenable": status in MAIL_REOPENABLE,
            "forwards": forward.of_mail(svc, email_id)}


def wake(svc: Services) -> None:
    """End the snoozes whose date has passed (their drafts are back in the queue already;
    this writes each one's audit event), as the queue is read."""
    snooze.wake_due(svc, Actor.WEB)


@router.post("/mails/{email_id}/snooze")
def snooze_mail(request: Request, user: StaffUser, email_id: int, until: FormStr = "",
                back: FormStr = ""):
    svc = _svc(request)
    desk.require_mail(svc, user.mailbox_ids, email_id)
    zone = user_zone(user, request.app.state.settings.web_time_zone)
    try:
        when = snooze.parse_until(until, zone)
        snooze.snooze(svc, email_id, when, user.actor)
    except (BadInputError, StateRefused) as e:
        flash(request, "error", _tr(request, user, "Mail #%(id)s was not put aside: %(why)s",
                                    id=email_id, why=e))
        return RedirectResponse(back_to(back, email_id), status_code=303)
    shown = when.replace(tzinfo=UTC).astimezone(zone).strftime("%Y-%m-%d %H:%M")
    flash(request, "ok", _tr(request, user, "Mail #%(id)s is put aside until %(at)s; it "
                             "comes back to the queue then (the Snoozed view lists it).",
                             id=email_id, at=shown), f"/mails/{email_id}",
          _tr(request, user, "View it"))
    target = back_to(back, email_id)  # a draft put aside leaves the queue: back to the queue
    return RedirectResponse(queue_of(target) if target.startswith("/drafts/") else target,
                            status_code=303)


@router.post("/mails/{email_id}/unsnooze")
def unsnooze_mail(request: Request, user: StaffUser, email_id: int, back: FormStr = ""):
    svc = _svc(request)
    desk.require_mail(svc, user.mailbox_ids, email_id)
    if snooze.unsnooze(svc, email_id, user.actor):
        flash(request, "ok", _tr(request, user, "Mail #%(id)s is back in the queue.",
                                 id=email_id))
    else:
        flash(request, "info", _tr(request, user, "Mail #%(id)s was not put aside; nothing "
                                   "changed.", id=email_id))
    return RedirectResponse(back_to(back, email_id), status_code=303)


@router.post("/mails/{email_id}/reopen")
def reopen_mail(request: Request, user: StaffUser, email_id: int, reason: FormStr = ""):
    svc = _svc(request)
    desk.require_mail(svc, user.mailbox_ids, email_id)
    try:
        was = reopen.reopen(svc, email_id, user.actor, reason)
    except (BadInputError, StateRefused) as e:
        flash(request, "error", _tr(request, user, "Mail #%(id)s was not reopened: %(why)s",
                                    id=email_id, why=e))
    else:
        flash(request, "ok", _tr(request, user, "Mail #%(id)s is reopened (it was %(was)s): "
                                 "it is kept for a human now. Write the reply below, or put "
                                 "it aside.", id=email_id, was=_tr(request, user, label(was))))
    return RedirectResponse(f"/mails/{email_id}", status_code=303)


@router.post("/mails/{email_id}/forward")
def forward_mail(request: Request, user: StaffUser, email_id: int, to: FormStr = "",
                 note: FormStr = "", back: FormStr = ""):
    svc = _svc(request)
    desk.require_mail(svc, user.mailbox_ids, email_id)
    target = back_to(back, email_id)
    try:
        done = forward.forward(svc, email_id, user.actor, to, note)
    except BadInputError as e:
        flash(request, "error", _tr(request, user, "Mail #%(id)s was not forwarded: %(why)s",
                                    id=email_id, why=e))
        return RedirectResponse(target + "#forward", status_code=303)
    if done.action == "already_forwarded":
        flash(request, "warn", _tr(request, user, "Mail #%(id)s was forwarded to %(to)s "
                                   "already; nothing more is sent.", id=email_id, to=done.recipient))
    else:
        flash(request, "ok", _tr(request, user, "Mail #%(id)s is forwarded to %(to)s: queued "
                                 "to send, not sent yet. The mail page shows when the relay "
                                 "has accepted it.", id=email_id, to=done.recipient))
    return RedirectResponse(target + "#forward", status_code=303)


# --- bulk actions on the queue (review/bulk.py) ---

BULK_DONE = {"assign": N_("Assigned: %(ids)s."), "reject": N_("Rejected: %(ids)s."),
             "no_reply": N_("Closed without a reply: %(ids)s.")}


def bulk_colleagues(svc: Services, scope: frozenset[int] | None) -> list[str]:
    """Everyone who may own a mail of one of the user's mailboxes (the bulk form's list)."""
    ids = [int(r["id"]) for r in svc.db.fetchall(sql("desk_mailboxes"))
           if scope is None or int(r["id"]) in scope]
    return sorted({c.name for i in ids for c in assignment.colleagues(svc, i)})


@router.post("/queue/bulk")
def bulk_action(request: Request, user: StaffUser, action: FormStr = "", to: FormStr = "",
                reason: FormStr = "", ids: Annotated[list[int] | None, Form()] = None,
                back: FormStr = ""):
    """One action on the selected drafts; what happened to each is said (done, unchanged,
    refused with its reason): a refused one never hides the others."""
    svc = _svc(request)
    target = back if back.startswith("/queue") and "\n" not in back else "/queue"
    try:
        outcomes = bulk.run(svc, user.mailbox_ids, user.actor, action, ids or [], to, reason)
    except BadInputError as e:
        flash(request, "error", _tr(request, user, "Nothing was done: %(why)s", why=e))
        return RedirectResponse(target, status_code=303)
    done = [o.draft_id for o in outcomes if o.result == "done"]
    same = [o.draft_id for o in outcomes if o.result == "unchanged"]
    refused = [o for o in outcomes if o.result == "refused"]
    if done:
        flash(request, "ok", _tr(request, user, BULK_DONE[action], ids=_ids(done)))
    if same:
        flash(request, "info", _tr(request, user, "Already so, nothing changed: %(ids)s.",
                                   ids=_ids(same)))
    if refused:
        flash(request, "error", _tr(request, user, "Not done: %(items)s.", items="; ".join(
            f"#{o.draft_id}: {o.why[:160]}" for o in refused[:20])
            + ("; …" if len(refused) > 20 else "")))
    return RedirectResponse(target, status_code=303)


def _ids(ids: list[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


# --- saved views of the queue (review/saved_views.py) ---


@router.post("/queue/views")
def save_view(request: Request, user: StaffUser, name: FormStr = "", query: FormStr = ""):
    try:
        kept = saved_views.save(_svc(request), user.id, name, query)
    except BadInputError as e:
        flash(request, "error", _tr(request, user, "The view was not saved: %(why)s", why=e))
        return RedirectResponse("/queue" + (f"?{saved_views.clean_query(dict(parse_qsl(query)))}"
                                            if query else ""), status_code=303)
    flash(request, "ok", _tr(request, user, "View “%(name)s” saved.", name=kept.name))
    return RedirectResponse(kept.href, status_code=303)


@router.post("/queue/views/{view_id}/delete")
def delete_view(request: Request, user: StaffUser, view_id: int):
    if saved_views.delete(_svc(request), user.id, view_id):
        flash(request, "ok", _tr(request, user, "View deleted."))
    else:
        flash(request, "info", _tr(request, user, "That view does not exist (any more); "
                                   "nothing changed."))
    return RedirectResponse("/queue", status_code=303)
