"""The web admin's mailboxes: list, add, change, disable, remove; OAuth2 sign-in in the
browser; the history import (progress, pause, resume, restart).

Saving calls ``ops.mailbox_admin.save`` (the check against the real servers first, the
store with the admin's name), as ``email-rag mailboxes add|edit`` does. The OAuth2 sign-in
is the authorization-code flow with PKCE (S256) and a random ``state`` kept in the admin's
session: ``/admin/mailboxes/NAME/oauth`` sends the browser to the provider with the desk's
own callback (``/admin/oauth/callback``, the redirect URI to register), which checks the
state, exchanges the code, stores the tokens encrypted (``db.oauth_tokens``), ends the
mailbox's poll backoff and runs the check. The start is a link, not a form: the page's CSP
(``form-action 'self'``) would stop a form's redirect to the provider.

Failure table (situation | retry? | state known? | resume?):
  the check fails on save | no: the admin decides (fix, or "save disabled") | nothing
      saved, or saved disabled | the form keeps the values (never a secret)
  the provider answers with an error (access_denied ...) | no | nothing stored | sign in
      again from the mailbox page
  a callback without a matching state (replayed, another session, expired) | no | nothing
      stored | sign in again
  the token endpoint refuses the code / cannot be reached | no | nothing stored | again
"""

from __future__ import annotations

import hmac
import secrets
import time
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from ..adapters import oauth2
from ..adapters.queue import enqueue_poll
from ..core import mailbox_fields as mf
from ..core.errors import ConfigError, EmailRagError, PermanentError
from ..core.redact import redact_text
from ..db.mailbox_configs import DATABASE
from ..db.oauth_tokens import token_health
from ..ingest import history_import
from ..ingest.mailbox_state import poll_soon
from ..jobs.dispatch import redispatch
from ..ops import health, mailbox_admin
from ..ops.mailbox_check import check_config
from ..sending.outcome import N_
from . import mailbox_form
from .render import page
from .render import tr as _tr
from .security import AdminUser, FormStr, flash

if TYPE_CHECKING:
    from ..wiring.services import Services

router = APIRouter(prefix="/admin")
PENDING_S = 900  # a sign-in started longer ago than this is refused at the callback
ENABLED = N_("Mailbox %(name)s is polled from the next poll.")
DISABLED = N_("Mailbox %(name)s is no longer polled (from the next poll). Its mail and "
              "queued work stay.")
POLL_ASKED = N_("A worker polls the mailboxes now; the progress shows here.")
POLL_WAITING = N_("A poll is already waiting for a worker; the progress shows here.")


def _svc(request: Request):
    return request.app.state.pool.get()


@router.get("/mailboxes")
def mailboxes(request: Request, user: AdminUser):
    svc = _svc(request)
    entries = [e for e in svc.mailboxes.entries(fresh=True) if not e.removed]
    tokens = {t.mailbox: t for t in token_health(svc.db)}
    imports = {p.mailbox: p for p in history_import.progress(svc.db)}
    polls = {m.name: m for m in health.poll_health(svc)}
    consent = {e.name for e in entries if mailbox_form.sign_in_label(e.config)}
    return page(request, "mailboxes.html", entries=entries, tokens=tokens, imports=imports,
                polls=polls, consent=consent)


@router.get("/mailboxes/new")
def new_mailbox(request: Request, user: AdminUser, provider: str = ""):
    raw = {"provider": provider} if provider in ("microsoft365", "gmail") else {}
    return _form(request, None, raw, ())


@router.post("/mailboxes/new")
async def add_mailbox(request: Request, user: AdminUser) -> Response:
    form = dict(await request.form())
    return await anyio.to_thread.run_sync(_save, request, user, form, None)


@router.get("/mailboxes/{name}")
def mailbox(request: Request, user: AdminUser, name: str):
    svc = _svc(request)
    entry = _entry(svc, name)
    return _form(request, entry, entry.raw, entry.secrets_set)


@router.post("/mailboxes/{name}")
async def edit_mailbox(request: Request, user: AdminUser, name: str) -> Response:
    form = dict(await request.form())
    return await anyio.to_thread.run_sync(_save, request, user, form, name)


