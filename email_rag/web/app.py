"""The web UI application: ``create_app(settings)``.

Server-rendered pages (Jinja2), a little CSS and one small script; every
action is a plain form POST (CSRF token) answered with a redirect (POST,
redirect, GET), so a reload never repeats an action. Views only translate
between HTTP and the domain functions the CLI uses as well.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from ..core.errors import (
    MISSING,
    AttachmentNotFoundError,
    DatabaseUnavailableError,
    DraftNotFoundError,
    EmailRagError,
    OutcomeUnknownError,
    TransientError,
)
from ..core.redact import redact_text
from ..core.settings import Settings, get_settings
from ..review import service_levels
from ..sending.outcome import N_
from ..sending.rules import REFUSALS
from . import (
    views_admin,
    views_answers,
    views_casework,
    views_knowledge,
    views_mailboxes,
    views_main,
    views_privacy,
    views_review,
    views_search,
    views_setup,
)
from .limits import BodyLimit
from .pool import ServicesPool
from .render import STATIC, page, tr_known
from .render import tr as _tr
from .security import (
    PLAIN_HTTP,
    CsrfError,
    Forbidden,
    NotLoggedIn,
    SecurityHeaders,
    check_csrf,
    plain_http_login,
    session_secret,
)

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    pool = ServicesPool(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        _service_levels_changed(pool)
        yield
        pool.close()

    app = FastAPI(title="email-rag", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan, dependencies=[Depends(check_csrf)])
    app.state.pool = pool
    app.state.settings = settings
    app.state.metrics_cache = None
    app.add_middleware(BodyLimit, logged_in_bytes=settings.web_max_request_bytes,
                       anonymous_bytes=settings.web_max_anonymous_request_bytes)
    app.add_middleware(SessionMiddleware,
                       secret_key=session_secret(settings.web_secret_key.get_secret_value()),
                       session_cookie="email_rag_session",
                       max_age=settings.web_session_max_age_seconds, same_site="lax")
    # outermost: it sees every response, the session cookie included (Secure over https)
    app.add_middleware(SecurityHeaders, https_mode=settings.web_https,
                       hsts_seconds=settings.web_hsts_seconds)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    app.include_router(views_main.router)
    app.include_router(views_review.router)
    app.include_router(views_admin.router)
    app.include_router(views_mailboxes.router)
    app.include_router(views_privacy.router)
    app.include_router(views_answers.router)
    app.include_router(views_knowledge.router)
    app.include_router(views_casework.router)
    app.include_router(views_search.router)
    app.include_router(views_setup.router)
    _handlers(app)
    return app


def _service_levels_changed(pool: ServicesPool) -> None:
    """Due times computed under a mailbox's earlier service level are computed again (the
    desk computes missing ones before each read). MariaDB away: the next start does it."""
    try:
        svc = pool.get()
        service_levels.forget_changed(svc.db, svc.mailboxes.configs())
    except EmailRagError as e:
        log.warning("service levels not checked at start: %s", redact_text(str(e)))


def _handlers(app: FastAPI) -> None:
    """The error pages: every error a request may raise gets an HTML page (``HANDLERS``)."""
    for error, handler in HANDLERS:
        app.add_exception_handler(error, handler)


async def not_logged_in(request: Request, exc: NotLoggedIn):
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.method != "GET":
        target = "/queue"
    return RedirectResponse(f"/login?next={quote(target)}", status_code=303)

async def forbidden(request: Request, exc: Forbidden):
    return page(request, "error.html", 403, title=_tr(request, None, "Admins only"),
                message=_tr(request, None, "This page is for admins. Your role lets you "
                            "review drafts; ask an admin if you need this."))

async def csrf_failed(request: Request, exc: CsrfError):
    if request.url.path in ("/login", "/setup") and plain_http_login(request):
        # with EMAIL_RAG_WEB_HTTPS=required the Secure cookie never came back over http:
        # the reason is the connection, not an old form
        return page(request, "error.html", 403, title=_tr(request, None, "Not encrypted"),
                    message=_tr(request, None, PLAIN_HTTP))
    return page(request, "error.html", 403, title=_tr(request, None, "Form expired"),
                message=_tr(request, None, "This form was not accepted (its security token "
                            "is missing or old, e.g. after a new login or from another "
                            "site). Nothing was changed. Go back, reload the page and try "
                            "again."))

async def draft_missing(request: Request, exc: Exception):
    return page(request, "error.html", 404, title=_tr(request, None, "Not found"),
                message=tr_known(request, str(exc), MISSING))

def _unavailable(request: Request, title: str, first: str) -> Response:
    """503 with Retry-After: what is known, that stored work is safe, what to do."""
    parts = [first]
    if request.method == "POST":
        parts.append(_tr(request, None, "If you had just sent a form, it may or may not "
                         "have been saved: reload the page to see the current state before "
                         "repeating it (approving twice still sends once)."))
    parts.append(_tr(request, None, "Stored work is safe; try again in a minute."))
    response = page(request, "error.html", 503, title=title, message=" ".join(parts))
    response.headers["Retry-After"] = "60"
    return response

async def db_down(request: Request, exc: DatabaseUnavailableError):
    request.app.state.pool.generation += 1  # every thread reconnects on its next request
    log.error("MariaDB unavailable during %s %s: %s", request.method, request.url.path, exc)
    return _unavailable(request, _tr(request, None, "Database unreachable"),
                       _tr(request, None, "MariaDB does not answer right now."))

async def service_down(request: Request, exc: TransientError):
    log.warning("%s during %s %s: %s", type(exc).__name__, request.method,
                request.url.path, redact_text(str(exc)))
    return _unavailable(request, _tr(request, None, "Temporarily unavailable"),
                       _tr(request, None, "A service email-rag needs did not answer in "
                           "time (%(what)s).", what=type(exc).__name__))

async def outcome_unknown(request: Request, exc: OutcomeUnknownError):
    log.warning("outcome unknown during %s %s: %s", request.method, request.url.path,
                redact_text(str(exc)))
    return _unavailable(request, _tr(request, None, "Outcome unknown"),
                       _tr(request, None, "What you asked for may or may not have "
                           "happened (%(why)s).", why=redact_text(str(exc))))

async def domain_error(request: Request, exc: EmailRagError):
    return page(request, "error.html", 400, title=_tr(request, None, "Not possible"),
                message=_tr(request, None, "%(why)s Nothing was changed.",
                            why=tr_known(request, redact_text(str(exc)),
                                         (*MISSING, *REFUSALS))))

async def bad_request(request: Request, exc: RequestValidationError):
    """A number expected in the address, a form field missing: an HTML page, never
    FastAPI's JSON (nothing of the input is echoed)."""
    fields = sorted({str(e.get("loc", ["", "?"])[-1]) for e in exc.errors()})
    return page(request, "error.html", 422, title=_tr(request, None, "Not understood"),
                message=_tr(request, None, "This address or form has a value the page "
                            "cannot use (%(fields)s). Nothing was changed. Go back and "
                            "check it, or start again from the review queue.",
                            fields=", ".join(fields)[:200]))

async def http_error(request: Request, exc: StarletteHTTPException):
    titles = {404: N_("Not found"), 405: N_("Not allowed"), 400: N_("Bad request"),
              413: N_("Too large")}
    return page(request, "error.html", exc.status_code,
                title=_tr(request, None, titles.get(exc.status_code, N_("Error"))),
                message=_tr(request, None, "There is no such page.")
                if exc.status_code == 404 else str(exc.detail))


# (error, its page); an error gets the page of its nearest class (Starlette walks its MRO)
HANDLERS: list[tuple[type[Exception], Callable[..., Awaitable[Response]]]] = [
    (NotLoggedIn, not_logged_in),
    (Forbidden, forbidden),
    (CsrfError, csrf_failed),
    (DraftNotFoundError, draft_missing),
    (AttachmentNotFoundError, draft_missing),
    (DatabaseUnavailableError, db_down),
    (TransientError, service_down),
    (OutcomeUnknownError, outcome_unknown),
    (EmailRagError, domain_error),
    (RequestValidationError, bad_request),
    (StarletteHTTPException, http_error),
]
