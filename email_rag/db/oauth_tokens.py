"""The OAuth2 tokens of the mailboxes, encrypted at rest (one row per mailbox).

Every token is encrypted with Fernet (AES-128-CBC + HMAC-SHA256) under a key derived from
``oauth_token_key`` / ``oauth_token_key_file``; MariaDB never sees a token in clear, and a
row read with another key is refused (``ConfigError``), never used. Each status change is
one statement with its audit event in the same transaction:

| event | status | audit |
|---|---|---|
| an admin authorized (``mailboxes authorize``) | authorized, generation + 1 | ``oauth_authorized`` |
| a refresh answered (maybe rotated) | authorized (generation + 1 if rotated) | ``oauth_refresh_token_rotated`` when rotated |
| a refresh was refused (invalid_grant ...) | needs_authorization | ``oauth_refresh_failed`` (with what the admin must do) |

A rotated refresh token is stored only over the generation its refresh used
(compare-and-swap): a slower process never overwrites a newer token with an older one.
Refreshes of one mailbox are serialized by a MariaDB named lock (``refresh_lock``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from ..core.errors import ConfigError, OAuthUnavailableError
from ..core.redact import redact_text
from ..core.rows import FromRow, Row
from ..core.states import Actor
from .audit import AuditEvent, write_events
from .connection import Database
from .queries import sql


class TokenStatus(StrEnum):
    AUTHORIZED = "authorized"  # a refresh token that worked (or was just granted)
    NEEDS_AUTHORIZATION = "needs_authorization"  # refused: an admin must authorize again


@dataclass(frozen=True)
class TokenRecord:
    mailbox: str
    refresh_token: str | None = field(repr=False)
    access_token: str | None = field(repr=False)
    access_expires_at: float
    generation: int
    status: TokenStatus
    last_error: str | None = None
    authorized_at: Any = None
    refreshed_at: Any = None
    failed_at: Any = None


@dataclass(frozen=True)
class StoredToken(FromRow):
    """A row of ``oauth_tokens`` as stored: the tokens still encrypted."""

    mailbox: str
    refresh_token: bytes | None = field(default=None, repr=False)
    access_token: bytes | None = field(default=None, repr=False)
    access_expires_at: float | None = None
    generation: int = 0
    status: str = TokenStatus.NEEDS_AUTHORIZATION
    last_error: str | None = None
    authorized_at: Any = None
    refreshed_at: Any = None
    failed_at: Any = None


@dataclass(frozen=True)
class TokenHealth(FromRow):
    """A mailbox's OAuth2 sign-in as the status and mailbox pages show it (no token)."""

    mailbox: str
    status: str = TokenStatus.NEEDS_AUTHORIZATION
    access_expires_at: float | None = None
    generation: int = 0
    last_error: str | None = None
    authorized_at: Any = None
    refreshed_at: Any = None
    failed_at: Any = None

    @property
    def alarm(self) -> bool:
        return self.status != TokenStatus.AUTHORIZED

    @property
    def expires(self) -> Any:
        """When the access token in hand expires (UTC; None: none in hand)."""
        from datetime import UTC, datetime

        if not self.access_expires_at:
            return None
        return datetime.fromtimestamp(float(self.access_expires_at), UTC).replace(tzinfo=None)

    @property
    def error_code(self) -> str | None:
        """The provider's error code in the last error (invalid_grant, invalid_client ...)."""
        text = self.last_error or ""
        return next((code for code in sorted(GRANT_CODES) if code in text), None)

    def as_dict(self) -> dict[str, Any]:
        return {"mailbox": self.mailbox, "status": self.status, "alarm": self.alarm,
                "authorized_at": _iso(self.authorized_at), "refreshed_at": _iso(
                    self.refreshed_at), "access_expires_at": _iso(self.expires),
                "failed_at": _iso(self.failed_at), "last_error": self.last_error,
                "error_code": self.error_code}


GRANT_CODES = {"invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope",
               "access_denied", "expired_token", "consent_required", "interaction_required"}


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def token_health(db: Database) -> list[TokenHealth]:
    """Every mailbox's OAuth2 sign-in state, without tokens (needs no token key)."""
    return TokenHealth.from_rows(db.fetchall(sql("oauth_all")))


class TokenCipher:
    """Fernet under a key derived (SHA-256) from the configured secret."""

    def __init__(self, secret: str) -> None:
        if len(secret) < 16:
            raise ConfigError("oauth_token_key must be at least 16 characters (set "
                              "EMAIL_RAG_OAUTH_TOKEN_KEY or EMAIL_RAG_OAUTH_TOKEN_KEY_FILE)")
        self._fernet = Fernet(base64.urlsafe_b64encode(hashlib.sha256(
            b"email-rag oauth tokens\0" + secret.encode()).digest()))

    @classmethod
    def from_settings(cls, settings: Any) -> TokenCipher:
        secret = settings.oauth_token_key.get_secret_value()
        if settings.oauth_token_key_file:
            try:
                secret = Path(settings.oauth_token_key_file).read_text().strip()
            except OSError as e:
                raise ConfigError(f"oauth_token_key_file {settings.oauth_token_key_file!r} "
                                  f"cannot be read: {e.strerror}") from e
        return cls(secret)

    def encrypt(self, text: str) -> bytes:
        return self._fernet.encrypt(text.encode())

    def decrypt(self, data: bytes) -> str:
        try:
            return self._fernet.decrypt(bytes(data)).decode()
        except InvalidToken:
            raise ConfigError("a stored OAuth2 token cannot be decrypted with the configured "
                              "oauth_token_key (was the key changed?); authorize the mailbox "
                              "again") from None