@router.post("/mailboxes/{name}/state")
def mailbox_state(request: Request, user: AdminUser, name: str, action: FormStr):
    store = _svc(request).mailboxes.store
    _entry(_svc(request), name, editable=True)
    if action == "remove":
        store.remove(name, user.actor)
        flash(request, "ok", _tr(request, user, "Mailbox %(name)s removed: no longer polled; "
                                 "its mail stays, its queued work finishes. Audited.", name=name))
        return RedirectResponse("/admin/mailboxes", status_code=303)
    enabled = action == "enable"
    store.set_enabled(name, enabled, user.actor, "web admin")
    said = ENABLED if enabled else DISABLED
    flash(request, "ok", _tr(request, user, said, name=name))
    return RedirectResponse(f"/admin/mailboxes/{name}", status_code=303)


@router.post("/mailboxes/{name}/history")
def mailbox_history(request: Request, user: AdminUser, name: str, action: FormStr):
    svc = _svc(request)
    if action == "pause":
        history_import.pause(svc.db, name, user.actor)
        flash(request, "ok", _tr(request, user, "History import of %(name)s paused. New mail "
                                 "is still processed.", name=name))
    elif action in ("resume", "restart"):
        if action == "resume":
            history_import.resume(svc.db, name, user.actor)
        else:
            history_import.restart(svc.db, svc.jobs, name, user.actor)
        redispatch(svc)
        flash(request, "ok", _tr(request, user, "History import of %(name)s runs again.",
                                 name=name))
    return RedirectResponse(f"/admin/mailboxes/{name}#history", status_code=303)


@router.post("/mailboxes/{name}/poll")
def poll_now(request: Request, user: AdminUser, name: str):
    """Ask a worker to poll now (the first poll starts the history import)."""
    svc = _svc(request)
    _entry(svc, name)
    poll_soon(svc.db, name, user.actor, "poll asked for in the web admin")
    asked = enqueue_poll(svc.queue, svc.settings.queue_name)
    flash(request, "ok" if asked else "info", _tr(request, user, POLL_ASKED if asked
                                                  else POLL_WAITING))
    return RedirectResponse(f"/admin/mailboxes/{name}#history", status_code=303)


@router.get("/mailboxes/{name}/oauth")
def oauth_start(request: Request, user: AdminUser, name: str):
    """Send the admin's browser to the provider's consent page (code flow, PKCE, state)."""
    svc = _svc(request)
    mb = _entry(svc, name).config
    if mb is None or mb.oauth is None or mb.oauth.grant != "refresh_token":
        raise ConfigError(f"mailbox {name} does not sign in with OAuth2 as a person "
                          "(no oauth settings, or app-only access)")
    client = _client(svc, mb)
    verifier, challenge = oauth2.pkce_pair()
    state = secrets.token_urlsafe(24)
    redirect_uri = str(request.url_for("oauth_callback"))
    request.session["oauth"] = {"state": state, "mailbox": name, "verifier": verifier,
                                "redirect_uri": redirect_uri, "at": time.time()}
    url = oauth2.authorization_url(mb.oauth.authorize_url, client, redirect_uri, state,
                                   challenge, login_hint=mb.username)
    return RedirectResponse(url, status_code=303)


@router.get("/oauth/callback", name="oauth_callback")
def oauth_callback(request: Request, user: AdminUser, state: str = "", code: str = "",
                   error: str = "", error_description: str = ""):
    pending = request.session.pop("oauth", None) or {}
    expected = str(pending.get("state", ""))
    if not expected or not hmac.compare_digest(expected, state) or (
            time.time() - float(pending.get("at", 0)) > PENDING_S):
        raise PermanentError(_tr(request, user, "This sign-in was not started from this "
                                 "session, or it is too old. Start it again on the mailbox "
                                 "page."))
    name = str(pending["mailbox"])
    target = RedirectResponse(f"/admin/mailboxes/{name}#oauth", status_code=303)
    if error or not code:
        flash(request, "error", _tr(request, user, "The provider did not grant access "
                                    "(%(error)s: %(why)s). Nothing was stored.",
                                    error=error or "no code",
                                    why=redact_text(error_description)[:200]))
        return target
    svc = _svc(request)
    mb = svc.mailbox(name)
    answer = oauth2.exchange_code(_client(svc, mb), code, str(pending["redirect_uri"]),
                                  str(pending["verifier"]))
    assert answer.refresh_token
    svc.oauth_tokens.authorize(name, answer.refresh_token, answer.access_token,
                               answer.expires_at, actor=user.actor, actor_detail="web_consent")
    poll_soon(svc.db, name, user.actor, "OAuth2 consent given")
    report = check_config(svc, mb)
    if svc.mailboxes.entry(name).source == DATABASE:
        svc.mailboxes.store.record_check(name, report.ok, mailbox_admin.summary(report),
                                         report.as_dict())
    flash(request, "ok" if report.ok else "warn", _tr(
        request, user, "Signed in: the tokens of %(name)s are stored encrypted; polling uses "
        "them from the next poll. Check: %(result)s", name=name,
        result=mailbox_admin.summary(report)))
    return target


