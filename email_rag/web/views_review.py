"""Review queue and draft page (staff and admins).

Approve, reject and regenerate call ``sending.review`` / ``sending.regenerate``
(the CLI's functions). Approval is exactly-once in the domain (row lock); a
double click or a second tab gets "already approved" and the same single send.
Each action answers with a redirect (POST, redirect, GET).
"""

from __future__ import annotations

import re
import threading
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

import anyio
import anyio.to_thread
from babel.numbers import format_decimal
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from ..classification.history_model import source_parts
from ..core.errors import (
    DRAFT_MISSING,
    BadInputError,
    DraftConflictError,
    DraftNotFoundError,
    StateRefused,
)
from ..core.records import Draft
from ..core.states import DraftStatus
from ..db import examples
from ..mail import placeholders
from ..review import answers, assignment, desk, no_reply, notes, saved_views
from ..review.console import review_filters
from ..review.desk import QueueQuery
from ..sending import handwrite, review
from ..sending import regenerate as regen
from ..sending.outcome import local_text, send_outcome
from ..sending.review import seen_token
from ..sending.rules import OPEN, REFUSALS, reply_choice
from . import views_casework
from .labels import LABELS
from .queue_filters import QueueFilters, with_filters
from .render import language, page, tr_known, user_zone
from .render import tr as _tr
from .security import FormStr, StaffUser, flash

if TYPE_CHECKING:
    from ..wiring.services import Services

router = APIRouter()


def _svc(request: Request):
    return request.app.state.pool.get()


def _outcome(request: Request, user, svc, draft_id: int) -> str:
    attempt = svc.stores.rows_of(svc.db).send_of_draft(draft_id)
    zone = _zone(request, user)
    message, values = send_outcome(attempt, at=lambda v: local_text(v, zone))
    return _tr(request, user, message, **values)


def _happened(request: Request, user, draft: Draft) -> str:
    message, values = desk.what_happened(draft, _zone(request, user))
    return _tr(request, user, message, **values)


def _back_to_draft(request: Request, draft_id: int, level: str, text: str,
                   query: QueueQuery) -> RedirectResponse:
    """Say what happened (nothing changed) and show the draft again, in the same filtered
    queue (POST-redirect-GET)."""
    flash(request, level, text)
    return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)


def _refresh(request: Request) -> float:
    """How often the page fetches itself to update its lists and counts (0: never)."""
    return float(request.app.state.settings.web_refresh_seconds)


def _next_url(svc, user, query: QueueQuery, draft_id: int) -> str:
    """The draft after this one in the same filtered, sorted queue (computed before the
    action, while this draft still has its place), else the queue."""
    nxt = desk.position(svc, user.mailbox_ids, query, draft_id).next_id
    return with_filters(f"/drafts/{nxt}" if nxt and nxt != draft_id else "/queue", query)


@router.get("/queue")
def queue(request: Request, user: StaffUser, query: QueueFilters, after: str = "",
          before: str = ""):
    svc = _svc(request)
    views_casework.wake(svc)
    pg = desk.queue_page(svc, user.mailbox_ids, query, after or None, before or None)
    filters = review_filters(svc)
    filters["mailboxes"] = desk.visible_mailboxes(svc, user.mailbox_ids)
    params = query.url_params()
    open_by = assignment.open_elsewhere(svc, [r.id for r in pg.rows], user.id)
    return page(request, "queue.html", rows=pg.rows, total=pg.total, first=pg.first_position,
                capped=pg.capped,
                open_by=open_by,
                next_cursor=pg.next_cursor, prev_cursor=pg.prev_cursor, filters=filters,
                mailbox=query.mailbox, category=query.category, q=query.search, sort=query.sort,
                state=query.state, owner=query.owner, since=query.since, until=query.until,
                states=desk.STATES[1:],
                view=query.view, view_param=query.url_params().get("view", ""),
                view_on={v: v == query.view for v in assignment.VIEWS}, view_links={
                    v: with_filters("/queue", replace(query, view=v)) for v in assignment.VIEWS},
                sorts=desk.SORTS, query=urlencode(params),
                search_ignored=bool(query.search) and desk.fulltext_query(query.search) is None,
                bulk_to=views_casework.bulk_colleagues(svc, user.mailbox_ids),
                saved_views=saved_views.of_user(svc, user.id),
                back="/queue" + (f"?{urlencode(params)}" if params else ""),
                level=desk.waiting_level, due_in=desk.due_in, refresh=_refresh(request))


