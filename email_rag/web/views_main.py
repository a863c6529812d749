"""Login, logout, the status page, /metrics and /healthz."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, RedirectResponse

from ..auth import first_start, users
from ..core.errors import EmailRagError
from ..db import figures
from ..ops import health, metrics
from . import i18n
from .render import language, page
from .render import tr as _tr
from .security import (
    PLAIN_HTTP,
    AdminUser,
    FormStr,
    NotLoggedIn,
    StaffUser,
    current_user,
    flash,
    login_session,
    metrics_allowed,
    plain_http_login,
    safe_next,
)

log = logging.getLogger(__name__)
router = APIRouter()


def _svc(request: Request):
    return request.app.state.pool.get()


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/queue", status_code=303)


@router.get("/login")
def login_form(request: Request, next: str = "/queue"):
    try:
        empty = first_start.needs_setup(_svc(request).db)
    except EmailRagError:  # MariaDB away: the login page says so when it is used
        empty = False
    if empty:  # an empty database: the set-up page
        return RedirectResponse("/setup", status_code=303)
    error = _tr(request, None, PLAIN_HTTP) if plain_http_login(request) else None
    return page(request, "login.html", next=safe_next(next), name="", error=error)


# Logins checked at once by this process; the others wait here without holding one of the
# threads every other page needs (a password check is an argon2id hash: 64 MiB, ~0.1 s).
LOGIN_SLOTS = anyio.CapacityLimiter(users.VERIFY_SLOTS_N)


@router.post("/login")
async def login(request: Request, name: FormStr = "", password: FormStr = "",
                next: FormStr = "/queue"):
    s = request.app.state.settings
    client = request.client.host if request.client else ""
    if plain_http_login(request):
        log.warning("login over plain http refused (EMAIL_RAG_WEB_HTTPS=%s)", s.web_https)
        return page(request, "login.html", 403, next=safe_next(next), name=name[:100],
                    error=_tr(request, None, PLAIN_HTTP))

    def check() -> users.LoginResult:
        return users.authenticate(_svc(request).db, name, password, s.web_login_max_failures,
                                  s.web_login_lockout_seconds, client,
                                  s.web_login_lockout_max_seconds,
                                  s.web_login_max_failures_per_address)

    result = await anyio.to_thread.run_sync(check, limiter=LOGIN_SLOTS)
    if result.user is None:
        if result.reason == "locked":
            error = _tr(request, None, "Too many failed logins with this name from "
                        "your address: try again in %(minutes)s minute(s). Ask an "
                        "admin if you forgot your password.",
                        minutes=-(-result.locked_for_s // 60))
        else:
            error = _tr(request, None, "Wrong user name or password (or the account "
                        "is disabled).")
        return page(request, "login.html", 401, next=safe_next(next), name=name[:100],
                    error=error)
    login_session(request, result.user)
    return RedirectResponse(safe_next(next), status_code=303)


@router.post("/logout")
def logout(request: Request):
    """Ends this user's sessions server-side (a copy of the cookie no longer works)."""
    try:
        user = current_user(request)
    except NotLoggedIn:
        user = None
    if user is not None:
        users.end_sessions(_svc(request).db, user.id, user.actor)
    request.session.clear()
    flash(request, "info", i18n.translate(language(request, user), "You are logged out."))
    return RedirectResponse("/login", status_code=303)


COMMON_ZONES = ("Europe/Berlin", "Europe/Vienna", "Europe/Zurich", "Europe/London", "UTC",
                "America/New_York", "Asia/Tokyo")


@router.get("/me")
def preferences(request: Request, user: StaffUser):
    s = request.app.state.settings
    return page(request, "me.html", zone=user.time_zone or s.web_time_zone,
                chosen=language(request, user), zones=COMMON_ZONES)


@router.post("/me")
def save_preferences(request: Request, user: StaffUser, time_zone: FormStr,
                     ui_language: FormStr):
    users.set_prefs(_svc(request).db, user, time_zone.strip(), ui_language)
    flash(request, "ok", i18n.translate(ui_language, "Preferences saved."))
    return RedirectResponse("/me", status_code=303)


@router.get("/reports")
def reports(request: Request, user: AdminUser, by: str = "agent", weeks: int = 8):
    """First-response time, time to send and the drafts' outcomes per agent, mailbox or
    week (``figures.report``: grouped in MariaDB, this week and up to 52 before it)."""
    by = by if by in figures.REPORT_BY else "agent"
    weeks = min(max(weeks, 0), 52)
    rows = figures.report(request.app.state.pool.get().db, weeks, by)
    return page(request, "reports.html", rows=rows, by=by, weeks=weeks, bys=figures.REPORT_BY)


@router.get("/status")
def status_page(request: Request, user: StaffUser):
    data = health.status(_svc(request))
    if not user.is_admin:
        data = staff_status(data)
    return page(request, "status.html", data=data)


INTERNAL_KEYS = {"detail", "version", "last_error", "counts_error", "queues_error", "reviews"}


def staff_status(data: Any) -> Any:
    """The status page for staff: up/down and counts, without internal hosts, ports,
    folder paths, versions or error texts, nor the review figures of every mailbox (admins
    see those)."""
    if isinstance(data, dict):
        return {k: staff_status(v) for k, v in data.items() if k not in INTERNAL_KEYS}
    if isinstance(data, list):
        return [staff_status(v) for v in data]
    return data


@router.get("/healthz")
def healthz(request: Request) -> PlainTextResponse:
    """Liveness for load balancers: 200 when MariaDB answers, 503 otherwise. No content."""
    try:
        _svc(request).db.ping()
    except EmailRagError:
        return PlainTextResponse("database unreachable\n", status_code=503)
    return PlainTextResponse("ok\n")


@router.get("/metrics")
def metrics_page(request: Request) -> PlainTextResponse:
    """Prometheus scrape endpoint (no login; counts only, no mail content, but mailbox names
    in its labels): for the token or an allowed address only (``metrics_allowed``)."""
    state = request.app.state
    if not metrics_allowed(request, state.settings):
        return PlainTextResponse(
            "403 /metrics: send the scrape token (Authorization: Bearer, "
            "EMAIL_RAG_WEB_METRICS_TOKEN) or scrape from an address in "
            "EMAIL_RAG_WEB_METRICS_ALLOW (docs/web.md, Metrics)\n", status_code=403)
    ttl = state.settings.web_metrics_cache_seconds
    cached = state.metrics_cache
    now = time.monotonic()
    if cached is None or ttl <= 0 or now - cached[0] > ttl:
        cached = (now, metrics.collect(_svc(request)))
        state.metrics_cache = cached
    return PlainTextResponse(cached[1], media_type=metrics.CONTENT_TYPE)