def _client(svc: Services, mb: Any) -> oauth2.OAuthClient:
    o = mb.oauth
    return oauth2.OAuthClient(o.token_url, o.client_id, o.secret(), tuple(o.scopes),
                              svc.settings.oauth_timeout)


def _entry(svc: Services, name: str, editable: bool = False) -> Any:
    try:
        entry = svc.mailboxes.entry(name, fresh=True)
    except KeyError:
        raise PermanentError(f"no mailbox named {name}") from None
    if editable and not entry.editable:
        raise ConfigError(f"mailbox {name} is defined in EMAIL_RAG_MAILBOXES: change it there")
    return entry


def _form(request: Request, entry: Any, raw: dict[str, Any], secrets_set: Any,
          report: Any = None, error: str | None = None, status_code: int = 200,
          name: str = "") -> Response:
    svc = _svc(request)
    name = entry.name if entry is not None else name
    token = next((t for t in token_health(svc.db) if t.mailbox == name), None) if name else None
    progress = history_import.of_mailbox(svc.db, name) if entry is not None else None
    poll = next((m for m in health.poll_health(svc) if m.name == name), None) if name else None
    return page(request, "mailbox.html", status_code, entry=entry, name=name,
                sections=mailbox_form.sections(raw, set(secrets_set)), report=report,
                error=error, token=token, progress=progress, poll=poll,
                sign_in=mailbox_form.sign_in_label(entry.config if entry else None),
                callback=str(request.url_for("oauth_callback")))


def _save(request: Request, user: Any, form: dict[str, Any], name: str | None) -> Response:
    svc = _svc(request)
    new = name is None
    name = str(form.get("name", "")).strip() if new else name
    entry = None if new else _entry(svc, name, editable=True)
    action = str(form.get("save", "check"))
    try:
        mf.check_name(name)
        changes = mailbox_form.changes(form)
        version = None if new else int(str(form.get("version") or 0)) or None
        result = mailbox_admin.save(svc, name, changes, user.actor, new=new, version=version,
                                    disabled=action == "disabled", check=action != "nocheck")
    except (EmailRagError, ValueError) as e:
        return _again(request, entry, form, name, None, redact_text(str(e)))
    if not result.saved:
        return _again(request, entry, form, name, result.report, _tr(
            request, user, "Not saved: the check failed (below). Fix the settings, or save "
            "the mailbox disabled and fix it later. Enter any password again: it is never "
            "shown back."))
    flash(request, "ok", _tr(request, user, "Mailbox %(name)s saved; %(state)s. Audited.",
                             name=name, state=_tr(request, user, "polled from the next poll")
                             if result.enabled else _tr(request, user, "disabled")))
    return RedirectResponse(f"/admin/mailboxes/{name}", status_code=303)


def _again(request: Request, entry: Any, form: dict[str, Any], name: str, report: Any,
           error: str) -> Response:
    """The form again with what the admin typed (never a secret) and why it was not saved."""
    base = dict(entry.raw) if entry is not None else {}
    try:
        raw = mf.apply(base, {k: v for k, v in mailbox_form.changes(form).items()
                              if k not in mf.SECRET_KEYS})
    except EmailRagError:
        raw = base
    return _form(request, entry, raw, entry.secrets_set if entry else (), report, error,
                 422, name=name)