@router.get("/drafts/{draft_id}")
def draft_page(request: Request, user: StaffUser, draft_id: int, query: QueueFilters):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    shown = review.show(svc, draft_id)
    draft = shown.draft
    actionable = draft.status in OPEN
    where = desk.position(svc, user.mailbox_ids, query, draft_id)
    mine = desk.own_edit(svc, draft_id, user.id)
    original = draft.body
    if mine is not None and mine.body == original:
        mine = None
    # who else has it open is read before this agent's own presence is written
    present = assignment.others_here(svc, draft_id, user.id)
    # the page's own refresh (app.js) shows it as it is now: no new opening that would take
    # back a mail given away or unassigned meanwhile; the agent is still here
    refreshing = request.headers.get("x-refresh") == "1"
    if actionable and not refreshing:
        owner = assignment.claim(svc, draft.email_id, user.id, user.actor)
    else:
        owner = assignment.owner(svc, draft.email_id)
    if actionable:
        assignment.here(svc, draft_id, user.id, user.actor)
    mail = shown.mail
    if not refreshing:
        notes.opened(svc, draft.email_id, user.id)
    mailbox_id = shown.reply_mail.mailbox_id
    saved, signature = answers.for_mail(svc, mailbox_id, draft.email_id, user.name)
    return page(request, "draft.html", d=draft, seen=seen_token(draft), my_edit=mine,
                saved_replies=saved, signature=signature,
                notes=notes.of_mail(svc, draft.email_id),
                note_back=with_filters(f"/drafts/{draft_id}", query),
                conversation=desk.conversation(svc, shown.reply_mail),
                history=desk.sender_history(svc, shown.reply_mail),
                text=mine.body if mine and actionable else original, original=original,
                editing=desk.others_editing(svc, draft_id, user.id), present=present,
                owner=owner, colleagues=assignment.colleagues(svc, mailbox_id),
                choices=desk.classification_choices(), mail=mail, thread=shown.thread,
                sources=desk.source_cards(shown.sources), send=shown.send_attempt,
                written=desk.written(shown.basis, shown.trace, shown.sources),
                reply=shown.reply, attachments=shown.attachments,
                newer=shown.newer_inbound, actionable=actionable,
                carry=query.url_params(), query=urlencode(query.url_params()),
                position=where.position, total=where.total, capped=where.capped,
                listed=where.listed, next_id=where.next_id,
                prev_id=where.prev_id, age_s=where.age_s, level=desk.waiting_level,
                due_at=where.due_at, due_s=desk.due_in(where.due_at), refresh=_refresh(request),
                decision=decision_line(request, user, svc, draft.email_id),
                **views_casework.context(svc, draft.email_id, shown.reply_mail.status))


@router.post("/drafts/{draft_id}/assign")
def assign(request: Request, user: StaffUser, draft_id: int, query: QueueFilters,
           to: FormStr = ""):
    """Give the draft's mail to a colleague (``to``: a user name), take it, or unassign it
    (``to`` empty); audited under this user."""
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    state = desk.draft_state(svc, draft_id)
    if state is None:
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
    try:
        before, after = assignment.assign(svc, state.email_id,
                                          desk.draft_mailbox(svc, draft_id) or 0,
                                          to.strip() or None, user.actor)
    except BadInputError as e:
        flash(request, "error", _tr(request, user, "Not assigned: %(why)s", why=e))
    else:
        if before == after:
            flash(request, "info", _tr(request, user, "Nothing changed: the mail was already "
                                       "assigned like this."))
        elif after:
            flash(request, "ok", _tr(request, user, "Mail #%(id)s is now assigned to "
                                     "%(who)s.", id=state.email_id, who=after))
        else:  # back to the queue: opening the draft again would take it
            flash(request, "ok", _tr(request, user, "Mail #%(id)s is unassigned now.",
                                     id=state.email_id))
            return RedirectResponse(with_filters("/queue", query), status_code=303)
    return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)


