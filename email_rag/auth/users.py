"""Web UI users: create, list, disable, and check a login.

Passwords are hashed with argon2id (argon2-cffi); the plain password is never
stored, logged or audited. Failed attempts from parallel requests are all
counted (each is one upsert of its buckets).

Failure table of one login. Throttled per (account, client address), the account being
the row the lookup found (its collation folds case, accents, width and zero-width forms, so
every spelling of a name is one bucket), and per client address whatever names are typed;
one address cannot lock a user out everywhere, and an unknown name behaves like a real one:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| unknown user name | user may try again | yes: refused, same message as a wrong password; a dummy hash is verified so timing does not tell; counted like a wrong password | audited login_failed (unknown_user) under a hash of the name, never the text (it may be a password typed into the wrong field) |
| wrong password | yes, until the limit | yes: failures + 1 for (account, client) and for the client | audited login_failed under the account; at max_failures (account, client) is locked for lockout_s, at address_max_failures the whole client is, doubled with each further lock up to lockout_max_s (audited login_locked); rows untouched for lockout_max_s are then deleted |
| (account, client) or client locked | after the lock expires | yes: refused without checking the password, same message for unknown names | audited login_refused (locked); other addresses can still log in |
| user disabled | no | yes: refused, counted like a wrong password | audited login_failed (disabled); an admin enables the user |
| MariaDB down | yes, later | yes: nothing changed | the page says so (503); nothing is recorded |
| success | - | yes: the (account, client) row cleared, last_login_at; the client's own row keeps its failures (one valid account must not reset the address's count) | audited login under the account |

At most ``VERIFY_SLOTS`` logins are checked at once per process (argon2id: 64 MiB each);
the check, the password and the record of one login run in one slot, the password check
outside any transaction.

Sessions: the session cookie carries the user's ``session_version``; logout
(``end_sessions``) and disabling raise it, so every cookie issued before is refused
at its next request (a copied cookie is worthless after logout).
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from ..core.errors import BadInputError, DuplicateKeyError
from ..core.records import Account, Bucket, Listed
from ..core.states import Actor, UserRole
from ..db import Database, sql
from ..db.audit import AuditEvent, write_events

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
MIN_PASSWORD = 8

_hasher = PasswordHasher()
_DUMMY_HASH = _hasher.hash("not a password of anyone")


@dataclass(frozen=True)
class User:
    id: int
    name: str
    role: str
    session_version: int = 0
    mailbox_ids: frozenset[int] | None = None  # staff: assigned mailboxes; None = all (admins)
    time_zone: str | None = None
    ui_language: str | None = None

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


def list_users(db: Database) -> list[Listed]:
    return [Listed.from_row(r) for r in db.fetchall(sql("web_users_list"))]


def set_disabled(db: Database, name: str, disabled: bool, by: str) -> bool:
    """True when the user exists (and is now disabled/enabled)."""
    with db.transaction() as cur:
        row = cur.fetchone(sql("web_user_by_name_for_update"), {"name": name})
        if row is None:
            return False
        user = Account.from_row(row)
        cur.execute(sql("web_user_set_disabled"), {"name": name, "disabled": int(disabled)})
        if disabled:  # every open session of the user ends now, not at the next login
            cur.execute(sql("web_user_end_sessions"), {"id": user.id})
        if bool(user.disabled) != disabled:
            write_events(cur, [AuditEvent(
                by, "user", name, "user_disabled" if disabled else "user_enabled",
                "disabled" if user.disabled else "active",
                "disabled" if disabled else "active")])
    return True


def active_user(db: Database, user_id: int, session_version: int | None = None) -> User | None:
    """The user of a session, if it still exists, is not disabled, and the session was
    issued after the user's last logout (``session_version``)."""
    row = db.fetchone(sql("web_user_session"), {"id": user_id})
    account = None if row is None else Account.from_row(row)
    if account is None or account.disabled:
        return None
    if session_version is not None and int(account.session_version) != int(session_version):
        return None
    return _user(db, account)


def _user(db: Database, account: Account) -> User:
    mailboxes = None
    if account.role != UserRole.ADMIN:
        mailboxes = frozenset(int(r["mailbox_id"]) for r in
                              db.fetchall(sql("web_user_mailbox_ids"), {"id": account.id}))
    return User(int(account.id), account.name, account.role,
                int(account.session_version or 0), mailboxes, account.time_zone,
                account.ui_language)


def end_sessions(db: Database, user_id: int, by: str, reason: str = "logout") -> None:
    """Every session of this user issued so far stops working (logout, disable)."""
    with db.transaction() as cur:
        cur.execute(sql("web_user_end_sessions"), {"id": user_id})
        write_events(cur, [AuditEvent(by, "user", str(user_id), "sessions_ended",
                                      detail={"reason": reason})])


def set_mailbox(db: Database, name: str, mailbox: str, assigned: bool, by: str) -> bool:
    """Assign (or unassign) a mailbox to a staff member; True when something changed."""
    with db.transaction() as cur:
        changed = cur.execute(sql("web_user_assign_mailbox" if assigned
                                  else "web_user_unassign_mailbox"),
                              {"name": name, "mailbox": mailbox}) > 0
        if changed:
            write_events(cur, [AuditEvent(by, "user", name, "mailbox_assigned" if assigned
                                          else "mailbox_unassigned", detail={"mailbox": mailbox})])
    return changed


def name_key(name: str) -> str:
    """What the throttle and the audit log keep of a typed name that is no user: a hash."""
    return hashlib.sha256(name.strip().lower().encode()).hexdigest()


