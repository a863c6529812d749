"""SMTP adapter (smtplib): the only module that talks SMTP.

It sends one message and says which of three things happened, because the
caller must treat them differently:

| situation | error | sent? |
|---|---|---|
| connection refused / lost before DATA, 4xx at MAIL/RCPT/DATA | SmtpTransientError | no (known) |
| 5xx at MAIL/RCPT/DATA or after the body | SmtpPermanentError | no (known) |
| 4xx after the body | SmtpTransientError | no (known) |
| timeout or connection lost after the body was sent, before the reply | SmtpOutcomeUnknownError | maybe |
| 250 after the body | (returns the reply) | yes |
| certificate refused (self-signed, unknown CA, expired, wrong host) | SmtpTlsError (permanent) | no (known) |
| server without STARTTLS where STARTTLS is configured | SmtpTlsError (permanent) | no (known) |
| OAuth2 token endpoint down / refresh refused | SmtpTransientError (before connecting) | no (known) |
| OAuth2 token refused by the server (535) | SmtpTransientError; the cached token is dropped | no (known) |

Security (``adapters.tls``): ``tls`` (SMTPS, 465), ``starttls`` (587) or ``plain`` (a loopback
relay only), the certificate and host name always verified. Authentication: ``password``
(AUTH PLAIN/LOGIN), ``xoauth2`` or ``oauthbearer`` with a token from ``tokens``
(``adapters.oauth2``); nothing secret is ever part of an error text.

One call is one try: the adapter never retries by itself. A transient error is retried by
the send job's cycle, four attempts in all by default (the first one and three retries,
``EMAIL_RAG_MAX_ATTEMPTS``, ``core.retry``); an unknown outcome is reconciled, never
retried blindly (``sending.sender``).
"""

from __future__ import annotations

import re
import smtplib
import ssl
from dataclasses import dataclass, field

from ..core.errors import (
    ConfigError,
    OAuthGrantError,
    OAuthUnavailableError,
    SmtpOutcomeUnknownError,
    SmtpPermanentError,
    SmtpTlsError,
    SmtpTransientError,
)
from .oauth2 import TokenSource, sasl_oauthbearer, sasl_xoauth2
from .tls import certificate_problem, certificate_summary, client_context, resolve_security

AUTH_METHODS = ("password", "xoauth2", "oauthbearer")


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    user: str = ""
    password: str = ""
    starttls: bool = False  # the older switch: security "starttls"
    timeout: float = 30.0
    security: str = "auto"  # auto | tls | starttls | plain (adapters.tls)
    ca_file: str = ""  # PEM file of the CA(s) to trust instead of the system store
    auth: str = "password"  # password | xoauth2 | oauthbearer
    tokens: TokenSource | None = field(default=None, compare=False)
    mode: str = field(init=False, default="")

    def __post_init__(self) -> None:
        wanted = "starttls" if self.starttls and self.security in ("", "auto") else self.security
        object.__setattr__(self, "mode", resolve_security(wanted, self.host, self.port, "smtp"))
        if self.auth not in AUTH_METHODS:
            raise ConfigError(f"SMTP auth {self.auth!r} is not one of {', '.join(AUTH_METHODS)}")
        if self.auth != "password" and self.tokens is None:
            raise ConfigError(f"SMTP auth {self.auth} at {self.host}:{self.port} needs an "
                              "OAuth2 token source (the mailbox's oauth settings)")

    def __repr__(self) -> str:
        return f"SmtpConfig({self.host}:{self.port}, {self.mode}, user={self.user!r})"

    @classmethod
    def from_settings(cls, s) -> SmtpConfig:
        return cls(s.smtp_host, s.smtp_port, s.smtp_user, s.smtp_password.get_secret_value(),
                   s.smtp_starttls, s.smtp_timeout, security=s.smtp_security,
                   ca_file=s.smtp_ca_file)


