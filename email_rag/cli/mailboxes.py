"""``email-rag mailboxes``: the mailboxes' logins.

``mailboxes authorize NAME``: the one-time OAuth2 consent of an admin for a mailbox on the
refresh-token grant (the instructions go to stderr; stdout carries only the outcome, so
``--json`` stays one JSON object). By default the authorization-code flow (with PKCE): it prints the
address to open, the admin signs in as the mailbox (or an admin of it) and pastes the code
or the whole address the browser was sent to. ``--device``: the device-code flow (a code
typed at the provider's page, e.g. on another machine). The refresh token is stored
encrypted in MariaDB; a mailbox whose refresh was refused (ALARM in ``status``) polls again
on its next try, nothing lost (``email-rag poll --force NAME`` to try at once).

``mailboxes check [NAME]``: see ``email_rag/ops/mailbox_check.py``.

``mailboxes add|edit|list|disable|enable|remove`` and ``mailboxes history``: see
``email_rag/cli/mailbox_settings.py``.

``mailboxes cutoff NAME DATE``: the mailbox's history cut-off (mail sent before it is
history: stored and indexed, never drafted; ``email_rag/ingest/history.py``), audited;
it applies to mail stored from then on.
"""

from __future__ import annotations

import secrets
import sys

from ..core.actors import command_line
from ..core.errors import ConfigError, EmailRagError
from . import mailbox_settings
from .mailbox_settings import report_lines
from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("mailboxes", parents=[common], help="mailboxes: add, edit, list, "
                       "disable, remove; OAuth2 authorization, connection checks, history "
                       "import")
    msub = p.add_subparsers(dest="mailboxes_command", metavar="ACTION")
    msub.required = True
    a = msub.add_parser("authorize", parents=[common],
                        help="consent once to OAuth2 access for a mailbox (stores its "
                        "refresh token, encrypted)")
    a.add_argument("name", help="the mailbox's name")
    a.add_argument("--device", action="store_true",
                   help="device-code flow: type a code at the provider's page")
    a.set_defaults(handler=run_authorize)
    c = msub.add_parser("check", parents=[common],
                        help="connect with the real settings: DNS, TCP, TLS, login, folders, "
                        "IDLE, SMTP; exit 0 all fine, 1 a check failed, 3 a login or "
                        "certificate was refused")
    c.add_argument("name", nargs="?", help="one mailbox (default: all)")
    c.set_defaults(handler=run_check)
    h = msub.add_parser("cutoff", parents=[common],
                        help="set the history cut-off: mail sent before DATE is history "
                        "(indexed, never drafted); audited")
    h.add_argument("name", help="the mailbox's name")
    h.add_argument("date", help="ISO date or time, e.g. 2026-11-01 or 2026-11-01T08:00+01:00 "
                   "(no zone: UTC)")
    h.set_defaults(handler=run_cutoff)
    mailbox_settings.register(msub, common)


def run_cutoff(args, svc) -> Outcome:
    from datetime import datetime

    from ..ingest import history
    from ..ingest.mailbox_state import ensure_mailbox

    try:
        config = svc.mailbox(args.name)
    except KeyError:
        raise ConfigError(f"no mailbox named {args.name} (`email-rag mailboxes list`)") from None
    try:
        when = datetime.fromisoformat(args.date)
    except ValueError:
        raise ConfigError(f"not an ISO date or time: {args.date!r}") from None
    ensure_mailbox(svc.db, config)
    changed = history.set_cutoff(svc.db, config.name, when, command_line(None))
    return Outcome(ExitCode.OK, f"Mailbox {config.name}: history cut-off {changed['from']} -> "
                   f"{changed['to']} (UTC). Mail stored from now on that was sent before it "
                   "is history; stored mail keeps its kind.", changed)


