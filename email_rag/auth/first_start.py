"""The first start: while no account exists the web shows a set-up page instead of the login.

``email-rag setup`` prints a one-time link (``new_link``: a random token, stored only as
its SHA-256, valid for ``LINK_SECONDS``); the page behind it creates the first admin
(``create_admin``) and logs them in; then it leads to "add your first mailbox" and its
history import (web/views_setup.py).

Failure table (situation | retry? | state known? | resume?):
  the link is used a second time, or after it expired | no | the first use's admin exists,
      or none | `email-rag setup` prints a new link
  an account exists already (another link was used) | no: refused | that admin | log in
  a bad name or too short a password | no | nothing created, the link still valid | again
  MariaDB down | - | nothing half-done | open the link again
"""

from __future__ import annotations

import hashlib
import secrets

from ..core.errors import BadInputError
from ..db import Database, sql
from ..db.audit import AuditEvent, write_events
from . import users

LINK_SECONDS = 3600


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def needs_setup(db: Database) -> bool:
    """True while no account exists at all (an empty database)."""
    return db.fetchone(sql("setup_any_user")) is None


def new_link(db: Database) -> str:
    """A one-time set-up token (the link's ``token``)."""
    token = secrets.token_urlsafe(32)
    db.execute(sql("setup_token_insert"), {"token_hash": _hash(token), "seconds": LINK_SECONDS})
    return token


def link_valid(db: Database, token: str) -> bool:
    return bool(token) and needs_setup(db) and db.fetchone(
        sql("setup_token_valid"), {"token_hash": _hash(token)}) is not None


def create_admin(db: Database, token: str, name: str, password: str) -> int:
    """The first admin, through a valid link (used up by it); audited."""
    if not link_valid(db, token):
        raise BadInputError("this set-up link is used, expired or no longer needed (an admin "
                            "exists): log in, or run `email-rag setup` for a new link")
    user_id = users.add_user(db, name, "admin", password, "system:setup")
    if db.execute(sql("setup_token_use"), {"token_hash": _hash(token), "name": name}) != 1:
        raise BadInputError("this set-up link was used meanwhile; the admin account "
                            f"{name} was created: log in")
    with db.transaction() as cur:
        write_events(cur, [AuditEvent("system:setup", "user", name, "first_admin_created",
                                      detail={"user_id": user_id})])
    return user_id