def decision_line(request: Request, user, svc: Services, email_id: int) -> str | None:
    """Where each classification field came from, in the user's language (the field's name,
    the category or priority by its label)."""
    labels = examples.mail_labels(svc.db, email_id)
    parts = source_parts(labels, labels.get("classification_sources"))
    return " · ".join(_tr(request, user, wording, **{
        **values, "field": _tr(request, user, values["field"]),
        "value": _tr(request, user, LABELS.get(values["value"], values["value"]))})
        for wording, values in parts) or None


# Attachments this process reads whole out of their stored mail at once (those the piece
# reader does not follow, email_rag/mail/parts.py): each needs the raw mail, its parse and
# the decoded file in memory; the others wait for a slot. Streamed ones need no slot.
WHOLE_SLOTS = threading.BoundedSemaphore(2)


@router.get("/drafts/{draft_id}/attachments/{n}")
async def attachment(request: Request, user: StaffUser, draft_id: int, n: int):
    """A download, never shown inline: a generic type, ``Content-Disposition: attachment``
    and ``nosniff`` - the browser saves the file and renders none of it (mail content is
    untrusted). Read from MariaDB in pieces and checked against the recorded SHA-256
    before the first byte is sent, then sent piece by piece (``review.download``)."""

    def load() -> review.Download:
        desk.require_draft(_svc(request), user.mailbox_ids, draft_id)
        return review.download(lambda: _svc(request), draft_id, n, user.name, WHOLE_SLOTS)

    got = await anyio.to_thread.run_sync(load)
    return StreamingResponse(got.pieces(), media_type="application/octet-stream", headers={
        "Content-Disposition": content_disposition(got.info.filename or "attachment"),
        "Content-Length": str(got.size), "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store"})


def content_disposition(filename: str) -> str:
    """``attachment`` with an ASCII fallback name and the UTF-8 name (RFC 6266 / 5987)."""
    name = re.sub(r'[\x00-\x1f\x7f"\\/]', "_", filename).strip() or "attachment"
    ascii_name = name.encode("ascii", "replace").decode().replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


def _conflict(request: Request, svc, user, e: DraftConflictError, draft_id: int,
              text: str | None, query: QueueQuery) -> RedirectResponse:
    """Another agent (or the system) changed the draft first: say what they did, keep this
    agent's text (saved as their edit, shown on the draft page), change nothing. When the
    change was this agent's own approval (a second click), say that it went out once."""
    if e.draft.status in (DraftStatus.APPROVED, DraftStatus.SENT) \
            and e.draft.approved_by == user.actor:
        _, values = desk.what_happened(e.draft, _zone(request, user))
        flash(request, "warn", _tr(request, user, "You approved draft #%(id)s already at "
                                   "%(at)s. Nothing changed: there is one send attempt only.",
                                   id=draft_id, at=values["at"]) + " " + _tr(
            request, user, "Reply: %(outcome)s.", outcome=_outcome(request, user, svc, draft_id)))
        return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)
    if text is not None:
        desk.save_edit(svc, draft_id, user.id, text, user.actor)
    kept = (" " + _tr(request, user, "Your text is kept on this page; nothing of yours was "
                      "sent.")) if text else ""
    flash(request, "error", _tr(request, user, "Draft #%(id)s changed while you were working "
                                "on it: %(what)s. Nothing was changed by you.", id=draft_id,
                                what=_happened(request, user, e.draft)) + kept)
    return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)


