"""TLS to the mail servers: one way to build a verifying context, one way to name a refusal.

Every IMAP and SMTP connection is encrypted and its certificate checked (chain to a trusted
CA and the host name) unless the configuration says ``plain`` for a loopback host:

| security | IMAP | SMTP | when |
|---|---|---|---|
| ``tls`` | IMAPS, implicit TLS (993) | SMTPS, implicit TLS (465) | port 993 / 465 by default |
| ``starttls`` | STARTTLS on 143 | STARTTLS on 587 / 25 | any other port (``auto``) |
| ``plain`` | no encryption | no encryption | only configured, only a loopback host (127.0.0.0/8, ::1, localhost) |

``auto`` (the default) means verified TLS for every host, loopback included: ``tls`` on the
implicit-TLS port, ``starttls`` (required: a server without it is refused) on any other.
Plaintext is only the explicitly configured ``plain``, for a loopback host (a server on the
same machine: nothing crosses a network). ``plain`` for any other host is refused when the configuration is read. The trusted CAs are
the system store, or ``ca_file`` (a PEM file: a private CA) for one server.

A refused certificate is a configuration error, not a network hiccup: ``certificate_problem``
turns it into one sentence naming the host and the reason (self-signed, unknown CA, expired,
wrong host name) that the adapters raise as ``ImapTlsError`` / ``SmtpTlsError``.
"""

from __future__ import annotations

import ssl

from ..core.errors import ConfigError
from ..core.tls_policy import is_loopback, resolve_security

__all__ = ["certificate_problem", "certificate_summary", "client_context", "is_loopback",
           "resolve_security"]

def client_context(ca_file: str = "") -> ssl.SSLContext:
    """A client context that checks the certificate chain and the host name (the system CA
    store, or only ``ca_file`` when given), TLS 1.2 at least."""
    try:
        context = ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"CA file {ca_file!r} cannot be read: {e}") from e
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def certificate_problem(error: BaseException, host: str, port: int) -> str | None:
    """One sentence naming the host and why its certificate was refused, or None when
    ``error`` (or what caused it) is not a refused certificate."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            reason = e.verify_message or e.reason or str(e)
            return (f"the TLS certificate of {host}:{port} was refused: {reason}. Check the "
                    "host name, or set ca_file to the CA that signed it (a private CA)")
        e = e.__cause__ or e.__context__
    return None


def certificate_summary(sock: ssl.SSLSocket) -> dict[str, str]:
    """Subject, issuer, expiry and TLS version of a verified connection (for checks)."""
    cert = sock.getpeercert() or {}

    def name(field: str) -> str:
        parts = [f"{k}={v}" for rdn in cert.get(field, ()) for k, v in rdn]
        return ", ".join(parts)

    return {"subject": name("subject"), "issuer": name("issuer"),
            "expires": str(cert.get("notAfter", "")), "tls_version": sock.version() or "",
            "verified": "yes"}
