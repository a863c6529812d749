"""The review queue's filters of a request, read once for every route that shows or goes on
in the queue: the queue page, the draft page (its "x of N", Previous and Next) and the
draft's actions (approve, reject, regenerate, assign, correction, insert), whose next page is
the next draft of the same filtered queue.

``QueueFilters`` is a route parameter: the filters from the query string (GET) or the form
(POST: the draft page's forms carry them as hidden fields), read by ``queue.query_of`` with
the user's id (view "Mine") and time zone (the days of "waiting since")."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import parse_qsl, urlencode

from fastapi import Depends, Request

from ..review import queue, saved_views
from ..review.queue import QueueQuery
from .render import user_zone
from .security import StaffUser


async def queue_query(request: Request, user: StaffUser) -> QueueQuery:
    params = await request.form() if request.method == "POST" else request.query_params
    zone = user_zone(user, request.app.state.settings.web_time_zone)
    return queue.query_of(params, user.id, str(zone))


QueueFilters = Annotated[QueueQuery, Depends(queue_query)]


def with_filters(path: str, query: QueueQuery) -> str:
    """``path`` with the queue's filters as its query string (none when there are none)."""
    params = urlencode(query.url_params())
    return path + (f"?{params}" if params else "")


_BACK = re.compile(r"^/(?:drafts|mails)/\d+$")


def back_to(back: str, email_id: int) -> str:
    """The page a form of the draft or mail page comes back to: that page's own path only
    (else the mail's page), with the queue's filters of its query string and nothing else."""
    path, _, params = (back or "").partition("?")
    if not _BACK.match(path):
        return f"/mails/{email_id}"
    kept = saved_views.clean_query(dict(parse_qsl(params)))
    return path + (f"?{kept}" if kept else "")


def queue_of(back: str) -> str:
    """The queue, filtered as the page ``back`` (a ``back_to`` target) was reached."""
    _, _, params = back.partition("?")
    return "/queue" + (f"?{params}" if params else "")