@router.post("/drafts/{draft_id}/approve")
def approve(request: Request, user: StaffUser, draft_id: int, body: FormStr,
            query: QueueFilters, seen: FormStr = ""):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    next_url = _next_url(svc, user, query, draft_id)
    edited = body.replace("\r\n", "\n")  # browsers send CRLF from a textarea
    left_open = placeholders.unfilled(edited)
    if left_open:  # a saved reply's placeholder nobody filled in never goes out
        desk.save_edit(svc, draft_id, user.id, edited, user.actor)
        return _back_to_draft(request, draft_id, "error", _tr(
            request, user, "Draft #%(id)s was not approved: fill in %(names)s first (a "
            "placeholder of a saved reply that had no value).", id=draft_id,
            names=", ".join(left_open)), query)
    try:
        r = review.approve(svc, draft_id, user.name, edited, seen or None)
    except DraftConflictError as e:
        return _conflict(request, svc, user, e, draft_id, edited, query)
    except (StateRefused, BadInputError) as e:
        desk.save_edit(svc, draft_id, user.id, edited, user.actor)
        return _back_to_draft(request, draft_id, "error", _tr(
            request, user, "Draft #%(id)s was not approved: %(why)s", id=draft_id,
            why=tr_known(request, str(e), REFUSALS)), query)
    # what is said about the sending is read from the attempt's state (never "sent" before
    # the relay answered): email_rag/sending/outcome.py
    reply = _tr(request, user, "Reply: %(outcome)s.", outcome=_outcome(request, user, svc,
                                                                       draft_id))
    if r.action == "already_approved":
        return _back_to_draft(request, draft_id, "warn", _tr(
            request, user, "Draft #%(id)s was already approved by %(who)s. Nothing changed: "
            "there is one send attempt only.", id=draft_id,
            who=r.detail.get("approved_by") or "?") + " " + reply, query)
    desk.discard_edit(svc, draft_id, user.id, user.actor)
    assignment.left(svc, draft_id, user.id, user.actor)
    done = (_tr(request, user, "Draft #%(id)s approved with your edits.", id=draft_id)
            if r.detail.get("edited") else _tr(request, user, "Draft #%(id)s approved.",
                                               id=draft_id))
    flash(request, "ok", done + " " + reply + " " + _tr(
        request, user, "Its page shows when the relay has accepted it."),
          f"/drafts/{draft_id}", _tr(request, user, "View it"))
    return RedirectResponse(next_url, status_code=303)


@router.post("/drafts/{draft_id}/reject")
def reject(request: Request, user: StaffUser, draft_id: int, query: QueueFilters,
           reason: FormStr = "", seen: FormStr = ""):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    next_url = _next_url(svc, user, query, draft_id)
    try:
        r = review.reject(svc, draft_id, user.name, reason, seen or None)
    except DraftConflictError as e:
        return _conflict(request, svc, user, e, draft_id, None, query)
    except (StateRefused, BadInputError) as e:
        return _back_to_draft(request, draft_id, "error", _tr(
            request, user, "Draft #%(id)s was not rejected: %(why)s", id=draft_id,
            why=tr_known(request, str(e), REFUSALS)),
            query)
    if r.action == "already_rejected":
        return _back_to_draft(request, draft_id, "warn", _tr(
            request, user, "Draft #%(id)s was already rejected. Nothing changed.",
            id=draft_id), query)
    desk.discard_edit(svc, draft_id, user.id, user.actor)
    assignment.left(svc, draft_id, user.id, user.actor)
    flash(request, "ok", _tr(request, user, "Draft #%(id)s rejected; the mail is closed "
                             "without a reply.", id=draft_id),
          f"/drafts/{draft_id}", _tr(request, user, "View it"))
    return RedirectResponse(next_url, status_code=303)


