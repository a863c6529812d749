"""Test servers for real mailboxes: a test CA, TLS SMTP (aiosmtpd) with AUTH XOAUTH2 /
OAUTHBEARER, a local OAuth2 token server (token + introspection endpoints), and the
harness's private Dovecot with TLS and an ``oauth2`` passdb whose introspection URL is that
token server.

Everything runs on this machine on free loopback ports; certificates are made by the test
(``cryptography``), never taken from the system.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP as SMTPProtocol
from aiosmtpd.smtp import AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from email_rag_harness.testing.dovecot import Dovecot, free_port
from email_rag_harness.testing.oauth_server import TokenServer


# --- certificates ---
def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class ServerCert:
    cert_path: Path
    key_path: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_path, self.key_path)
        return ctx


class TestCA:
    """A certificate authority made for one test run (files in ``folder``)."""

    __test__ = False

    def __init__(self, folder: Path, name: str = "email-rag test CA") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.key = _key()
        now = dt.datetime.now(dt.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - dt.timedelta(hours=1))
                     .not_valid_after(now + dt.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
                     .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                                  False, False), True)
                     .sign(self.key, hashes.SHA256()))
        self.ca_file = self.folder / f"ca-{secrets.token_hex(3)}.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, hosts: list[str], name: str = "server", expired: bool = False) -> ServerCert:
        """A server certificate for ``hosts`` (DNS names or IP addresses) signed by this CA."""
        key = _key()
        now = dt.datetime.now(dt.UTC)
        sans: list[x509.GeneralName] = []
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                sans.append(x509.DNSName(h))
        start, end = ((now - dt.timedelta(days=3), now - dt.timedelta(days=1)) if expired
                      else (now - dt.timedelta(hours=1), now + dt.timedelta(days=1)))
        cert = (x509.CertificateBuilder().subject_name(_name(hosts[0]))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName(sans), False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
                .sign(self.key, hashes.SHA256()))
        return self._write(name, cert, key)

    def _write(self, name: str, cert: x509.Certificate, key: Any) -> ServerCert:
        tag = f"{name}-{secrets.token_hex(3)}"
        cert_path, key_path = self.folder / f"{tag}.crt", self.folder / f"{tag}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(key))
        os.chmod(key_path, 0o644)  # Dovecot reads it (as root at start-up; harmless: test key)
        return ServerCert(cert_path, key_path)


def self_signed(folder: Path, host: str = "127.0.0.1") -> ServerCert:
    """A certificate for ``host`` that signs itself (no CA anyone trusts)."""
    ca = TestCA(folder, name="unused")  # only for its folder and file naming
    key = _key()
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(host)).issuer_name(_name(host))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(
                ipaddress.ip_address(host))]), False)
            .sign(key, hashes.SHA256()))
    return ca._write("selfsigned", cert, key)


# --- SMTP with TLS and OAuth2 ---
def _sasl_bearer(raw: bytes) -> tuple[str, str]:
    """(user, token) from an XOAUTH2 or OAUTHBEARER initial response."""
    text = raw.decode("utf-8", "replace")
    user, token = "", ""
    for part in text.split("\x01"):
        if part.startswith("user="):
            user = part[5:]
        elif part.startswith("auth=Bearer "):
            token = part[12:]
        elif part.startswith("n,a="):
            user = part[4:].split(",", 1)[0]
    return user, token


class _SmtpHandler:
    def __init__(self, server: TlsSmtpServer) -> None:
        self.server = server

    async def _bearer(self, smtp: SMTPProtocol, args: list[str], mech: str) -> AuthResult:
        if len(args) < 2:
            raw = await smtp.challenge_auth("")
            if not isinstance(raw, bytes):
                return AuthResult(success=False)
        else:
            raw = base64.b64decode(args[1])
        user, token = _sasl_bearer(raw)
        tokens = self.server.tokens
        holder = tokens.valid(token) if tokens is not None else None
        self.server.auths.append((mech, user, holder is not None))
        if holder is not None and holder in (user, "app:" + tokens.client_id):
            return AuthResult(success=True, auth_data=user)
        return AuthResult(success=False, handled=False,
                          message="535 5.7.8 Authentication credentials invalid")

    async def auth_XOAUTH2(self, smtp: SMTPProtocol, args: list[str]) -> AuthResult:  # noqa: N802
        return await self._bearer(smtp, args, "XOAUTH2")

    async def auth_OAUTHBEARER(self, smtp: SMTPProtocol, args: list[str]) -> AuthResult:  # noqa: N802
        return await self._bearer(smtp, args, "OAUTHBEARER")

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.server.received.append((envelope.mail_from, list(envelope.rcpt_tos),
                                     envelope.original_content or envelope.content,
                                     getattr(session, "auth_data", None)))
        return "250 2.0.0 Ok: queued"


class TlsSmtpServer:
    """aiosmtpd on a free loopback port: ``mode`` 'starttls' (STARTTLS offered and required
    before AUTH), 'tls' (implicit TLS) or 'plain'; AUTH XOAUTH2 / OAUTHBEARER checked
    against ``tokens`` (a TokenServer)."""

    def __init__(self, cert: ServerCert | None, mode: str = "starttls",
                 tokens: TokenServer | None = None, size_limit: int = 10_000_000) -> None:
        self.mode, self.tokens = mode, tokens
        self.received: list[tuple[str, list[str], bytes, Any]] = []
        self.auths: list[tuple[str, str, bool]] = []
        self.port = free_port()
        context = cert.server_context() if cert is not None else None
        kwargs: dict[str, Any] = {"hostname": "127.0.0.1", "port": self.port,
                                  "decode_data": False, "data_size_limit": size_limit,
                                  # implicit TLS: aiosmtpd only knows STARTTLS as "TLS"
                                  "auth_require_tls": mode == "starttls"}
        if mode == "starttls":
            kwargs.update(tls_context=context, require_starttls=True)
        elif mode == "tls":
            kwargs.update(ssl_context=context)
        self._controller = Controller(_SmtpHandler(self), **kwargs)

    def start(self) -> TlsSmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def __enter__(self) -> TlsSmtpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- Dovecot with TLS and an oauth2 passdb ---
class TlsDovecot(Dovecot):
    """The harness's private Dovecot with STARTTLS on ``port``, implicit TLS on ``tls_port``,
    logins by password (PLAIN) and, given ``tokens``, by OAuth2 bearer token (XOAUTH2,
    OAUTHBEARER) checked against that token server's introspection endpoint."""

    def __init__(self, cert: ServerCert, tokens: TokenServer | None = None,
                 sent_name: str = "Sent") -> None:
        super().__init__(tls=(cert.cert_path, cert.key_path), sent_name=sent_name,
                         introspection_url=tokens.url + "/introspect" if tokens else "")
