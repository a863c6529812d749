"""The first start (auth/first_start.py): while no admin exists, the set-up page instead of
the login. ``/setup?token=...`` (the one-time link `email-rag setup` prints) creates the first
admin and logs them in; ``/setup/next`` leads on: add the first mailbox (the mailbox pages),
start its history import and watch it."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from ..auth import first_start, users
from ..core.errors import BadInputError
from ..ingest import history_import
from .render import page
from .render import tr as _tr
from .security import PLAIN_HTTP, AdminUser, FormStr, flash, login_session, plain_http_login

router = APIRouter()
COMMAND = "email-rag setup"  # prints the one-time link


def _db(request: Request):
    return request.app.state.pool.get().db


@router.get("/setup")
def setup(request: Request, token: str = ""):
    db = _db(request)
    if not first_start.needs_setup(db):
        return RedirectResponse("/login", status_code=303)
    return page(request, "setup.html", token=token, valid=first_start.link_valid(db, token),
                error=_tr(request, None, PLAIN_HTTP) if plain_http_login(request) else None,
                name="", command=COMMAND)


@router.post("/setup")
def create_admin(request: Request, token: FormStr = "", name: FormStr = "",
                 password: FormStr = "", again: FormStr = ""):
    db = _db(request)
    if not first_start.needs_setup(db):
        return RedirectResponse("/login", status_code=303)
    if plain_http_login(request):  # the first admin's password: the login's rule
        return page(request, "setup.html", 403, token=token, command=COMMAND,
                    valid=first_start.link_valid(db, token), name=name[:100],
                    error=_tr(request, None, PLAIN_HTTP))
    try:
        if password != again:
            raise BadInputError(_tr(request, None, "The two passwords differ."))
        user_id = first_start.create_admin(db, token, name.strip(), password)
    except BadInputError as e:
        return page(request, "setup.html", 400, token=token, command=COMMAND,
                    valid=first_start.link_valid(db, token), error=str(e), name=name[:100])
    user = users.active_user(db, user_id)
    assert user is not None
    login_session(request, user)
    flash(request, "ok", _tr(request, user, "Admin account %(name)s created; you are logged "
                             "in.", name=user.name))
    return RedirectResponse("/setup/next", status_code=303)


@router.get("/setup/next")
def next_steps(request: Request, user: AdminUser):
    svc = request.app.state.pool.get()
    entries = [e for e in svc.mailboxes.entries(fresh=True) if not e.removed]
    imports = {p.mailbox: p for p in history_import.progress(svc.db)}
    return page(request, "setup_next.html", entries=entries, imports=imports)