@router.post("/drafts/{draft_id}/autosave")
def autosave(request: Request, user: StaffUser, draft_id: int, body: FormStr) -> JSONResponse:
    """The agent's text, saved as they type (JSON for the page's script): who else is
    editing, and whether the draft changed under them."""
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    text = body.replace("\r\n", "\n")
    if len(text) > desk.MAX_EDIT_CHARS:  # never store a cut text as if it were the agent's
        lang = language(request, user)
        return JSONResponse({"saved": False, "error": _tr(
            request, user, "Not saved: the text has %(chars)s characters, more than the "
            "%(max)s a reply may have. Shorten it; your text is only in this page.",
            chars=format_decimal(len(text), locale=lang),
            max=format_decimal(desk.MAX_EDIT_CHARS, locale=lang))})
    desk.save_edit(svc, draft_id, user.id, text, user.actor)
    assignment.here(svc, draft_id, user.id, user.actor)
    state = desk.draft_state(svc, draft_id)
    changed = state is not None and state.status not in (DraftStatus.PENDING_REVIEW,
                                                         DraftStatus.STALE)
    return JSONResponse({
        "saved": True,
        "editing": [o.name for o in desk.others_editing(svc, draft_id, user.id)],
        "changed": _happened(request, user, state) if changed else None})


def _zone(request: Request, user):
    return user_zone(user, request.app.state.settings.web_time_zone)


@router.post("/drafts/{draft_id}/classification")
def correct_classification(request: Request, user: StaffUser, draft_id: int,
                           category_new: FormStr, language_new: FormStr, priority_new: FormStr,
                           query: QueueFilters):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    changes = desk.correct_classification(svc, draft_id, user.actor, category_new,
                                          language_new, priority_new)
    if changes:
        said = ", ".join(f"{k} {old or '–'} → {new}" for k, (old, new) in changes.items())
        flash(request, "ok", _tr(request, user, "Classification corrected (%(changes)s); "
                                 "audited. Regenerate to get a draft that follows it.",
                                 changes=said))
    else:
        flash(request, "info", _tr(request, user, "The classification was already like this; "
                                   "nothing changed."))
    return RedirectResponse(with_filters(f"/drafts/{draft_id}", query), status_code=303)


@router.post("/drafts/{draft_id}/regenerate")
def regenerate(request: Request, user: StaffUser, draft_id: int, query: QueueFilters,
               note: FormStr = ""):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    next_url = _next_url(svc, user, query, draft_id)
    try:
        r = regen.regenerate(svc, draft_id, user.name, note)
    except (StateRefused, BadInputError) as e:
        return _back_to_draft(request, draft_id, "error", _tr(
            request, user, "Draft #%(id)s was not regenerated: %(why)s", id=draft_id,
            why=tr_known(request, str(e), REFUSALS)),
            query)
    if r.action == "already_superseded":
        flash(request, "warn", _tr(request, user, "Draft #%(id)s was already replaced; a new "
                                   "draft for this mail is on its way or in the queue.",
                                   id=draft_id))
    else:
        text = _tr(request, user, "A new draft for mail #%(id)s is being written. It appears "
                   "in the queue when it is ready.", id=r.email_id)
        if not r.enqueued:
            text += " " + _tr(request, user, "The queue is unreachable right now; the work "
                              "starts once it is back.")
        flash(request, "ok", text)
    return RedirectResponse(next_url, status_code=303)


@router.get("/no-reply")
def no_reply_list(request: Request, user: StaffUser):
    return page(request, "no_reply.html",
                rows=no_reply.list_suggested(_svc(request), scope=user.mailbox_ids))


@router.get("/mails/{email_id}")
def mail_page(request: Request, user: StaffUser, email_id: int):
    """One mail to read (the no-reply list's subjects link here): what staff are asked to
    decide on, for any user who may see its mailbox; the timeline stays the admins'. A mail
    a reply may still go to has a form to write the reply by hand."""
    return _mail_page(request, user, email_id)


