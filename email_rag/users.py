"""Web UI users: create, list, disable, and check a login.

Passwords are hashed with argon2id (argon2-cffi); the plain password is never
stored, logged or audited. A login check takes the user row lock, so failed
attempts from parallel requests are all counted.

Failure table of one login:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| unknown user name | user may try again | yes: refused, same message as a wrong password; a dummy hash is verified so timing does not tell | audited login_failed (unknown_user) |
| wrong password | yes, until the limit | yes: failed_logins + 1 | audited login_failed; at web_login_max_failures the user is locked for web_login_lockout_seconds (audited login_locked) |
| user locked | after the lock expires | yes: refused without checking the password | audited login_refused (locked) |
| user disabled | no | yes: refused | audited login_failed (disabled); an admin enables the user |
| MariaDB down | yes, later | yes: nothing changed | the page says so (503); nothing is recorded |
| success | - | yes: counter reset, last_login_at | audited login |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from .audit import AuditEvent, write_events
from .db import Database, DuplicateKeyError, sql
from .errors import BadInputError
from .states import UserRole

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
MIN_PASSWORD = 8

_hasher = PasswordHasher()
_DUMMY_HASH = _hasher.hash("not a password of anyone")


@dataclass(frozen=True)
class User:
    id: int
    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == UserRole.ADMIN

    @property
    def actor(self) -> str:
        """How this user appears in the audit log."""
        return f"user:{self.name}"


@dataclass(frozen=True)
class LoginResult:
    user: User | None
    reason: str  # ok | unknown_user | bad_password | disabled | locked
    locked_for_s: int = 0


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def add_user(db: Database, name: str, role: str, password: str, by: str) -> int:
    name = (name or "").strip()
    if not NAME_RE.match(name):
        raise BadInputError("a user name is 1-100 letters, digits or . _ @ - "
                            "(starting with a letter or digit)")
    if role not in {r.value for r in UserRole}:
        raise BadInputError(f"role must be one of {[r.value for r in UserRole]}")
    if len(password) < MIN_PASSWORD:
        raise BadInputError(f"the password needs at least {MIN_PASSWORD} characters")
    try:
        with db.transaction() as cur:
            cur.execute(sql("web_user_insert"),
                        {"name": name, "role": role, "hash": hash_password(password)})
            user_id = cur.lastrowid
            write_events(cur, [AuditEvent(by, "user", name, "user_created", None, role,
                                          detail={"user_id": user_id})])
    except DuplicateKeyError as e:
        raise BadInputError(f"user {name!r} exists already; nothing changed") from e
    return int(user_id)


def list_users(db: Database) -> list[dict[str, Any]]:
    return db.fetchall(sql("web_users_list"))


def set_disabled(db: Database, name: str, disabled: bool, by: str) -> bool:
    """True when the user exists (and is now disabled/enabled)."""
    with db.transaction() as cur:
        user = cur.fetchone(sql("web_user_by_name_for_update"), {"name": name})
        if user is None:
            return False
        cur.execute(sql("web_user_set_disabled"), {"name": name, "disabled": int(disabled)})
        if bool(user["disabled"]) != disabled:
            write_events(cur, [AuditEvent(
                by, "user", name, "user_disabled" if disabled else "user_enabled",
                "disabled" if user["disabled"] else "active",
                "disabled" if disabled else "active")])
    return True


def active_user(db: Database, user_id: int) -> User | None:
    """The user of a session, if it still exists and is not disabled."""
    row = db.fetchone(sql("web_user_by_id"), {"id": user_id})
    if row is None or row["disabled"]:
        return None
    return User(int(row["id"]), row["name"], row["role"])


def authenticate(db: Database, name: str, password: str, max_failures: int, lockout_s: int,
                 client: str = "") -> LoginResult:
    """Check a login; every refusal and success is audited (never the password)."""
    name = (name or "").strip()[:100]
    actor = f"web:{client}" if client else "web"
    with db.transaction() as cur:
        row = cur.fetchone(sql("web_user_by_name_for_update"), {"name": name}) if name else None
        if row is None:
            _verify(_DUMMY_HASH, password)  # same work as for a real user
            write_events(cur, [AuditEvent(actor, "user", name[:64] or "(empty)", "login_failed",
                                          detail={"reason": "unknown_user"})])
            return LoginResult(None, "unknown_user")
        locked = cur.fetchone(sql("web_user_locked_seconds"), {"id": row["id"]})
        if locked is not None:
            write_events(cur, [AuditEvent(actor, "user", name, "login_refused",
                                          detail={"reason": "locked"})])
            return LoginResult(None, "locked", int(locked["s"]))
        if not _verify(row["password_hash"], password):
            cur.execute(sql("web_user_login_failed"),
                        {"id": row["id"], "max": max_failures, "lock_s": lockout_s})
            attempt = int(row["failed_logins"]) + 1
            events = [AuditEvent(actor, "user", name, "login_failed", attempt=attempt,
                                 detail={"reason": "bad_password"})]
            if attempt >= max_failures:
                events.append(AuditEvent(actor, "user", name, "login_locked", attempt=attempt,
                                         detail={"lockout_s": lockout_s}))
            write_events(cur, events)
            if attempt >= max_failures:
                return LoginResult(None, "locked", lockout_s)
            return LoginResult(None, "bad_password")
        if row["disabled"]:
            write_events(cur, [AuditEvent(actor, "user", name, "login_failed",
                                          detail={"reason": "disabled"})])
            return LoginResult(None, "disabled")
        cur.execute(sql("web_user_login_ok"), {"id": row["id"]})
        if _hasher.check_needs_rehash(row["password_hash"]):
            cur.execute(sql("web_user_set_password"),
                        {"id": row["id"], "hash": hash_password(password)})
        write_events(cur, [AuditEvent(f"user:{name}", "user", name, "login",
                                      detail={"client": client} if client else None)])
    return LoginResult(User(int(row["id"]), row["name"], row["role"]), "ok")


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
