"""Which transport security a mail server connection uses (pure: no I/O).

``auto`` (the default) means verified TLS for every host, loopback included: ``tls`` on the
implicit-TLS port (IMAPS 993, SMTPS 465), ``starttls`` (required) on any other port.
Plaintext is only ever the explicitly configured ``plain``, and only to a loopback host.
The TLS itself (verified contexts, certificate errors) is ``adapters.tls``.
"""

from __future__ import annotations

import ipaddress

from .errors import ConfigError

SECURITY_MODES = ("auto", "tls", "starttls", "plain")
IMPLICIT_TLS_PORTS = {"imap": 993, "smtp": 465}


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_security(security: str, host: str, port: int, protocol: str) -> str:
    """The security in force (``tls``, ``starttls`` or ``plain``) for ``protocol`` (imap or
    smtp) at host:port; ``ConfigError`` for plaintext to a host that is not loopback."""
    mode = (security or "auto").lower()
    if mode not in SECURITY_MODES:
        raise ConfigError(f"security {security!r} for {host}:{port} is not one of "
                          f"{', '.join(SECURITY_MODES)}")
    if mode == "auto":
        return "tls" if port == IMPLICIT_TLS_PORTS[protocol] else "starttls"
    if mode == "plain" and not is_loopback(host):
        raise ConfigError(f"{protocol.upper()} without encryption to {host}:{port} is refused: "
                          "plaintext is allowed only for a loopback host; use security "
                          "'tls' or 'starttls'")
    return mode