def _reply_error(stage: str, code: int, text: bytes | str) -> Exception:
    msg = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    answer = f"{code} {msg}".strip()
    if 500 <= code < 600:
        return SmtpPermanentError(f"relay refused at {stage}: {answer}", code=code, answer=answer)
    return SmtpTransientError(f"relay deferred at {stage}: {answer}", code=code, answer=answer)


class SmtpSender:
    def __init__(self, config: SmtpConfig) -> None:
        self.config = config

    def send(self, message: bytes, mail_from: str, rcpt_to: list[str]) -> str:
        """Send one message; returns the relay's final answer (e.g. '250 2.0.0 Ok')."""
        c = self.config
        token = self._token()
        smtp = self._open()
        body_sent = False
        try:
            self._authenticate(smtp, token)
            code, text = smtp.mail(mail_from)
            if code != 250:
                raise _reply_error("MAIL FROM", code, text)
            for rcpt in rcpt_to:
                code, text = smtp.rcpt(rcpt)
                if code not in (250, 251):
                    raise _reply_error(f"RCPT TO {rcpt}", code, text)
            code, text = smtp.docmd("DATA")
            if code != 354:
                raise _reply_error("DATA", code, text)
            body_sent = True
            smtp.send(_dot_stuffed(message))
            code, text = smtp.getreply()
            if code != 250:
                raise _reply_error("end of data", code, text)
            return f"{code} {text.decode(errors='replace')}"
        except smtplib.SMTPAuthenticationError as e:
            if token is not None and c.tokens is not None:
                c.tokens.invalidate(token)
                raise SmtpTransientError(
                    f"SMTP server {c.host}:{c.port} refused the OAuth2 token of {c.user!r} "
                    f"({c.auth}, {e.smtp_code}); a new token is fetched on the next try") from e
            raise SmtpPermanentError(f"SMTP login refused for user {c.user!r}: {e.smtp_code}") from e
        except (SmtpTransientError, SmtpPermanentError):
            raise
        except (TimeoutError, OSError, smtplib.SMTPException) as e:
            if body_sent:
                raise SmtpOutcomeUnknownError(
                    f"connection lost or timed out after the message body was sent ({e}); "
                    "the relay may have accepted it") from e
            raise SmtpTransientError(f"SMTP conversation failed before DATA: {e}") from e
        finally:
            try:
                smtp.quit()
            except (OSError, smtplib.SMTPException):
                smtp.close()


    def greet(self) -> str:
        """Connect and secure the connection as ``send`` does, then QUIT (``status``):
        the security in force and the TLS version."""
        smtp = self._open()
        try:
            sock = smtp.sock
            return (f"{self.config.mode} {sock.version()}" if isinstance(sock, ssl.SSLSocket)
                    else self.config.mode)
        finally:
            try:
                smtp.quit()
            except (OSError, smtplib.SMTPException):
                smtp.close()

    def probe(self) -> dict[str, object]:
        """Connect, secure, authenticate and QUIT without sending (``mailboxes check``):
        the certificate, the AUTH mechanisms and SIZE limit offered. Raises the same errors
        as ``send`` before DATA."""
        c = self.config
        token = self._token()
        smtp = self._open()
        try:
            sock = smtp.sock
            report: dict[str, object] = {
                "mode": c.mode,
                "auth_offered": smtp.esmtp_features.get("auth", "").split(),
                "size_limit": int(smtp.esmtp_features.get("size", "0").strip() or 0),
                "tls": certificate_summary(sock) if isinstance(sock, ssl.SSLSocket) else {}}
            if token is not None or c.user:
                self._authenticate(smtp, token)
                report["authenticated_as"] = c.user
                report["auth_used"] = c.auth
            return report
        except smtplib.SMTPAuthenticationError as e:
            if token is not None and c.tokens is not None:
                c.tokens.invalidate(token)
            raise SmtpPermanentError(f"SMTP login ({c.auth}) refused for user {c.user!r}: "
                                     f"{e.smtp_code}") from e
        except (TimeoutError, OSError, smtplib.SMTPException) as e:
            raise SmtpTransientError(f"SMTP conversation with {c.host}:{c.port} failed: "
                                     f"{e}") from e
        finally:
            try:
                smtp.quit()
            except (OSError, smtplib.SMTPException):
                smtp.close()

    def _open(self) -> smtplib.SMTP:
        """Connect, EHLO and (STARTTLS) secure the connection; errors before any mail."""
        c = self.config
        try:
            context = client_context(c.ca_file) if c.mode != "plain" else None
        except ConfigError as e:
            raise SmtpTlsError(f"SMTP {c.host}:{c.port}: {e}") from e
        try:
            smtp = (smtplib.SMTP_SSL(c.host, c.port, timeout=c.timeout, context=context)
                    if c.mode == "tls" else smtplib.SMTP(c.host, c.port, timeout=c.timeout))
        except (OSError, smtplib.SMTPException) as e:
            problem = certificate_problem(e, c.host, c.port)
            if problem:
                raise SmtpTlsError(f"SMTP: {problem}") from e
            raise SmtpTransientError(f"cannot connect to {c.host}:{c.port}: {e}") from e
        try:
            smtp.ehlo()
            if c.mode == "starttls":
                if not smtp.has_extn("starttls"):
                    raise SmtpTlsError(
                        f"SMTP server {c.host}:{c.port} does not offer STARTTLS; refusing to "
                        "send in clear (set security 'tls' for port 465, or security 'plain' "
                        "explicitly for a loopback server without TLS: EMAIL_RAG_SMTP_SECURITY "
                        "for the global relay, smtp.security of a mailbox)")
                smtp.starttls(context=context)
                smtp.ehlo()
            return smtp
        except Exception as e:
            smtp.close()
            if isinstance(e, SmtpTlsError):
                raise
            problem = certificate_problem(e, c.host, c.port)
            if problem:
                raise SmtpTlsError(f"SMTP: {problem}") from e
            if isinstance(e, OSError | smtplib.SMTPException):
                raise SmtpTransientError(f"SMTP greeting or STARTTLS with {c.host}:{c.port} "
                                         f"failed: {e}") from e
            raise

    def _token(self) -> str | None:
        """The OAuth2 access token (before connecting: no connection for nothing)."""
        c = self.config
        if c.auth == "password" or c.tokens is None:
            return None
        try:
            return c.tokens.access_token()
        except OAuthGrantError as e:
            raise SmtpTransientError(f"no OAuth2 token for SMTP as {c.user!r}: {e}") from e
        except OAuthUnavailableError as e:
            raise SmtpTransientError(f"no OAuth2 token for SMTP as {c.user!r}: {e}") from e

    def _authenticate(self, smtp: smtplib.SMTP, token: str | None) -> None:
        c = self.config
        if token is None:
            if c.user:
                smtp.login(c.user, c.password)
            return
        mech = c.auth.upper()
        if not smtp.has_extn("auth") or mech not in smtp.esmtp_features.get("auth", "").upper().split():
            raise SmtpPermanentError(f"SMTP server {c.host}:{c.port} does not offer AUTH {mech} "
                                     f"(it offers: {smtp.esmtp_features.get('auth', 'none')})")
        initial = (sasl_xoauth2(c.user, token) if c.auth == "xoauth2"
                   else sasl_oauthbearer(c.user, token))

        def answer(challenge: bytes | None = None) -> str:
            # a 334 after the initial response carries the server's error (JSON): answer
            # empty, the server then ends the exchange with 535
            return initial if challenge is None else ""

        smtp.auth(mech, answer, initial_response_ok=True)


def _dot_stuffed(message: bytes) -> bytes:
    """CRLF line ends and leading dots doubled, as smtplib.SMTP.data() does."""
    data = re.sub(rb"(?:\r\n|\n|\r(?!\n))", b"\r\n", message)
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"