def _mail_page(request: Request, user, email_id: int, status: int = 200, to: str | None = None,
               body: str = "", error: str | None = None):
    svc = _svc(request)
    mail = desk.read_mail(svc, user.mailbox_ids, email_id)
    stored = svc.stores.rows_of(svc.db).reply_mail(email_id)
    choice = reply_choice(stored) if stored else None
    notes.opened(svc, email_id, user.id)
    mailbox_id = desk.mail_mailbox(svc, email_id) or 0
    if mail.status in handwrite.WRITABLE and not body and error is None:
        # a reply written by hand starts with the mailbox's signature (filled in)
        _, signature = answers.for_mail(svc, mailbox_id, email_id, user.name)
        body = "\n\n" + signature.text if signature else ""
    return page(request, "mail.html", status, mail=mail, notes=notes.of_mail(svc, email_id),
                note_back=f"/mails/{email_id}",
                colleagues=assignment.colleagues(svc, mailbox_id),
                undecided=mail.status == "no_reply_suggested",
                writable=mail.status in handwrite.WRITABLE,
                reply_to=to if to is not None else (choice.addr if choice and choice.ok else ""),
                reply_rule=choice.rule if choice else "", reply_body=body, reply_error=error,
                **views_casework.context(svc, email_id, mail.status, mail.status_reason))


@router.post("/mails/{email_id}/reply")
def write_reply(request: Request, user: StaffUser, email_id: int, to: FormStr = "",
                body: FormStr = ""):
    """A reply written by hand (``sending.handwrite``): a draft of source ``manual``,
    pending review, approved and sent like any draft. A refused address or state answers
    the mail page again with the typed recipient and text kept."""
    svc = _svc(request)
    desk.require_mail(svc, user.mailbox_ids, email_id)
    try:
        written = handwrite.write(svc, email_id, user.name, to, body)
    except (BadInputError, StateRefused) as e:
        return _mail_page(request, user, email_id, 400, to, body.replace("\r\n", "\n"),
                          _tr(request, user, "Not saved: %(why)s. Your text is kept below.",
                              why=e))
    flash(request, "ok", _tr(request, user, "Your reply to mail #%(id)s is a draft now: "
                             "check it and approve it to send it.", id=email_id))
    return RedirectResponse(f"/drafts/{written.draft_id}", status_code=303)


@router.get("/mails/{email_id}/source")
def mail_source(request: Request, user: StaffUser, email_id: int) -> Response:
    """The raw mail as plain text for anyone who may see its mailbox: ``text/plain`` with
    ``nosniff`` and a sandboxing CSP (the SecurityHeaders middleware), so nothing in it is
    ever rendered or run, only read."""
    raw = desk.raw_source(_svc(request), user.mailbox_ids, email_id, user.actor)
    return Response(raw, media_type="text/plain; charset=utf-8",
                    headers={"Content-Disposition": "inline", "X-Content-Type-Options": "nosniff"})


@router.post("/no-reply/{email_id}/{action}")
def no_reply_decide(request: Request, user: StaffUser, email_id: int, action: str):
    if action not in ("confirm", "reply"):
        flash(request, "error", _tr(request, user, "Unknown action %(action)s; nothing changed.",
                                    action=repr(action)))
        return RedirectResponse("/no-reply", status_code=303)
    desk.require_mail(_svc(request), user.mailbox_ids, email_id)
    try:
        r = no_reply.decide(_svc(request), email_id, user.name, reply=action == "reply")
    except (StateRefused, BadInputError) as e:
        flash(request, "error", _tr(request, user, "Mail #%(id)s: nothing changed: %(why)s",
                                    id=email_id, why=e))
        return RedirectResponse("/no-reply", status_code=303)
    if r.action == "unchanged":
        flash(request, "warn", _tr(request, user, "Mail #%(id)s is %(status)s; someone decided "
                                   "already. Nothing changed.", id=email_id, status=r.status))
    elif r.action == "confirmed":
        flash(request, "ok", _tr(request, user, "Mail #%(id)s: no reply, confirmed.", id=email_id))
    else:
        flash(request, "ok", _tr(request, user, "Mail #%(id)s needs a reply: a draft is being "
                                 "written; it appears in the review queue when it is ready.",
                                 id=email_id))
    return RedirectResponse("/no-reply", status_code=303)
