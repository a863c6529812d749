"""``email-rag mailboxes check``: each mailbox, step by step, with its real settings.

Steps: DNS, TCP, IMAP (TLS certificate and login with the configured mechanism), folders
(the polled ones, Sent by SPECIAL-USE), IDLE, SMTP (EHLO, TLS, AUTH, SIZE; a login but no
mail). A step that fails says what it means and what to do (``hint``); the later steps that
depend on it are skipped (``ok`` None).

Exit code per mailbox: 0 all fine; 3 the configuration is refused (certificate, login,
OAuth2 consent: retrying will not help); 1 anything else (DNS, network, a missing folder).
Nothing is written: no mail row, no audit event (an OAuth2 refresh it needs is stored like
any other).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.errors import (
    EmailRagError,
    ImapAuthError,
    ImapOAuthError,
    ImapTlsError,
    OAuthGrantError,
    SmtpPermanentError,
    SmtpTlsError,
)
from ..core.jsonvalue import JsonObject, JsonValue
from ..core.redact import redact_text

if TYPE_CHECKING:
    from ..core.settings import MailboxConfig
    from ..wiring.services import Services

REFUSED = 3
FAILED = 1


@dataclass(frozen=True)
class Step:
    """One step of a mailbox's check: ``ok`` None when skipped; ``data`` what it found
    (the certificate, the SMTP report, the Sent folder, ...)."""

    name: str
    ok: bool | None
    detail: str
    hint: str = ""
    exit_code: int = 0
    data: JsonObject = field(default_factory=dict)

    def as_dict(self) -> JsonObject:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "hint": self.hint,
                "exit_code": self.exit_code, **self.data}


@dataclass(frozen=True)
class MailboxReport:
    mailbox: str
    steps: list[Step]

    @property
    def exit_code(self) -> int:
        return max((s.exit_code for s in self.steps), default=0)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def as_dict(self) -> JsonObject:
        """The JSON of ``email-rag mailboxes check --json``."""
        return {"mailbox": self.mailbox, "ok": self.ok, "exit_code": self.exit_code,
                "steps": [s.as_dict() for s in self.steps]}


def _step(steps: list[Step], name: str, ok: bool | None, detail: str,
          hint: str = "", exit_code: int = 0, **data: JsonValue) -> bool:
    steps.append(Step(name, ok, redact_text(detail)[:500], hint,
                      exit_code if ok is False else 0, data))
    return bool(ok)


def _skip(steps: list[Step], *names: str) -> None:
    for name in names:
        _step(steps, name, None, "skipped (an earlier step failed)")


def _network(steps: list[Step], prefix: str, host: str, port: int) -> bool:
    try:
        addresses = sorted({a[4][0] for a in socket.getaddrinfo(host, port,
                                                                type=socket.SOCK_STREAM)})
    except OSError as e:
        return _step(steps, f"{prefix}dns", False, f"{host} does not resolve: {e}",
                     "check the host name (a typo, or a name only an internal DNS knows)",
                     FAILED)
    _step(steps, f"{prefix}dns", True, f"{host} -> {', '.join(addresses[:4])}")
    started = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=5):
            pass
    except OSError as e:
        return _step(steps, f"{prefix}tcp", False, f"{host}:{port}: {e}",
                     "nothing listens there or a firewall blocks it: check the port and "
                     "that outgoing connections are allowed", FAILED)
    return _step(steps, f"{prefix}tcp", True,
                 f"{host}:{port} connected in {(time.perf_counter() - started) * 1000:.0f} ms")


def _auth_hint(mb: MailboxConfig, error: Exception) -> str:
    if isinstance(error, (ImapOAuthError, OAuthGrantError)) or "OAuth2" in str(error):
        return (f"the OAuth2 consent is missing, revoked or expired: sign in on the mailbox's "
                f"page of the web admin, or run `email-rag mailboxes authorize {mb.name}` "
                "(Microsoft: AADSTS700082 = unused for 90 days; "
                "an expired client secret needs a new one in the app registration)")
    if mb.auth == "password" and mb.provider:
        return (f"{mb.provider} refuses passwords for IMAP/SMTP: set auth xoauth2 and the "
                "oauth section (docs/mailboxes.md)")
    return ("the server refused the login: check the username and the secret; for OAuth2 "
            "the app's permissions (IMAP.AccessAsUser.All / SMTP.Send, or the mailbox "
            "permission of an app-only service principal)")


def check_imap(svc: Services, mb: MailboxConfig, steps: list[Step]) -> None:
    if not _network(steps, "imap ", mb.host, mb.port):
        _skip(steps, "imap tls", "imap login", "folders", "idle")
        return
    imap = svc.imap_mailbox(mb, 10)
    try:
        imap.connect()
    except ImapTlsError as e:
        _step(steps, "imap tls", False, str(e), "set ca_file to the CA that signed the "
              "server's certificate (a private CA), or fix host (it must match the "
              "certificate)", REFUSED)
        _skip(steps, "imap login", "folders", "idle")
        return
    except ImapAuthError as e:
        _step(steps, "imap tls", True, f"{mb.mode}: verified" if mb.mode != "plain" else
              "plain (loopback)")
        _step(steps, "imap login", False, str(e), _auth_hint(mb, e), REFUSED)
        _skip(steps, "folders", "idle")
        return
    except EmailRagError as e:
        _step(steps, "imap tls", False, str(e), "the server did not answer as an IMAP "
              "server in time: check port and security (993 = tls, 143 = starttls)", FAILED)
        _skip(steps, "imap login", "folders", "idle")
        return
    try:
        cert = imap.peer_certificate()
        _step(steps, "imap tls", True, (f"{mb.mode} {cert['tls_version']}, subject "
                                        f"{cert['subject']}, issuer {cert['issuer']}, expires "
                                        f"{cert['expires']}, verified") if cert
              else "plain (loopback host, no encryption)", certificate=cert)
        _step(steps, "imap login", True, f"{mb.auth} as {mb.username}", mechanism=mb.auth)
        missing = [f for f in mb.folders if not imap.folder_exists(f)]
        sent = mb.sent_folder or imap.special_folder(b"\\Sent")
        how = " (configured)" if mb.sent_folder else " (SPECIAL-USE \\Sent)" if sent else ""
        found = sent or "no folder marked \\Sent ('Sent' is created on first use)"
        detail = f"polled {', '.join(mb.folders)}; Sent: {found}{how}"
        if missing:
            _step(steps, "folders", False, f"missing: {', '.join(missing)}; {detail}",
                  "create the folder or fix 'folders' (names are case-sensitive, e.g. "
                  "'[Gmail]/...')", FAILED, sent_folder=sent)
        else:
            _step(steps, "folders", True, detail, sent_folder=sent)
        caps = imap.capabilities()
        _step(steps, "idle", True, "IDLE supported (push)" if "IDLE" in caps else
              "no IDLE: `email-rag idle` falls back to polling", idle="IDLE" in caps)
    except EmailRagError as e:
        _step(steps, "folders", False, str(e), "the server dropped the connection", FAILED)
    finally:
        imap.close()


def check_smtp(svc: Services, mb: MailboxConfig, steps: list[Step]) -> None:
    sender = svc.mail_sender_of(mb)
    config = sender.config
    where = "own" if mb.smtp is not None else "global relay"
    if not _network(steps, "smtp ", config.host, config.port):
        _skip(steps, "smtp")
        return
    try:
        report = sender.probe()
    except SmtpTlsError as e:
        _step(steps, "smtp", False, f"{where}: {e}", "set ca_file for the SMTP server or fix "
              "its host / security (465 = tls, 587 = starttls)", REFUSED)
        return
    except SmtpPermanentError as e:
        _step(steps, "smtp", False, f"{where}: {e}", _auth_hint(mb, e) + "; Microsoft 365: "
              "SMTP AUTH must be enabled for the mailbox (Set-CASMailbox "
              "-SmtpClientAuthenticationDisabled $false)", REFUSED)
        return
    except EmailRagError as e:
        hint = _auth_hint(mb, e) if "OAuth2" in str(e) else "the server did not complete EHLO"
        code = REFUSED if "refused the" in str(e) and "grant" in str(e) else FAILED
        _step(steps, "smtp", False, f"{where}: {e}", hint, code)
        return
    tls = report.get("tls") or {}
    _step(steps, "smtp", True,
          f"{where} {config.host}:{config.port} {report['mode']}"
          f"{' ' + tls.get('tls_version', '') if tls else ''}; AUTH offered: "
          f"{' '.join(report['auth_offered']) or 'none'}; "
          f"{'logged in by ' + str(report.get('auth_used')) if report.get('auth_used') else 'no login configured'}"
          f"; size limit {report['size_limit'] or 'none announced'}", smtp=report)


def check_config(svc: Services, mb: MailboxConfig) -> MailboxReport:
    """The check of these settings (a mailbox being added or changed: not saved yet)."""
    steps: list[Step] = []
    check_imap(svc, mb, steps)
    check_smtp(svc, mb, steps)
    return MailboxReport(mb.name, steps)


def check_mailboxes(svc: Services, names: list[str]) -> list[MailboxReport]:
    return [check_config(svc, svc.mailbox(name)) for name in names]
