"""The size of a request body, checked before the application reads it.

A request without a logged-in session (the login form, a scanner) may send at most
``web_max_anonymous_request_bytes``; one with a session (signed cookie carrying a user)
at most ``web_max_request_bytes``. A declared ``Content-Length`` above the limit is
answered 413 at once, nothing of the body read; a body without a length (chunked) is
read up to the limit and answered 413 as soon as it passes it. The check on the session
is the cookie's signature only (no database read): the user is checked by the route.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from .render import page
from .render import tr as _tr


class BodyLimit:
    """Pure ASGI middleware; must sit inside the session middleware (it reads the
    session the cookie carried)."""

    def __init__(self, app: Any, logged_in_bytes: int, anonymous_bytes: int) -> None:
        self.app = app
        self.logged_in_bytes = logged_in_bytes
        self.anonymous_bytes = anonymous_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        session = scope.get("session") or {}
        limit = self.logged_in_bytes if session.get("uid") else self.anonymous_bytes
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                too_large = int(declared) > limit
            except ValueError:
                too_large = True
            if too_large:
                await self._refuse(scope, receive, send, limit)
                return
            await self.app(scope, receive, send)
            return
        # no length declared: read at most the limit, then hand the body on
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > limit:
                await self._refuse(scope, receive, send, limit)
                return
            if not message.get("more_body"):
                break
        replay = iter(messages)

        async def buffered() -> dict:
            return next(replay, None) or await receive()

        await self.app(scope, buffered, send)

    async def _refuse(self, scope: dict, receive: Any, send: Any, limit: int) -> None:
        request = Request(scope, receive)
        kib = format(limit // 1024, ",")
        response = page(request, "error.html", 413, title=_tr(request, None, "Too large"),
                        message=_tr(request, None, "This request is larger than the %(kib)s KiB "
                                    "the desk accepts here; nothing was read or changed.",
                                    kib=kib))
        response.headers["connection"] = "close"  # the rest of the body is never read
        await response(scope, receive, send)
