"""Review queue and draft page (staff and admins).

Approve, reject and regenerate call ``sending.review`` / ``sending.regenerate``
(the CLI's functions). Approval is exactly-once in the domain (row lock); a
double click or a second tab gets "already approved" and the same single send.
Each action answers with a redirect (POST, redirect, GET).
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from .. import desk, no_reply
from ..console import review_filters
from ..desk import QueueQuery
from ..errors import BadInputError
from ..no_reply import NoReplyStateError
from ..sending import regenerate as regen
from ..sending import review
from ..sending.review import DraftStateError
from ..states import DraftStatus
from .render import page
from .security import FormStr, StaffUser, flash

router = APIRouter()


def _svc(request: Request):
    return request.app.state.pool.get()


def _back_to_draft(request: Request, draft_id: int, level: str, text: str) -> RedirectResponse:
    """Say what happened (nothing changed) and show the draft again (POST-redirect-GET)."""
    flash(request, level, text)
    return RedirectResponse(f"/drafts/{draft_id}", status_code=303)


def _with(path: str, query: QueueQuery) -> str:
    params = urlencode(query.url_params())
    return path + (f"?{params}" if params else "")


def _next_url(svc, user, query: QueueQuery, draft_id: int) -> str:
    """The draft after this one in the same filtered, sorted queue (computed before the
    action, while this draft still has its place), else the queue."""
    nxt = desk.position(svc, user.mailbox_ids, query, draft_id).next_id
    return _with(f"/drafts/{nxt}" if nxt and nxt != draft_id else "/queue", query)


@router.get("/queue")
def queue(request: Request, user: StaffUser, mailbox: str = "", category: str = "",
          q: str = "", sort: str = "waiting", after: str = "", before: str = ""):
    svc = _svc(request)
    query = QueueQuery(mailbox, category, q.strip()[:200], sort)
    pg = desk.queue_page(svc, user.mailbox_ids, query, after or None, before or None)
    filters = review_filters(svc)
    filters["mailboxes"] = desk.visible_mailboxes(svc, user.mailbox_ids)
    params = query.url_params()
    return page(request, "queue.html", rows=pg.rows, total=pg.total, first=pg.first_position,
                next_cursor=pg.next_cursor, prev_cursor=pg.prev_cursor, filters=filters,
                mailbox=mailbox, category=category, q=query.search, sort=query.sort,
                sorts=desk.SORTS, query=urlencode(params),
                search_ignored=bool(query.search) and desk.fulltext_query(query.search) is None,
                level=desk.waiting_level)


@router.get("/drafts/{draft_id}")
def draft_page(request: Request, user: StaffUser, draft_id: int, mailbox: str = "",
               category: str = "", q: str = "", sort: str = "waiting"):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    query = QueueQuery(mailbox, category, q, sort)
    data = review.show(svc, draft_id)
    draft = data["draft"]
    actionable = draft["status"] in (DraftStatus.PENDING_REVIEW, DraftStatus.STALE)
    where = desk.position(svc, user.mailbox_ids, query, draft_id)
    return page(request, "draft.html", d=draft, mail=data["mail"], thread=data["thread"],
                sources=data["sources"], send=data["send_attempt"],
                reply=data["reply"], attachments=data["attachments"],
                newer=data["newer_inbound"], actionable=actionable,
                mailbox=mailbox, category=category, q=q, sort=query.sort,
                query=urlencode(query.url_params()),
                position=where.position, total=where.total, next_id=where.next_id,
                prev_id=where.prev_id, age_s=where.age_s, level=desk.waiting_level)


@router.get("/drafts/{draft_id}/attachments/{n}")
def attachment(request: Request, user: StaffUser, draft_id: int, n: int):
    """A download, never shown inline: a generic type, ``Content-Disposition: attachment``
    and ``nosniff`` - the browser saves the file and renders none of it (mail content is
    untrusted)."""
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    info, data = review.attachment(svc, draft_id, n, user.name)
    return Response(content=data, media_type="application/octet-stream", headers={
        "Content-Disposition": content_disposition(str(info.get("filename") or "attachment")),
        "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})


def content_disposition(filename: str) -> str:
    """``attachment`` with an ASCII fallback name and the UTF-8 name (RFC 6266 / 5987)."""
    name = re.sub(r'[\x00-\x1f\x7f"\\/]', "_", filename).strip() or "attachment"
    ascii_name = name.encode("ascii", "replace").decode().replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


@router.post("/drafts/{draft_id}/approve")
def approve(request: Request, user: StaffUser, draft_id: int, body: FormStr, mailbox: FormStr = "",
            category: FormStr = "", q: FormStr = "", sort: FormStr = ""):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    next_url = _next_url(svc, user, QueueQuery(mailbox, category, q, sort), draft_id)
    edited = body.replace("\r\n", "\n")  # browsers send CRLF from a textarea
    try:
        r = review.approve(svc, draft_id, user.name, edited)
    except (DraftStateError, BadInputError) as e:
        return _back_to_draft(request, draft_id, "error", f"Draft #{draft_id} was not approved: {e}")
    if r.action == "already_approved":
        return _back_to_draft(request, draft_id, "warn",
                              f"Draft #{draft_id} was already approved by "
                              f"{r.detail.get('approved_by') or 'someone'}. Nothing changed: "
                              "the reply is sent once.")
    edited_note = " with your edits" if r.detail.get("edited") else ""
    flash(request, "ok", f"Draft #{draft_id} approved{edited_note}. The reply is queued and "
          "will be sent exactly once.", f"/drafts/{draft_id}", "View it")
    return RedirectResponse(next_url, status_code=303)


@router.post("/drafts/{draft_id}/reject")
def reject(request: Request, user: StaffUser, draft_id: int, reason: FormStr = "", mailbox: FormStr = "",
           category: FormStr = "", q: FormStr = "", sort: FormStr = ""):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    next_url = _next_url(svc, user, QueueQuery(mailbox, category, q, sort), draft_id)
    try:
        r = review.reject(svc, draft_id, user.name, reason)
    except (DraftStateError, BadInputError) as e:
        return _back_to_draft(request, draft_id, "error", f"Draft #{draft_id} was not rejected: {e}")
    if r.action == "already_rejected":
        return _back_to_draft(request, draft_id, "warn", f"Draft #{draft_id} was already rejected. Nothing changed.")
    flash(request, "ok", f"Draft #{draft_id} rejected; the mail is closed without a reply.",
          f"/drafts/{draft_id}", "View it")
    return RedirectResponse(next_url, status_code=303)


@router.post("/drafts/{draft_id}/regenerate")
def regenerate(request: Request, user: StaffUser, draft_id: int, note: FormStr = "", mailbox: FormStr = "",
               category: FormStr = "", q: FormStr = "", sort: FormStr = ""):
    svc = _svc(request)
    desk.require_draft(svc, user.mailbox_ids, draft_id)
    next_url = _next_url(svc, user, QueueQuery(mailbox, category, q, sort), draft_id)
    try:
        r = regen.regenerate(svc, draft_id, user.name, note)
    except (DraftStateError, BadInputError) as e:
        return _back_to_draft(request, draft_id, "error", f"Draft #{draft_id} was not regenerated: {e}")
    if r.action == "already_superseded":
        flash(request, "warn", f"Draft #{draft_id} was already replaced; a new draft for this "
              "mail is on its way or in the queue.")
    else:
        queued = "" if r.enqueued else " (the queue is unreachable; it starts once it is back)"
        flash(request, "ok", f"A new draft for mail #{r.email_id} is being written{queued}. "
              "It appears in the queue when it is ready.")
    return RedirectResponse(next_url, status_code=303)


@router.get("/no-reply")
def no_reply_list(request: Request, user: StaffUser):
    return page(request, "no_reply.html", rows=no_reply.list_suggested(_svc(request)))


@router.post("/no-reply/{email_id}/{action}")
def no_reply_decide(request: Request, user: StaffUser, email_id: int, action: str):
    if action not in ("confirm", "reply"):
        flash(request, "error", f"Unknown action {action!r}; nothing changed.")
        return RedirectResponse("/no-reply", status_code=303)
    try:
        r = no_reply.decide(_svc(request), email_id, user.name, reply=action == "reply")
    except (NoReplyStateError, BadInputError) as e:
        flash(request, "error", f"Mail #{email_id}: nothing changed: {e}")
        return RedirectResponse("/no-reply", status_code=303)
    if r.action == "unchanged":
        flash(request, "warn", f"Mail #{email_id} is {r.status}; someone decided already. "
              "Nothing changed.")
    elif r.action == "confirmed":
        flash(request, "ok", f"Mail #{email_id}: no reply, confirmed.")
    else:
        flash(request, "ok", f"Mail #{email_id} needs a reply: a draft is being written; it "
              "appears in the review queue when it is ready.")
    return RedirectResponse("/no-reply", status_code=303)
