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

from .. import no_reply
from ..console import review_filters
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


def _filters(mailbox: str | None, category: str | None) -> dict[str, str]:
    return {k: v for k, v in (("mailbox", mailbox), ("category", category)) if v}


def _back_to_draft(request: Request, draft_id: int, level: str, text: str) -> RedirectResponse:
    """Say what happened (nothing changed) and show the draft again (POST-redirect-GET)."""
    flash(request, level, text)
    return RedirectResponse(f"/drafts/{draft_id}", status_code=303)


def _next_url(svc, mailbox: str | None, category: str | None) -> str:
    """The oldest pending draft under the same filters, else the queue."""
    rows = review.list_pending(svc, mailbox or None, category or None, limit=1)
    query = urlencode(_filters(mailbox, category))
    if rows:
        return f"/drafts/{rows[0]['id']}" + (f"?{query}" if query else "")
    return "/queue" + (f"?{query}" if query else "")


@router.get("/queue")
def queue(request: Request, user: StaffUser, mailbox: str = "", category: str = ""):
    svc = _svc(request)
    rows = review.list_pending(svc, mailbox or None, category or None)
    return page(request, "queue.html", rows=rows, filters=review_filters(svc),
                mailbox=mailbox, category=category,
                query=urlencode(_filters(mailbox, category)))


@router.get("/drafts/{draft_id}")
def draft_page(request: Request, user: StaffUser, draft_id: int, mailbox: str = "", category: str = ""):
    svc = _svc(request)
    data = review.show(svc, draft_id)
    draft = data["draft"]
    actionable = draft["status"] in (DraftStatus.PENDING_REVIEW, DraftStatus.STALE)
    pending = review.list_pending(svc, mailbox or None, category or None)
    ids = [r["id"] for r in pending]
    here = ids.index(draft_id) if draft_id in ids else -1
    others = ids[here + 1:] + ids[:max(here, 0)] if here >= 0 else ids
    return page(request, "draft.html", d=draft, mail=data["mail"], thread=data["thread"],
                sources=data["sources"], send=data["send_attempt"],
                reply=data["reply"], attachments=data["attachments"],
                newer=data["newer_inbound"], actionable=actionable,
                mailbox=mailbox, category=category,
                query=urlencode(_filters(mailbox, category)),
                position=here + 1, total=len(ids), next_id=others[0] if others else None,
                age_s=pending[here]["age_s"] if here >= 0 else None)


@router.get("/drafts/{draft_id}/attachments/{n}")
def attachment(request: Request, user: StaffUser, draft_id: int, n: int):
    """A download, never shown inline: a generic type, ``Content-Disposition: attachment``
    and ``nosniff`` - the browser saves the file and renders none of it (mail content is
    untrusted)."""
    svc = _svc(request)
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
            category: FormStr = ""):
    svc = _svc(request)
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
    return RedirectResponse(_next_url(svc, mailbox, category), status_code=303)


@router.post("/drafts/{draft_id}/reject")
def reject(request: Request, user: StaffUser, draft_id: int, reason: FormStr = "", mailbox: FormStr = "",
           category: FormStr = ""):
    svc = _svc(request)
    try:
        r = review.reject(svc, draft_id, user.name, reason)
    except (DraftStateError, BadInputError) as e:
        return _back_to_draft(request, draft_id, "error", f"Draft #{draft_id} was not rejected: {e}")
    if r.action == "already_rejected":
        return _back_to_draft(request, draft_id, "warn", f"Draft #{draft_id} was already rejected. Nothing changed.")
    flash(request, "ok", f"Draft #{draft_id} rejected; the mail is closed without a reply.",
          f"/drafts/{draft_id}", "View it")
    return RedirectResponse(_next_url(svc, mailbox, category), status_code=303)


@router.post("/drafts/{draft_id}/regenerate")
def regenerate(request: Request, user: StaffUser, draft_id: int, note: FormStr = "", mailbox: FormStr = "",
               category: FormStr = ""):
    svc = _svc(request)
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
    return RedirectResponse(_next_url(svc, mailbox, category), status_code=303)


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
