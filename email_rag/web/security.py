"""Sessions, CSRF, roles and response headers of the web UI.

- Session: Starlette's signed cookie (itsdangerous), HttpOnly, SameSite=Lax,
  Secure when ``web_cookie_secure``; it holds the user id, a CSRF token and
  flash messages and the user's language (for a page made while the user row cannot be
  read), never a password. The user row is read on every request, so
  a disabled user is out at the next click; the session also carries the user's
  session version, which logout and disabling raise: a copied cookie stops
  working at logout (server-side revocation, ``users.end_sessions``).
- CSRF: one random token per session; every POST must carry it in the form
  field ``csrf_token`` (checked with a constant-time compare), the login form
  included.
- Roles: staff review drafts; admins also see the failure console and the
  audit log. Anything else answers 403.
- Headers: a strict Content-Security-Policy (no inline script or style, no
  remote content, no framing), X-Frame-Options DENY, no referrer, nosniff,
  and no caching of pages (they show mail content).
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from dataclasses import replace
from typing import Annotated, Any

from fastapi import Depends, Form, Request

from ..review.users import User, active_user

log = logging.getLogger(__name__)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'; object-src 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]


class NotLoggedIn(Exception):
    """The request needs a logged-in user."""


class Forbidden(Exception):
    """The user's role does not allow this page or action."""


class CsrfError(Exception):
    """The form's CSRF token is missing or wrong."""


def session_secret(configured: str) -> str:
    if configured:
        return configured
    log.warning("EMAIL_RAG_WEB_SECRET_KEY is empty: using a random session key for this "
                "process; everyone must log in again after a restart. Set the key in production.")
    return secrets.token_urlsafe(32)


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = secrets.token_urlsafe(32)
        request.session["csrf"] = token
    return token


async def check_csrf(request: Request) -> None:
    """Dependency of every POST route."""
    if request.method != "POST":
        return
    form = await request.form()
    sent = form.get("csrf_token")
    expected = request.session.get("csrf")
    if not expected or not isinstance(sent, str) or not hmac.compare_digest(sent, expected):
        log.warning("CSRF check failed for %s %s", request.method, request.url.path)
        raise CsrfError()


def current_user(request: Request) -> User:
    uid, version = request.session.get("uid"), request.session.get("sv")
    if not uid or version is None:
        raise NotLoggedIn()
    user = active_user(request.app.state.pool.get().db, int(uid), int(version))
    if user is None:  # deleted, disabled or logged out since this session began
        request.session.clear()
        raise NotLoggedIn()
    if request.session.get("lang") != user.ui_language:  # for pages made without the user
        request.session["lang"] = user.ui_language  # (a 503 while MariaDB is away)
    if user.mailbox_ids == frozenset() and request.app.state.settings.web_staff_see_unassigned:
        user = replace(user, mailbox_ids=None)
    request.state.user = user
    return user


def admin_user(request: Request) -> User:
    user = current_user(request)
    if not user.is_admin:
        raise Forbidden()
    return user


StaffUser = Annotated[User, Depends(current_user)]  # any logged-in user (staff or admin)
AdminUser = Annotated[User, Depends(admin_user)]  # admins only (403 for staff)
FormStr = Annotated[str, Form()]
FormInt = Annotated[int, Form()]


def login_session(request: Request, user: User) -> None:
    """A fresh session for the user (nothing of the anonymous session survives)."""
    request.session.clear()
    request.session["uid"] = user.id
    request.session["sv"] = user.session_version
    request.session["csrf"] = secrets.token_urlsafe(32)
    request.session["lang"] = user.ui_language


def flash(request: Request, level: str, text: str, href: str | None = None,
          link: str | None = None) -> None:
    """A message shown once on the next page (level: ok, info, warn, error)."""
    messages = request.session.get("flash", [])
    messages.append([level, text, href, link])
    request.session["flash"] = messages[-5:]


def pop_flashes(request: Request) -> list[dict[str, Any]]:
    messages = request.session.pop("flash", [])
    return [{"level": m[0], "text": m[1], "href": m[2], "link": m[3]} for m in messages]


def safe_next(target: str | None) -> str:
    """Only local paths: never redirect to another site after login."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/queue"


class SecurityHeaders:
    """Pure ASGI middleware adding the security headers to every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope.get("path", "").startswith("/static/")
        started = time.perf_counter()

        async def wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", [])
                           if h[0].lower() not in {k for k, _ in SECURITY_HEADERS}]
                headers += SECURITY_HEADERS
                if dict(headers).get(b"content-type", b"").startswith(b"text/plain"):
                    # a mail's raw source and other text: never a document that can act
                    headers.append((b"content-security-policy", b"sandbox"))
                # server time until the response starts (read by `email-rag bench web`)
                took = (time.perf_counter() - started) * 1000
                headers.append((b"server-timing", f"app;dur={took:.1f}".encode()))
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, wrapped)