def _oauth_client(svc, name: str):
    from ..adapters.oauth2 import OAuthClient

    try:
        mb = svc.mailbox(name)
    except KeyError:
        raise ConfigError(f"no mailbox named {name} (`email-rag mailboxes list`)") from None
    if mb.oauth is None:
        raise ConfigError(f"mailbox {name} has no 'oauth' settings: it logs in with a "
                          "password; nothing to authorize")
    o = mb.oauth
    return mb, OAuthClient(o.token_url, o.client_id, o.secret(), tuple(o.scopes),
                           svc.settings.oauth_timeout)


def run_authorize(args, svc) -> Outcome:
    from ..adapters import oauth2

    mb, client = _oauth_client(svc, args.name)
    o = mb.oauth
    if o.grant == "client_credentials":
        token = oauth2.request_token(client, {"grant_type": "client_credentials"})
        return Outcome(ExitCode.OK, f"Mailbox {mb.name} uses app-only access (client "
                       "credentials): nothing to authorize. The token endpoint granted a "
                       f"token valid for {token.expires_at - _now():.0f} s.",
                       {"mailbox": mb.name, "grant": o.grant})
    if args.device:
        if not o.device_url:
            raise ConfigError(f"mailbox {mb.name}: no device_url (Gmail offers no device "
                              "flow for mail scopes; use the code flow)")
        device = oauth2.start_device_flow(client, o.device_url)
        print(device.message or f"Open {device.verification_uri} and enter the code "
              f"{device.user_code} (signed in as {mb.username}).", file=sys.stderr, flush=True)
        answer = oauth2.finish_device_flow(client, device)
        how = "device_code"
    else:
        verifier, challenge = oauth2.pkce_pair()
        state = secrets.token_urlsafe(12)
        url = oauth2.authorization_url(o.authorize_url, client, o.redirect_uri, state,
                                       challenge, login_hint=mb.username)
        print(f"1. Open this address and sign in as {mb.username}:\n\n{url}\n\n"
              f"2. After consenting, the browser goes to {o.redirect_uri}?code=... (the page "
              "may not load: that is fine). Paste that whole address, or just the code:",
              file=sys.stderr, flush=True)
        pasted = sys.stdin.readline()
        code = oauth2.code_from(pasted, state)
        if not code:
            return Outcome(ExitCode.ERROR, "No code was pasted; nothing was stored. Run "
                           f"`email-rag mailboxes authorize {mb.name}` again.")
        answer = oauth2.exchange_code(client, code, o.redirect_uri, verifier)
        how = "authorization_code"
    assert answer.refresh_token
    svc.oauth_tokens.authorize(mb.name, answer.refresh_token, answer.access_token,
                               answer.expires_at, actor=command_line(None), actor_detail=how)
    return Outcome(ExitCode.OK, f"Mailbox {mb.name} is authorized (its refresh token is "
                   "stored encrypted). Polling and sending use it from their next try; "
                   f"`email-rag poll --force {mb.name}` polls now.",
                   {"mailbox": mb.name, "grant": o.grant, "how": how})


def _now() -> float:
    import time

    return time.time()


def run_check(args, svc) -> Outcome:
    from ..ops.mailbox_check import check_mailboxes

    names = [args.name] if args.name else [m.name for m in svc.mailboxes.active(fresh=True)]
    if not names:
        return Outcome(ExitCode.ERROR, "No mailbox is polled (add one: web admin or "
                       "`email-rag mailboxes add`; or EMAIL_RAG_MAILBOXES).")
    try:
        reports = check_mailboxes(svc, names)
    except KeyError as e:
        raise EmailRagError(f"no mailbox named {e.args[0]} (`email-rag mailboxes "
                            "list`)") from None
    worst = max((r.exit_code for r in reports), default=0)
    lines = [line for r in reports for line in report_lines(r)]
    message = ("All mailbox checks passed." if worst == 0 else
               "A login or certificate was refused: the configuration must change (see "
               "the hints)." if worst == 3 else "A check failed (see the hints).")
    return Outcome(ExitCode(worst), message, {"mailboxes": [r.as_dict() for r in reports]},
                   "\n".join(lines))