class TokenStore:
    def __init__(self, db: Database, cipher: TokenCipher) -> None:
        self.db, self.cipher = db, cipher

    def get(self, mailbox: str) -> TokenRecord | None:
        row = self.db.fetchone(sql("oauth_get"), {"mailbox": mailbox})
        if row is None:
            return None
        stored = StoredToken.from_row(row)
        return TokenRecord(
            mailbox=stored.mailbox,
            refresh_token=self._open(stored.refresh_token),
            access_token=self._open(stored.access_token),
            access_expires_at=float(stored.access_expires_at or 0),
            generation=int(stored.generation), status=TokenStatus(stored.status),
            last_error=stored.last_error, authorized_at=stored.authorized_at,
            refreshed_at=stored.refreshed_at, failed_at=stored.failed_at)

    def all(self) -> list[Row]:
        """Every mailbox's token state, without tokens (for status pages)."""
        return self.db.fetchall(sql("oauth_all"))

    def _open(self, data: bytes | None) -> str | None:
        return self.cipher.decrypt(data) if data else None

    def _seal(self, text: str | None) -> bytes | None:
        return self.cipher.encrypt(text) if text else None

    def authorize(self, mailbox: str, refresh_token: str, access_token: str | None = None,
                  expires_at: float = 0.0, actor: str = Actor.SYSTEM,
                  actor_detail: str = "") -> None:
        with self.db.transaction() as cur:
            cur.execute(sql("oauth_new"), {"mailbox": mailbox})
            cur.execute(sql("oauth_authorize"), {
                "mailbox": mailbox, "refresh_token": self._seal(refresh_token),
                "access_token": self._seal(access_token), "expires_at": expires_at})
            write_events(cur, [AuditEvent(str(actor), "mailbox", mailbox, "oauth_authorized",
                                          to_state=TokenStatus.AUTHORIZED,
                                          detail={"how": actor_detail or None})])

    def rotate(self, mailbox: str, generation: int, refresh_token: str | None,
               access_token: str | None, expires_at: float) -> bool:
        """Store a refresh's answer over ``generation``; False when the row moved on."""
        with self.db.transaction() as cur:
            changed = cur.execute(sql("oauth_rotate"), {
                "mailbox": mailbox, "generation": generation,
                "refresh_token": self._seal(refresh_token), "rotated": 1 if refresh_token else 0,
                "access_token": self._seal(access_token), "expires_at": expires_at}) == 1
            if changed and refresh_token:
                write_events(cur, [AuditEvent(Actor.SYSTEM, "mailbox", mailbox,
                                              "oauth_refresh_token_rotated",
                                              detail={"generation": generation + 1})])
        return changed

    def refresh_failed(self, mailbox: str, error: str, code: str = "") -> None:
        message = redact_text(error)[:1900]
        with self.db.transaction() as cur:
            cur.execute(sql("oauth_refresh_failed"), {"mailbox": mailbox, "error": message})
            write_events(cur, [AuditEvent(
                Actor.SYSTEM, "mailbox", mailbox, "oauth_refresh_failed",
                to_state=TokenStatus.NEEDS_AUTHORIZATION,
                detail={"error": message, "error_code": code or None,
                        "admin_action": f"email-rag mailboxes authorize {mailbox}"})])

    def idle(self, mailbox: str, seconds: float) -> bool:
        """True when ``mailbox``'s refresh token (authorized) was last used over ``seconds``
        ago (MariaDB's clock, like the timestamps)."""
        return self.db.fetchone(sql("oauth_idle"), {"mailbox": mailbox,
                                                    "seconds": int(seconds)}) is not None

    def drop_access_token(self, mailbox: str, token: str) -> None:
        """The server refused ``token``: forget it if it is the stored one."""
        record = self.get(mailbox)
        if record is not None and record.access_token == token:
            self.db.execute(sql("oauth_drop_access"),
                            {"mailbox": mailbox, "expires_at": record.access_expires_at})

    @contextmanager
    def refresh_lock(self, mailbox: str, timeout: float) -> Iterator[None]:
        """One refresh of ``mailbox`` at a time, across processes (a MariaDB named lock of
        this connection's session: a process that dies releases it with its session)."""
        name = "email_rag_oauth:" + hashlib.sha1(mailbox.encode()).hexdigest()[:32]
        got = self.db.fetchone(sql("oauth_lock"), {"name": name, "seconds": max(1, int(timeout))})
        if not got or got["got"] != 1:
            raise OAuthUnavailableError(f"another process is refreshing the OAuth2 token of "
                                        f"mailbox {mailbox} for over {timeout:.0f} s")
        try:
            yield
        finally:
            try:
                self.db.fetchone(sql("oauth_unlock"), {"name": name})
            except Exception:  # noqa: BLE001 - a lost session released the lock already
                pass
