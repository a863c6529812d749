"""Answering tools: saved replies and signatures (admins keep them, staff insert them into
a draft), internal notes on a mail with @mentions, and the mentions list.

The store logic is ``email_rag.review.answers`` / ``email_rag.review.notes``; these views
translate between HTTP and it (POST, redirect, GET; CSRF on every form).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ..core.errors import BadInputError, DraftNotFoundError
from ..mail import placeholders
from ..review import access, answers, edits, notes
from ..sending.rules import OPEN
from .queue_filters import QueueFilters, back_to, with_filters
from .render import page
from .render import tr as _tr
from .security import AdminUser, FormInt, FormStr, StaffUser, flash

router = APIRouter()

def _svc(request: Request):
    return request.app.state.pool.get()


def _refused(request: Request, user, e: Exception) -> str:
    """A refusal of the answering tools' stores, in the user's language (their reasons are
    marked texts without values)."""
    return _tr(request, user, "Nothing was changed: %(why)s",
               why=_tr(request, user, str(e.args[0]) if e.args else str(e)))


def _reply(request: Request, user, svc, reply_id: int) -> answers.SavedReply:
    try:
        return answers.reply(svc, reply_id)
    except DraftNotFoundError as e:
        raise DraftNotFoundError(_tr(request, user, str(e))) from None


# --- admins: saved replies and signatures ---


def _admin_page(request: Request, mailbox_id: int | None) -> str:
    return f"/admin/answers?mailbox={mailbox_id}" if mailbox_id else "/admin/answers"


@router.get("/admin/answers")
def answers_page(request: Request, user: AdminUser, mailbox: int | None = None):
    svc = _svc(request)
    boxes = answers.mailboxes(svc)
    chosen = next((b for b in boxes if b.id == mailbox), boxes[0] if boxes else None)
    sig = answers.signature(svc, chosen.id) if chosen else None
    return page(request, "answers.html", mailboxes=boxes, chosen=chosen,
                replies=answers.replies(svc, chosen.id) if chosen else [],
                signature=sig.body if sig else "", placeholders=placeholders.PLACEHOLDERS)


@router.post("/admin/answers/create")
def create_reply(request: Request, user: AdminUser, mailbox_id: FormInt, title: FormStr = "",
                 body: FormStr = ""):
    try:
        answers.create(_svc(request), mailbox_id, title, body, user.actor)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
    else:
        flash(request, "ok", _tr(request, user, "Saved reply “%(title)s” added.",
                                 title=" ".join(title.split())))
    return RedirectResponse(_admin_page(request, mailbox_id), status_code=303)


@router.post("/admin/answers/{reply_id}/edit")
def edit_reply(request: Request, user: AdminUser, reply_id: int, version: FormInt,
               title: FormStr = "", body: FormStr = ""):
    svc = _svc(request)
    mailbox_id = _reply(request, user, svc, reply_id).mailbox_id
    try:
        answers.update(svc, reply_id, version, title, body, user.actor)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
    else:
        flash(request, "ok", _tr(request, user, "Saved reply “%(title)s” saved.",
                                 title=" ".join(title.split())))
    return RedirectResponse(_admin_page(request, mailbox_id), status_code=303)


@router.post("/admin/answers/{reply_id}/delete")
def delete_reply(request: Request, user: AdminUser, reply_id: int):
    svc = _svc(request)
    gone = _reply(request, user, svc, reply_id)
    answers.delete(svc, reply_id, user.actor)
    flash(request, "ok", _tr(request, user, "Saved reply “%(title)s” deleted.", title=gone.title))
    return RedirectResponse(_admin_page(request, gone.mailbox_id), status_code=303)


@router.post("/admin/answers/signature")
def set_signature(request: Request, user: AdminUser, mailbox_id: FormInt, body: FormStr = ""):
    try:
        changed = answers.set_signature(_svc(request), mailbox_id, body, user.actor)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
    else:
        flash(request, "ok" if changed else "info",
              _tr(request, user, "Signature saved.") if changed
              else _tr(request, user, "The signature was already like this; nothing changed."))
    return RedirectResponse(_admin_page(request, mailbox_id), status_code=303)


# --- staff: insert into a draft (the page's script does it in place; this is the same
# without the script: the text is appended and kept as the agent's edit) ---


@router.post("/drafts/{draft_id}/insert")
def insert(request: Request, user: StaffUser, draft_id: int, query: QueueFilters,
           body: FormStr = "", saved_reply: FormStr = "", signature: FormStr = ""):
    svc = _svc(request)
    access.require_draft(svc, user.mailbox_ids, draft_id)
    mailbox_id = access.draft_mailbox(svc, draft_id) or 0
    state = edits.draft_state(svc, draft_id)
    if state is None or state.status not in OPEN:
        flash(request, "error", _tr(request, user, "This draft is not waiting for review any "
                                    "more; nothing was inserted."))
        return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)
    email_id = state.email_id
    values = answers.fill_values(svc, email_id, user.name)
    if signature:
        sig = answers.signature(svc, mailbox_id)
        if sig is None:
            raise DraftNotFoundError(_tr(request, user, "This mailbox has no signature."))
        rendered = placeholders.render(sig.body, values)
    else:
        chosen = (_reply(request, user, svc, int(saved_reply)) if saved_reply.isdigit()
                  else None)
        if chosen is None or chosen.mailbox_id != mailbox_id:
            raise DraftNotFoundError(_tr(request, user, "This saved reply does not exist "
                                         "(any more)."))
        rendered = placeholders.render(chosen.body, values)
    text = body.replace("\r\n", "\n").rstrip()
    edits.save_edit(svc, draft_id, user.id, (text + "\n\n" if text else "") + rendered.text,
                   user.actor)
    said = _tr(request, user, "Inserted at the end of your text.")
    if rendered.missing:
        said += " " + _tr(request, user, "Fill in what is still in braces before you "
                          "approve: %(names)s.",
                          names=", ".join("{" + m + "}" for m in rendered.missing))
    flash(request, "warn" if rendered.missing else "ok", said)
    return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)


# --- notes and mentions ---


@router.post("/mails/{email_id}/notes")
def add_note(request: Request, user: StaffUser, email_id: int, body: FormStr = "",
             back: FormStr = ""):
    svc = _svc(request)
    access.require_mail(svc, user.mailbox_ids, email_id)
    target = back_to(back, email_id) + "#notes"
    mailbox_id = access.mail_mailbox(svc, email_id) or 0
    try:
        added = notes.add(svc, email_id, mailbox_id, user.id, user.name, body)
    except BadInputError as e:
        flash(request, "error", _refused(request, user, e))
        return RedirectResponse(target, status_code=303)
    said = _tr(request, user, "Note added (internal: never sent to the customer).")
    if added.mentioned:
        said += " " + _tr(request, user, "Notified: %(names)s.",
                          names=", ".join(added.mentioned))
    if added.not_notified:
        said += " " + _tr(request, user, "Not notified (no user of this mailbox): %(names)s.",
                          names=", ".join("@" + n for n in added.not_notified))
    flash(request, "warn" if added.not_notified else "ok", said)
    return RedirectResponse(target, status_code=303)


@router.get("/mentions")
def mentions(request: Request, user: StaffUser):
    return page(request, "mentions.html",
                rows=notes.of_user(_svc(request), user.id, user.mailbox_ids))