# The address's own bucket: no name hashes to this (it is not a SHA-256 hex digest).
ADDRESS_KEY = "address"
# Password checks running at once in this process: argon2id takes 64 MiB and a core's
# worth of work per check, so a login flood waits here instead of growing the process.
VERIFY_SLOTS_N = 2
VERIFY_SLOTS = threading.BoundedSemaphore(VERIFY_SLOTS_N)


def authenticate(db: Database, name: str, password: str, max_failures: int, lockout_s: int,
                 client: str = "", lockout_max_s: int = 3600,
                 address_max_failures: int = 20) -> LoginResult:
    """Check a login; every refusal and success is audited (never the password, never a
    typed name that is no user).

    Throttled twice: per (account, client), the account being the row the lookup found
    (the collation folds case, accents, width and zero-width characters, so every
    spelling of a name shares its account's bucket), and per client address whatever
    names are typed (address_max_failures). The check, the password and the record run in
    one of ``VERIFY_SLOTS``, so parallel attempts cannot all pass one check; the password
    check holds no transaction (no row lock waits behind an argon2 hash)."""
    name = (name or "").strip()[:100]
    client = (client or "unknown")[:64]
    actor = Actor.WEB
    limits = {"max": max_failures, "lock_s": lockout_s, "lock_max": lockout_max_s}
    with VERIFY_SLOTS:
        found = db.fetchone(sql("web_user_by_name"), {"name": name}) if name else None
        row = None if found is None else Account.from_row(found)
        account = row.name if row is not None else None
        key = {"key": name_key(account if account is not None else name), "client": client}
        address = {"key": ADDRESS_KEY, "client": client}
        shown = account if account is not None else f"unknown:{key['key'][:16]}"
        buckets = _buckets(db, key, lockout_s)
        before, by_address = buckets.get(key["key"]), buckets.get(ADDRESS_KEY)
        locked = max(int(b.locked_s) for b in (before, by_address) if b) \
            if before or by_address else 0
        if locked:
            _audit(db, [AuditEvent(actor, "user", shown, "login_refused",
                                   detail={"reason": "locked", "client": client})])
            return LoginResult(None, "locked", locked)
        ok = _verify(row.password_hash if row else _DUMMY_HASH, password)
        reason = ("unknown_user" if row is None else "bad_password" if not ok
                  else "disabled" if row.disabled else "ok")
        if reason != "ok":
            attempt = (int(before.failures) if before else 0) + 1
            with db.transaction() as cur:
                cur.execute(sql("web_throttle_failed"), {**key, **limits, "stale": 0})
                cur.execute(sql("web_throttle_failed"), {
                    **address, **limits, "max": address_max_failures,
                    "stale": int(bool(by_address and by_address.stale))})
                after = _buckets(cur, key, lockout_s)
                events = [AuditEvent(actor, "user", shown, "login_failed", attempt=attempt,
                                     detail={"reason": reason, "client": client})]
                lock = max([int(b.locked_s) for b in after.values()] or [0])
                if lock:
                    address_lock = after.get(ADDRESS_KEY)
                    events.append(AuditEvent(
                        actor, "user", shown, "login_locked", attempt=attempt,
                        detail={"lockout_s": lock, "client": client,
                                "lockouts": max(int(b.lockouts) for b in after.values()),
                                "by_address": bool(address_lock and address_lock.locked_s)}))
                write_events(cur, events)
            if not lock:
                return LoginResult(None, reason)
            # a lock was set: the moment to drop what nobody has tried lately
            db.execute(sql("web_throttle_prune"), {"keep_s": max(lockout_max_s, lockout_s)})
            return LoginResult(None, "locked", lock)
        with db.transaction() as cur:
            # the account's own bucket only: the address's failures stay counted (they age
            # out after lockout_s), so logging into one account between guesses at others
            # never resets the address limit
            cur.execute(sql("web_throttle_clear"), key)
            cur.execute(sql("web_user_login_ok"), {"id": row.id})
            if _hasher.check_needs_rehash(row.password_hash):
                cur.execute(sql("web_user_set_password"),
                            {"id": row.id, "hash": hash_password(password)})
            write_events(cur, [AuditEvent(f"user:{account}", "user", account, "login",
                                          detail={"client": client})])
    return LoginResult(_user(db, row), "ok")


def _buckets(db: Any, key: dict[str, str], window_s: int) -> dict[str, Bucket]:
    """Both buckets of a login by name key (``db``: the Database or a transaction's cursor)."""
    rows = db.fetchall(sql("web_throttle_get"), {"key": key["key"], "address": ADDRESS_KEY,
                                                  "client": key["client"], "window_s": window_s})
    return {r["name_key"]: Bucket.from_row(r) for r in rows}


def _audit(db: Database, events: list[AuditEvent]) -> None:
    with db.transaction() as cur:
        write_events(cur, events)


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


UI_LANGUAGES = ("en", "de")


def set_prefs(db: Database, user: User, time_zone: str, ui_language: str) -> None:
    """A user's own display preferences (time zone: an IANA name; language: en or de)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise BadInputError(f"unknown time zone {time_zone[:64]!r} (use a name like "
                            "Europe/Berlin)") from e
    if ui_language not in UI_LANGUAGES:
        raise BadInputError(f"language must be one of {list(UI_LANGUAGES)}")
    with db.transaction() as cur:
        cur.execute(sql("web_user_set_prefs"), {"id": user.id, "time_zone": time_zone,
                                                "ui_language": ui_language})
        write_events(cur, [AuditEvent(user.actor, "user", user.name, "preferences_changed",
                                      detail={"time_zone": time_zone,
                                              "ui_language": ui_language})])
