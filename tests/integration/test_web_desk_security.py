"""Web security of the review desk (issue 18): sessions revoked server-side, login
throttling per (name, client address) with growing locks, no typed secret in the audit
log, and a hung MariaDB answered with a 503 page within seconds."""

from __future__ import annotations

import re
import time

import pytest
from email_rag_harness.testing.tcp_proxy import TcpFaultProxy
from fastapi.testclient import TestClient

from email_rag.auth import users
from email_rag.web import create_app
from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import LOOPBACK, PASSWORD, browsers, csrf_of, login, make_user, web_app


@pytest.fixture
def app(settings, db):
    return web_app(settings, db, web_login_max_failures=3)


@pytest.fixture
def client(app):
    with browsers(app, log_in=False) as new:
        yield new


def auth(db, name, password, client="10.0.0.1", max_failures=3, lockout=60, lock_max=3600):
    return users.authenticate(db, name, password, max_failures, lockout, client, lock_max)


def test_logout_revokes_a_copied_session_cookie(client, db):
    """GIVEN anna logged in and her cookie copied to a second browser WHEN she logs out THEN
    the copy can neither read the queue nor approve: the draft stays pending, nothing is
    audited as anna."""
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    c = client()
    token = login(c)
    thief = client()
    thief.cookies.update(c.cookies)
    assert thief.get("/queue", follow_redirects=False).status_code == 200
    assert c.post("/logout", data={"csrf_token": token}, follow_redirects=False).status_code == 303
    r = thief.post(f"/drafts/{draft}/approve", data={"csrf_token": token, "body": "hi"},
                   follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    thief.cookies.update(c.cookies)
    assert thief.get("/queue", follow_redirects=False).status_code == 303
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == \
        "pending_review"
    assert db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE event = 'approved'")["n"] == 0


def test_disable_ends_open_sessions_for_good(client, db):
    """GIVEN anna logged in WHEN an admin disables and re-enables her THEN her old session
    stays dead (she must log in again)."""
    c = client()
    login(c)
    users.set_disabled(db, "anna", True, "cli:root")
    users.set_disabled(db, "anna", False, "cli:root")
    assert c.get("/queue", follow_redirects=False).status_code == 303
    login(c)
    assert c.get("/queue", follow_redirects=False).status_code == 200


def test_lockout_is_per_name_and_client_address_and_grows(db):
    """GIVEN 3 failures allowed WHEN an attacker at 10.0.0.66 fails 3 times for root THEN
    root is locked for that address only (root logs in from 10.0.0.1); the next lock from
    the attacker's address lasts twice as long, capped."""
    make_user(db, "root", "admin")

    def lasts(result, seconds: int) -> bool:
        # locked_for_s is the time left (rounded up), read a statement after the lock was set:
        # a stall of a second or more there (a busy machine) leaves a little less
        return seconds - 5 < result.locked_for_s <= seconds

    for i in range(2):
        assert auth(db, "root", f"guess{i}", "10.0.0.66").reason == "bad_password"
    first = auth(db, "root", "guess2", "10.0.0.66")
    assert first.reason == "locked" and lasts(first, 60), first
    assert auth(db, "root", PASSWORD, "10.0.0.66").reason == "locked"
    assert auth(db, "root", PASSWORD, "10.0.0.1").reason == "ok"
    db.execute("UPDATE login_throttle SET locked_until = NOW(6) - INTERVAL 1 SECOND")
    for i in range(2):
        auth(db, "root", f"again{i}", "10.0.0.66")
    second = auth(db, "root", "again2", "10.0.0.66")
    assert second.reason == "locked" and lasts(second, 120), second
    db.execute("UPDATE login_throttle SET locked_until = NOW(6) - INTERVAL 1 SECOND")
    for i in range(3):
        third = auth(db, "root", f"more{i}", "10.0.0.66", lock_max=200)
    assert lasts(third, 200), third


def test_unknown_names_get_the_same_answers_as_real_ones(client, db):
    """GIVEN a real name and a name nobody has WHEN both fail 3 times over HTTP THEN the
    pages say the same (also once locked), so the answers do not tell which names exist."""
    pages = {}
    for name in ("anna", "no-such-user"):
        c = client()
        texts = []
        for i in range(4):
            r = c.post("/login", data={"name": name, "password": f"nope{i}",
                                       "csrf_token": csrf_of(c.get("/login").text)})
            assert r.status_code == 401
            texts.append(re.sub(r'name="csrf_token" value="[^"]+"', "", r.text)
                         .replace(name, "NAME"))
        pages[name] = texts
    assert pages["anna"] == pages["no-such-user"]
    assert "try again in 5 minute" in pages["anna"][2]


def test_a_password_typed_into_the_name_field_is_not_audited(client, db):
    c = client()
    secret = "Sommer2026!geheim"
    c.post("/login", data={"name": secret, "password": "", "csrf_token": csrf_of(c.get("/login").text)})
    rows = db.fetchall("SELECT * FROM audit_log")
    assert rows and secret not in str(rows) and secret.lower() not in str(rows).lower()
    assert rows[-1]["entity_id"].startswith("unknown:")


def test_a_hung_database_gives_a_503_page_within_seconds(settings, db):
    """GIVEN the web UI's MariaDB behind a proxy WHEN the database stops answering (the
    connection stays open) THEN a page answers 503 HTML within a few seconds, and once the
    database answers again the next page works."""
    proxy = TcpFaultProxy("127.0.0.1", settings.db_port)
    try:
        settings.db_port = proxy.port
        settings.web_db_timeout_seconds = 2
        settings.web_secret_key = type(settings.web_secret_key)("test-secret")
        make_user(db, "anna", "staff")
        with TestClient(create_app(settings), client=LOOPBACK) as c:
            login(c)
            proxy.silence()  # connections stay open, the server's answers are held
            started = time.monotonic()
            r = c.get("/queue", follow_redirects=False)
            took = time.monotonic() - started
            assert r.status_code == 503 and "Database unreachable" in r.text
            assert r.headers["content-type"].startswith("text/html")
            assert took < 8, took
            proxy.speak()
            proxy.sever()
            assert c.get("/queue", follow_redirects=False).status_code == 200
    finally:
        proxy.close()


def test_the_503_page_is_in_the_users_language_while_the_database_is_away(settings, db):
    """GIVEN anna chose German and is logged in WHEN MariaDB stops answering (her user row,
    and so her preference, cannot be read) THEN the 503 page is still German: the session
    carries the language of the user's last page."""
    proxy = TcpFaultProxy("127.0.0.1", settings.db_port)
    try:
        settings.db_port = proxy.port
        settings.web_db_timeout_seconds = 2
        settings.web_secret_key = type(settings.web_secret_key)("test-secret")
        user_id = make_user(db, "anna", "staff")
        users.set_prefs(db, users.active_user(db, user_id), "Europe/Berlin", "de")
        with TestClient(create_app(settings), client=LOOPBACK) as c:
            login(c)
            assert "Prüfliste" in c.get("/queue").text
            proxy.silence()
            r = c.get("/queue", follow_redirects=False)
            assert r.status_code == 503
            assert "Datenbank nicht erreichbar" in r.text and "Gespeicherte Arbeit" in r.text
            assert 'lang="de"' in r.text and "Database unreachable" not in r.text
            proxy.speak()
            proxy.sever()
    finally:
        proxy.close()


NAME_VARIANTS = ("évé", "ève", "\uff45\uff56\uff45", "e\u200bve", "EVE")


def test_variants_of_a_name_share_the_accounts_throttle_and_audit_under_the_account(db):
    """GIVEN eve, and the user lookup folding accents, width and zero-width characters (the
    column's collation) WHEN an attacker fails with one variant after the other THEN they
    all count on eve's one bucket: after 3 failures eve is locked for that address, under
    any spelling, her real name included; every failure is audited as eve, and a later
    login under a variant is audited as eve too."""
    make_user(db, "eve", "staff")
    assert auth(db, "ｅｖｅ", PASSWORD, "10.0.0.2").reason == "ok"  # the lookup folds
    results = [auth(db, v, "guess", "10.0.0.66") for v in NAME_VARIANTS[:3]]
    assert [r.reason for r in results] == ["bad_password", "bad_password", "locked"]
    for variant in (*NAME_VARIANTS, "eve"):
        assert auth(db, variant, PASSWORD, "10.0.0.66").reason == "locked", variant
    events = db.fetchall("SELECT event, entity_id, actor FROM audit_log "
                         "WHERE event LIKE 'login%%' ORDER BY id")
    assert {e["entity_id"] for e in events} == {"eve"}, events
    assert events[0]["event"] == "login" and events[0]["actor"] == "user:eve"


def test_a_refused_login_is_audited_by_the_web_process_with_the_client_in_its_detail(db):
    """Nobody is logged in when a login fails: the actor is the web process in the one
    actor format (``system:web``), the client address a detail of the event, so an
    audit search by actor finds every refusal and no address poses as an actor."""
    make_user(db, "eve", "staff")
    for _ in range(3):
        auth(db, "eve", "guess", "10.0.0.77")
    assert auth(db, "eve", PASSWORD, "10.0.0.77").reason == "locked"
    events = db.fetchall("SELECT event, actor, JSON_VALUE(detail, '$.client') AS client "
                         "FROM audit_log WHERE event LIKE 'login_%%' ORDER BY id")
    assert [e["event"] for e in events] == ["login_failed", "login_failed", "login_failed",
                                            "login_locked", "login_refused"]
    assert {(e["actor"], e["client"]) for e in events} == {("system:web", "10.0.0.77")}


def test_one_address_trying_many_names_is_locked_and_keeps_the_throttle_small(db):
    """GIVEN 3 failures per name and 20 per address WHEN one address tries 300 names nobody
    has THEN after 20 failures the address is locked for every name (a real one and a real
    password included), and the throttle holds at most one row per name tried before the
    lock plus the address's own: 300 names do not make 300 rows. Another address is not
    affected."""
    make_user(db, "eve", "staff")
    reasons = [auth(db, f"name{i}-{i * 7919 % 1000}", "guess", "10.0.0.66").reason
               for i in range(300)]
    assert reasons[:19] == ["unknown_user"] * 19 and set(reasons[19:]) == {"locked"}
    assert auth(db, "eve", PASSWORD, "10.0.0.66").reason == "locked"
    assert auth(db, "eve", PASSWORD, "10.0.0.1").reason == "ok"
    rows = db.fetchone("SELECT COUNT(*) AS n FROM login_throttle")["n"]
    assert rows <= 21, rows


def test_a_successful_login_does_not_reset_the_address_failure_count(db):
    """GIVEN 20 failures per address allowed WHEN an attacker at one address guesses names
    nobody has and, between guesses, logs in with one account of its own THEN the address
    counter keeps every failure (a success clears only that account's own bucket): after 20
    failures in all the address is locked, the attacker's own account included."""
    make_user(db, "eve", "staff")
    reasons = []
    for i in range(25):
        reasons.append(auth(db, f"guess{i}", "nope", "10.0.0.66").reason)
        if i % 4 == 3:  # the attacker's valid account, logged into now and then
            reasons.append(auth(db, "eve", PASSWORD, "10.0.0.66").reason)
    assert reasons.count("unknown_user") == 19, reasons
    assert reasons[-1] == "locked"
    assert auth(db, "eve", PASSWORD, "10.0.0.66").reason == "locked"
    assert auth(db, "eve", PASSWORD, "10.0.0.1").reason == "ok"  # another address is not


def test_a_successful_login_clears_the_account_bucket_of_its_address(db):
    """GIVEN anna failed twice from her address (3 allowed per account) WHEN she then logs in
    THEN her own bucket starts again: two more failures do not lock her."""
    make_user(db, "anna", "staff")
    for i in range(2):
        assert auth(db, "anna", f"typo{i}", "10.0.0.5").reason == "bad_password"
    assert auth(db, "anna", PASSWORD, "10.0.0.5").reason == "ok"
    for i in range(2):
        assert auth(db, "anna", f"again{i}", "10.0.0.5").reason == "bad_password"
    assert auth(db, "anna", PASSWORD, "10.0.0.5").reason == "ok"


def test_stale_throttle_rows_are_pruned(db):
    """GIVEN 2,000 throttle rows of names tried long ago from many addresses (older than
    the longest lock, not locked) WHEN an address gets locked THEN the stale rows are gone:
    the throttle's state does not grow with every name ever typed."""
    with db.transaction() as cur:
        cur.executemany("INSERT INTO login_throttle (name_key, client, failures, updated_at) "
                        "VALUES (%s, %s, 1, NOW(6) - INTERVAL 2 HOUR)",
                        [(users.name_key(f"n{i}"), f"10.1.{i // 250}.{i % 250}")
                         for i in range(2000)])
    for i in range(20):
        auth(db, f"fresh{i}", "guess", "10.0.0.66")
    rows = db.fetchone("SELECT COUNT(*) AS n FROM login_throttle")["n"]
    assert rows <= 21, rows


MIB = 1 << 20


def post_raw(app, path: str, headers: dict[str, str], chunks: int, cookie: str = ""):
    """POST to the ASGI app as a client that claims (or streams) a huge body: it hands out
    at most ``chunks`` MiB on request, then hangs up. Answers (status, MiB the app read)."""
    import asyncio

    served, sent = 0, {}

    async def receive():
        nonlocal served
        if served >= chunks:
            return {"type": "http.disconnect"}
        served += 1
        return {"type": "http.request", "body": b"a" * MIB, "more_body": True}

    async def send(message):
        if message["type"] == "http.response.start":
            sent["status"] = message["status"]

    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    if cookie:
        raw.append((b"cookie", cookie.encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "headers": raw, "client": ("10.0.0.9", 5000),
             "server": ("testserver", 80)}

    async def run():
        async with app.router.lifespan_context(app):
            try:
                await app(scope, receive, send)
            except Exception:  # noqa: BLE001 - a hang-up mid-body may surface as an error
                pass

    asyncio.run(run())
    return sent.get("status"), served


def test_a_huge_anonymous_post_is_refused_before_its_body_is_read(app, db):
    """GIVEN an anonymous client WHEN it posts a login claiming 300 MB (Content-Length), or
    streams one without a length THEN it gets 413 having handed over at most 1 MiB: the body
    is never read whole. A logged-in agent's reply of 72,000 characters (190 KB
    URL-encoded) still goes through."""
    form = "application/x-www-form-urlencoded"
    status, read = post_raw(app, "/login", {"content-type": form,
                                            "content-length": str(300 * 1000 * MIB)}, 8)
    assert (status, read) == (413, 0)
    status, read = post_raw(app, "/login", {"content-type": form,
                                            "transfer-encoding": "chunked"}, 8)
    assert status == 413 and read <= 1
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    with browsers(app, log_in=True) as new:
        c = new()
        r = c.post(f"/drafts/{draft}/autosave", data={"csrf_token": c.csrf,
                                                      "body": "Grüße " * 12_000})
        assert r.status_code == 200 and r.json()["saved"] is True
