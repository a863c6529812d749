"""Search over every mail and reply, and the customer page (``email_rag.review.search``):
read-only pages in the user's mailboxes."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request

from ..review import search
from .render import page
from .security import StaffUser

router = APIRouter()


def _svc(request: Request):
    return request.app.state.pool.get()


@router.get("/search")
def search_page(request: Request, user: StaffUser, q: str = "", before: str = ""):
    text = q.strip()[:200]
    found = search.search(_svc(request), user.mailbox_ids, text, search.LIMIT,
                          before=before[:80] or None) if text else None
    return page(request, "search.html", q=text, found=found, limit=search.LIMIT,
                later=bool(before) and search.parse_cursor(before) is not None,
                more=found and found.next_cursor and urlencode(
                    {"q": text, "before": found.next_cursor}),
                newest=urlencode({"q": text}))


@router.get("/customers")
def customer_page(request: Request, user: StaffUser, addr: str = ""):
    c = search.customer(_svc(request), user.mailbox_ids, addr)
    return page(request, "customer.html", c=c, limit=search.CUSTOMER_LIMIT)
