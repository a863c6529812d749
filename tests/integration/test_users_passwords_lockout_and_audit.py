"""Web UI users: argon2 hashes, login checks, lockout, audit without passwords."""

from __future__ import annotations

import pytest

from email_rag.auth import users
from email_rag.core.errors import BadInputError
from tests.webutil import PASSWORD, make_user


def audit(db, event=None):
    rows = db.fetchall("SELECT * FROM audit_log WHERE entity_type = 'user' ORDER BY id")
    return [r for r in rows if event is None or r["event"] == event]


def auth(db, name, password, max_failures=3, lockout=60):
    return users.authenticate(db, name, password, max_failures, lockout, "10.0.0.1")


def test_password_is_stored_as_argon2_hash_only(db):
    make_user(db, "anna", "staff")
    row = db.fetchone("SELECT * FROM users WHERE name = 'anna'")
    assert row["password_hash"].startswith("$argon2id$") and PASSWORD not in row["password_hash"]
    assert auth(db, "anna", PASSWORD).user.name == "anna"


@pytest.mark.parametrize("name,role,password,match", [
    ("anna", "boss", PASSWORD, "role"),
    ("an na", "staff", PASSWORD, "user name"),
    ("anna", "staff", "short", "at least"),
])
def test_bad_input_is_refused(db, name, role, password, match):
    with pytest.raises(BadInputError, match=match):
        users.add_user(db, name, role, password, "test")
    assert db.fetchone("SELECT COUNT(*) AS n FROM users")["n"] == 0


def test_duplicate_name_is_refused(db):
    make_user(db, "anna")
    with pytest.raises(BadInputError, match="exists already"):
        make_user(db, "anna", "admin")


def test_failures_lock_the_user_and_are_audited_without_the_password(db):
    """GIVEN max 3 failures WHEN 3 wrong passwords THEN even the right one is refused while
    locked; every failure is audited, the password never."""
    make_user(db, "anna")
    assert auth(db, "anna", "wrong-1").reason == "bad_password"
    assert auth(db, "anna", "wrong-2").reason == "bad_password"
    third = auth(db, "anna", "wrong-3")
    assert third.reason == "locked" and third.locked_for_s == 60
    refused = auth(db, "anna", PASSWORD)
    assert refused.user is None and refused.reason == "locked" and 0 < refused.locked_for_s <= 60
    assert [e["attempt"] for e in audit(db, "login_failed")] == [1, 2, 3]
    assert len(audit(db, "login_locked")) == 1 and len(audit(db, "login_refused")) == 1
    text = str(db.fetchall("SELECT * FROM audit_log"))
    assert "wrong-" not in text and PASSWORD not in text
    db.execute("UPDATE login_throttle SET locked_until = NOW(6) - INTERVAL 1 SECOND")
    ok = auth(db, "anna", PASSWORD)
    assert ok.reason == "ok" and audit(db, "login")[-1]["actor"] == "user:anna"
    # the account's bucket is cleared; the address keeps its 3 failures (they age out)
    assert db.fetchall("SELECT name_key, failures FROM login_throttle") == [
        {"name_key": users.ADDRESS_KEY, "failures": 3}]


def test_unknown_and_disabled_users_are_refused(db):
    make_user(db, "anna")
    assert auth(db, "nobody", PASSWORD).reason == "unknown_user"
    assert users.set_disabled(db, "anna", True, "cli:root")
    assert auth(db, "anna", PASSWORD).reason == "disabled"
    assert users.active_user(db, 1, 0) is None
    assert users.set_disabled(db, "anna", False, "cli:root")
    assert auth(db, "anna", PASSWORD).reason == "ok"
    assert not users.set_disabled(db, "nobody", True, "cli:root")
    events = [e["event"] for e in audit(db)]
    assert "user_disabled" in events and "user_enabled" in events
