"""Sessions, CSRF, roles and response headers of the web UI.

- Session: Starlette's signed cookie (itsdangerous), HttpOnly, SameSite=Lax,
  Secure over https (below); it holds the user id, a CSRF token and
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
- HTTPS (``web_https``): an answer to a request that came over https (TLS here, or
  X-Forwarded-Proto from a trusted proxy) sets its cookies Secure and carries HSTS
  (``web_hsts_seconds``); with ``required`` every cookie is Secure. A login over plain
  http is refused (``plain_http_refused``) with ``required``, and with ``auto`` unless
  the browser is on this machine (a loopback client address).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import secrets
import time
from dataclasses import replace
from typing import Annotated, Any

from fastapi import Depends, Form, Request

from ..auth.users import User, active_user
from ..core.settings import Settings, networks
from ..sending.outcome import N_

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


def _loopback(host: str | None) -> bool:
    try:
        return ipaddress.ip_address((host or "").split("%")[0]).is_loopback
    except ValueError:
        return False


def plain_http_refused(scheme: str, client: str | None, mode: str) -> bool:
    """Whether a login on this connection is refused because the password would travel
    unencrypted: never over https or with ``off``; always over http with ``required``; with
    ``auto`` over http unless the client address (after the trusted proxies) is loopback."""
    if scheme == "https" or mode == "off":
        return False
    return mode == "required" or not _loopback(client)


PLAIN_HTTP = N_("This connection is not encrypted (plain http): a password typed here would "
                "cross the network readable by anyone on the way, so logging in over it is "
                "refused. Open the desk with https://. Admins: put a TLS proxy in front of "
                "the desk and set EMAIL_RAG_WEB_TRUSTED_PROXIES to its address (the rule is "
                "EMAIL_RAG_WEB_HTTPS; docs/web.md, Security).")


def plain_http_login(request: Request) -> bool:
    """A login on this request would be refused: plain http where it is not allowed."""
    return plain_http_refused(request.url.scheme, request.client.host if request.client
                              else None, request.app.state.settings.web_https)


def metrics_allowed(request: Request, settings: Settings) -> bool:
    """/metrics for a scraper that sends the token (``Authorization: Bearer``, compared in
    constant time) or whose address (after the trusted proxies) is in
    ``web_metrics_allow``."""
    token = settings.web_metrics_token.get_secret_value()
    scheme, _, sent = request.headers.get("authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(sent.strip().encode(),
                                                                   token.encode()):
        return True
    try:
        client = ipaddress.ip_address((request.client.host if request.client else "")
                                      .split("%")[0])
    except ValueError:
        return False
    return any(client in net for net in networks(settings.web_metrics_allow,
                                                   "web_metrics_allow"))


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
    """Pure ASGI middleware adding the security headers to every response; over https (or
    with ``https_mode`` ``required``) every cookie it sets is Secure, and over https HSTS is
    sent (``hsts_seconds``, 0: none)."""

    def __init__(self, app: Any, https_mode: str = "auto", hsts_seconds: int = 0) -> None:
        self.app = app
        self.always_secure = https_mode == "required"
        self.hsts = (b"strict-transport-security", f"max-age={hsts_seconds}".encode()) \
            if hsts_seconds > 0 else None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope.get("path", "").startswith("/static/")
        https = scope.get("scheme") == "https"
        secure_cookies = https or self.always_secure
        started = time.perf_counter()

        async def wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", [])
                           if h[0].lower() not in {k for k, _ in SECURITY_HEADERS}]
                headers += SECURITY_HEADERS
                if secure_cookies:
                    headers = [_secure(h) for h in headers]
                if https and self.hsts is not None:
                    headers.append(self.hsts)
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


def _secure(header: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    """A Set-Cookie header with the Secure attribute (the others as they are)."""
    name, value = header
    if name.lower() != b"set-cookie" or b"; secure" in value.lower():
        return header
    return name, value + b"; secure"
