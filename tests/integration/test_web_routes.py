"""The web UI's routes against the real MariaDB and Redis (FastAPI TestClient).

Auth, roles (403), CSRF refusal, every action, POST-redirect-GET, headers,
/metrics and /healthz, and untrusted mail content rendered inert on every page.
"""

from __future__ import annotations

import re
import threading

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from rq import Queue

from email_rag.adapters.queue import rq_job_id
from email_rag.auth import users
from email_rag.db.audit import AuditEvent, AuditLog
from email_rag.web import create_app
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.webutil import (
    LOOPBACK,
    PASSWORD,
    XSS_BODY,
    XSS_HTML,
    XSS_SUBJECT,
    assert_inert,
    browsers,
    csrf_of,
    login,
    make_user,
    web_app,
)


@pytest.fixture
def app(settings, db):
    return web_app(settings, db, web_metrics_cache_seconds=0, web_login_max_failures=3)


@pytest.fixture
def client(app):
    with browsers(app, log_in=False) as new:
        yield new


def draft_row(db, draft_id):
    return db.fetchone("SELECT * FROM drafts WHERE id = %s", (draft_id,))


# --- auth ---

def test_pages_need_a_login_and_login_redirects_back(client):
    c = client()
    r = c.get("/drafts/1?mailbox=support", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/drafts/1%3Fmailbox%3Dsupport"
    token = csrf_of(c.get("/login").text)
    r = c.post("/login", data={"name": "anna", "password": PASSWORD, "csrf_token": token,
                               "next": "https://evil.example/"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/queue"  # never off-site


def test_session_cookie_is_httponly_samesite_and_signed(client, settings):
    c = client()
    r = c.post("/login", data={"name": "anna", "password": PASSWORD,
                               "csrf_token": csrf_of(c.get("/login").text)}, follow_redirects=False)
    cookie = r.headers["set-cookie"].lower()
    assert "email_rag_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    assert "secure" not in cookie
    assert PASSWORD.lower() not in cookie
    forged = client()
    forged.cookies.set("email_rag_session", "eyJ1aWQiOiAxfQ==.forged.sig")
    assert forged.get("/queue", follow_redirects=False).status_code == 303


def test_secure_cookie_behind_https(settings, db):
    make_user(db, "anna")
    with TestClient(create_app(settings), base_url="https://testserver") as c:
        r = c.post("/login", data={"name": "anna", "password": PASSWORD,
                                   "csrf_token": csrf_of(c.get("/login").text)},
                   follow_redirects=False)
        assert "secure" in r.headers["set-cookie"].lower()


def test_wrong_password_locks_after_three_and_is_audited(client, db):
    c = client()
    for i in range(3):
        r = c.post("/login", data={"name": "anna", "password": f"nope{i}",
                                   "csrf_token": csrf_of(c.get("/login").text)})
        assert r.status_code == 401
    assert "Too many failed logins" in r.text
    r = c.post("/login", data={"name": "anna", "password": PASSWORD,
                               "csrf_token": csrf_of(c.get("/login").text)})
    assert r.status_code == 401 and "Too many failed logins" in r.text
    events = [e["event"] for e in db.fetchall("SELECT event FROM audit_log ORDER BY id")]
    assert events.count("login_failed") == 3 and "login_locked" in events
    assert "nope" not in str(db.fetchall("SELECT detail FROM audit_log"))


def test_login_and_logout_need_the_csrf_token(client):
    c = client()
    c.get("/login")
    r = c.post("/login", data={"name": "anna", "password": PASSWORD})
    assert r.status_code == 403 and "Nothing was changed" in r.text
    token = login(c)
    assert c.post("/logout", data={}).status_code == 403
    assert c.get("/queue", follow_redirects=False).status_code == 200
    r = c.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303
    assert c.get("/queue", follow_redirects=False).status_code == 303


def test_disabled_user_is_out_at_the_next_request(client, db):
    from email_rag.auth import users

    c = client()
    login(c)
    users.set_disabled(db, "anna", True, "cli:root")
    r = c.get("/queue", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_security_headers(client):
    r = client().get("/login")
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["cache-control"] == "no-store"


# --- roles ---

def test_staff_get_403_on_admin_pages_and_actions(client, db):
    mail = make_email(db, make_mailbox(db), status="failed")
    job = make_job(db, mail, state="dead")
    c = client()
    token = login(c, "anna")
    for url in ("/admin/failures", f"/admin/mails/{mail}", "/admin/audit?event=x"):
        r = c.get(url)
        assert r.status_code == 403 and "admins" in r.text
    r = c.post("/admin/failures/retry", data={"csrf_token": token, "job_id": str(job)})
    assert r.status_code == 403
    r = c.post("/admin/failures/resolve", data={"csrf_token": token, "email_id": str(mail),
                                                 "note": "x"})
    assert r.status_code == 403
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "dead"
    assert c.get("/status").status_code == 200  # staff may see health
    admin = client()
    login(admin, "root")
    assert admin.get("/admin/failures").status_code == 200


# --- review ---

def test_queue_oldest_first_with_filters_and_age(client, db):
    sup, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    old = make_draft(db, make_email(db, sup, subject="old one", category="billing",
                                    received_at="2026-01-01 08:00:00"))
    new = make_draft(db, make_email(db, sales, subject="new one", category="technical"))
    c = client()
    login(c)
    html = c.get("/queue").text
    assert html.index("old one") < html.index("new one") and " d " in html  # age in days
    only = c.get("/queue?mailbox=sales").text
    assert "new one" in only and "old one" not in only
    only = c.get("/queue?category=billing").text
    assert "old one" in only and "new one" not in only
    assert f"/drafts/{old}?category=billing" in only and f"/drafts/{new}" not in only


def test_approve_with_edits_prg_and_double_click_gives_one_send(client, db, settings):
    mb = make_mailbox(db)
    first = make_draft(db, make_email(db, mb, subject="first"))
    second = make_draft(db, make_email(db, mb, subject="second"))
    c = client()
    token = login(c)
    r = c.post(f"/drafts/{first}/approve", data={"csrf_token": token,
                                                 "body": "Hallo,\r\nerledigt.\r\n"},
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/drafts/{second}"  # next in queue
    page = c.get(r.headers["location"]).text
    assert f"Draft #{first} approved with your edits" in page
    row = draft_row(db, first)
    assert row["status"] == "approved" and row["body_final"] == "Hallo,\nerledigt.\n"
    assert row["approved_by"] == "user:anna"
    # the same POST again (double click / reload of an old form): already approved, same send
    r = c.post(f"/drafts/{first}/approve", data={"csrf_token": token, "body": "other"},
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/drafts/{first}"
    page = c.get(f"/drafts/{first}").text
    assert "already approved by user:anna" in page and "is <b>approved</b>" in page
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1
    assert draft_row(db, first)["body_final"] == "Hallo,\nerledigt.\n"
    job = db.fetchone("SELECT * FROM jobs WHERE kind = 'send_draft'")
    q = Queue(settings.queue_name, connection=__import__("redis").Redis.from_url(settings.redis_url))
    assert q.job_ids == [rq_job_id(job['id'], q.name)]


def test_two_tabs_approving_at_once_give_one_approval(client, db):
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    tabs = [client(), client()]
    tokens = [login(tabs[0], "anna"), login(tabs[1], "root")]
    barrier, results = threading.Barrier(2), []

    def go(i):
        barrier.wait()
        r = tabs[i].post(f"/drafts/{draft}/approve",
                         data={"csrf_token": tokens[i], "body": f"text {i}"})
        results.append(r.text)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sum("already approved" in t for t in results) == 1
    assert sum(f"Draft #{draft} approved" in t for t in results) == 1
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1
    assert db.fetchone("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'send_draft'")["n"] == 1


def test_reject_needs_a_reason(client, db):
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    c = client()
    token = login(c)
    r = c.post(f"/drafts/{draft}/reject", data={"csrf_token": token, "reason": " "})
    assert "reason is required" in r.text and draft_row(db, draft)["status"] == "pending_review"
    r = c.post(f"/drafts/{draft}/reject", data={"csrf_token": token, "reason": "spam"},
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/queue"
    assert "rejected" in c.get("/queue").text
    row = draft_row(db, draft)
    assert (row["status"], row["rejected_by"], row["reject_reason"]) == ("rejected", "user:anna", "spam")
    r = c.post(f"/drafts/{draft}/approve", data={"csrf_token": token, "body": "x"})
    assert "was not approved" in r.text and draft_row(db, draft)["status"] == "rejected"


def test_post_without_csrf_changes_nothing(client, db):
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    c = client()
    login(c)
    for action, data in (("approve", {"body": "x"}), ("reject", {"reason": "x"}),
                         ("regenerate", {})):
        r = c.post(f"/drafts/{draft}/{action}", data=data)
        assert r.status_code == 403
        r = c.post(f"/drafts/{draft}/{action}", data={**data, "csrf_token": "forged"})
        assert r.status_code == 403
    assert draft_row(db, draft)["status"] == "pending_review"
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 0


def test_regenerate_from_the_draft_page(client, db, settings):
    mail = make_email(db, make_mailbox(db))
    draft = make_draft(db, mail)
    job = make_job(db, mail, state="done")
    c = client()
    token = login(c)
    r = c.post(f"/drafts/{draft}/regenerate", data={"csrf_token": token})
    assert "A new draft for mail" in r.text
    assert draft_row(db, draft)["status"] == "superseded"
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "queued"
    r = c.post(f"/drafts/{draft}/regenerate", data={"csrf_token": token})
    assert "already replaced" in r.text


def test_stale_draft_says_so(client, db):
    mb = make_mailbox(db)
    mail = make_email(db, mb, thread_key="t" * 64, subject="Printer")
    draft = make_draft(db, mail)
    db.execute("UPDATE drafts SET created_at = NOW(6) - INTERVAL 1 HOUR WHERE id = %s", (draft,))
    make_email(db, mb, thread_key="t" * 64, subject="Re: Printer - still broken")
    c = client()
    login(c)
    html = c.get(f"/drafts/{draft}").text
    assert "may be out of date" in html and "still broken" in html


def test_unknown_draft_is_404(client):
    c = client()
    login(c)
    assert c.get("/drafts/424242").status_code == 404


# --- admin ---

def test_failure_console_retry_bulk_resolve_and_send_decision(client, db, settings):
    mb = make_mailbox(db)
    a = make_email(db, mb, status="failed", subject="mail A")
    b = make_email(db, mb, status="failed", subject="mail B")
    ja, jb = make_job(db, a, state="dead"), make_job(db, b, state="dead")
    db.execute("UPDATE jobs SET attempts = 3, last_error = 'LLMError: 503' WHERE id IN (%s, %s)",
               (ja, jb))
    m = make_email(db, mb, status="manual", status_reason="LLM timed out twice")
    u = make_email(db, mb, subject="mail U")
    du = make_draft(db, u, status="approved")
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status, tries, last_error)"
               " VALUES (%s, '<u@x>', 'unknown', 1, 'timeout after DATA')", (du,))
    db.execute("UPDATE emails SET status = 'manual' WHERE id = %s", (u,))
    c = client()
    token = login(c, "root")
    html = c.get("/admin/failures").text
    assert "LLMError: 503" in html and "LLM timed out twice" in html and "timeout after DATA" in html
    assert f'name="job_id" value="{ja}" form="bulk"' in html
    # bulk retry of A and B
    r = c.post("/admin/failures/retry", data={"csrf_token": token, "job_id": [str(ja), str(jb)],
                                               "note": "LLM back"}, follow_redirects=False)
    assert r.status_code == 303
    assert f"Queued again: #{ja}, #{jb}" in c.get(r.headers["location"]).text
    assert {r["state"] for r in db.fetchall("SELECT state FROM jobs WHERE id IN (%s, %s)",
                                            (ja, jb))} == {"queued"}
    q = Queue(settings.queue_name, connection=__import__("redis").Redis.from_url(settings.redis_url))
    assert set(q.job_ids) == {rq_job_id(ja, q.name), rq_job_id(jb, q.name)}
    # retry of something not retryable is refused and said so
    r = c.post("/admin/failures/retry", data={"csrf_token": token, "job_id": str(ja)})
    assert f"Not retried: #{ja}" in r.text
    # resolve the manual mail with a note
    r = c.post("/admin/failures/resolve", data={"csrf_token": token, "email_id": str(m),
                                                 "note": "customer called"})
    assert f"Mail #{m} resolved" in r.text
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (m,))["status"] == "resolved"
    # the unknown send: a note is required, then mark it sent
    send = db.fetchone("SELECT id FROM send_attempts")["id"]
    r = c.post(f"/admin/sends/{send}/decide", data={"csrf_token": token, "decision": "mark_sent"})
    assert "a note is required" in r.text
    r = c.post(f"/admin/sends/{send}/decide", data={"csrf_token": token, "decision": "mark_sent",
                                                      "note": "customer confirmed"})
    assert f"Send attempt #{send} marked sent by you, not verified" in r.text
    assert db.fetchone("SELECT status FROM send_attempts")["status"] == "sent"
    actors = {e["actor"] for e in db.fetchall(
        "SELECT actor FROM audit_log WHERE event IN ('admin_retry', 'admin_mark_sent', 'state_changed')"
        " AND actor LIKE 'user:%'")}
    assert actors == {"user:root"}


def test_timeline_and_audit_search_pages(client, db, settings):
    mail = make_email(db, make_mailbox(db), subject="Timeline mail")
    draft = make_draft(db, mail)
    log = AuditLog(db, settings.audit_spool_path)
    log.record(AuditEvent("worker", "email", mail, "state_changed", "received", "classified"),
               AuditEvent("user:anna", "draft", draft, "approved", "pending_review", "approved"),
               AuditEvent("worker", "job", 77, "retry_scheduled", attempt=2))
    c = client()
    login(c, "root")
    html = c.get(f"/admin/mails/{mail}").text
    assert html.index("state_changed") < html.index("approved</b>") and "user:anna" in html
    html = c.get("/admin/audit?event=retry_scheduled").text
    assert "job #77" in html and "draft #" not in html
    html = c.get("/admin/audit?actor=user:anna&since=2000-01-01T00:00").text
    assert f"draft #{draft}" in html and "job #77" not in html
    assert "is not a time" in c.get("/admin/audit?since=tomorrow").text
    assert c.get("/admin/mails/99999").status_code == 400


# --- status, metrics, health ---

def test_status_page_metrics_and_healthz(client, db):
    mb = make_mailbox(db)
    make_job(db, make_email(db, mb, status="failed"), state="dead")
    AuditLog(db, "spool").record(
        AuditEvent("worker", "job", 1, "retry_scheduled"),
        AuditEvent("worker", "email", 1, "llm_attempt",
                   detail={"task": "classify", "duration_ms": 420.0, "outcome": "ok"}),
        AuditEvent("worker", "email", 1, "llm_attempt",
                   detail={"task": "classify", "duration_ms": 3100.0, "outcome": "timeout"}))
    c = client()
    login(c)
    html = c.get("/status").text
    assert "mariadb" in html and "redis" in html and "support" in html
    anon = client()
    r = anon.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in families.values() for s in f.samples}
    assert samples[("email_rag_mails", (("status", "failed"),))] == 1
    assert samples[("email_rag_dead_letters", ())] == 1
    assert samples[("email_rag_retries_total", ())] == 1
    assert samples[("email_rag_llm_attempt_duration_seconds_count", (("task", "classify"),))] == 2
    assert samples[("email_rag_llm_attempt_duration_seconds_bucket",
                    (("le", "0.5"), ("task", "classify")))] == 1
    assert samples[("email_rag_llm_attempt_duration_seconds_sum", (("task", "classify"),))] == pytest.approx(3.52)
    assert samples[("email_rag_llm_attempts_total", (("outcome", "timeout"), ("task", "classify")))] == 1
    assert samples[("email_rag_database_up", ())] == 1 and samples[("email_rag_redis_up", ())] == 1
    assert "Printer" not in r.text and "alice@" not in r.text  # no mail content
    assert anon.get("/healthz").text == "ok\n"
    assert anon.get("/queue", follow_redirects=False).status_code == 303


# --- untrusted mail content ---

def test_script_and_handlers_in_mail_are_inert_on_every_page(client, db):
    """GIVEN a mail whose subject, sender, text and HTML carry <script>, on* handlers and
    javascript: links WHEN any page shows it THEN it is text (escaped) or sanitised away."""
    mb = make_mailbox(db)
    mail = make_email(db, mb, subject=XSS_SUBJECT, body=XSS_BODY, body_html=XSS_HTML,
                      from_addr='x"><script>alert(9)</script>@evil.example',
                      category="<b onmouseover=alert(1)>cat</b>")
    draft = make_draft(db, mail, body='Re: <script>alert("draft")</script>',
                       sources='[{"subject": "<img src=x onerror=alert(8)>", "snippet": "<script>alert(10)</script>"}]')
    bad = make_email(db, mb, status="failed", subject=XSS_SUBJECT,
                     status_reason='<script>alert("reason")</script>')
    make_job(db, bad, state="dead")
    AuditLog(db, "spool").record(AuditEvent("worker", "email", bad, "step_failed",
                                            detail={"error": '<img src=x onerror=alert(11)>'}))
    c = client()
    login(c, "root")
    pages = ["/queue", f"/drafts/{draft}", "/admin/failures", f"/admin/mails/{mail}",
             f"/admin/mails/{bad}", "/admin/audit", f"/admin/audit?entity_type=email&entity_id={bad}"]
    for url in pages:
        r = c.get(url)
        assert r.status_code == 200, url
        assert_inert(r.text)
    draft_html = c.get(f"/drafts/{draft}").text
    assert "&lt;script&gt;alert(&#34;body&#34;)&lt;/script&gt;" in draft_html  # shown as text
    assert 'href="https://ok.example/"' in draft_html  # the sanitised HTML keeps a safe link
    assert "tracker.example" not in draft_html  # no remote image, no remote style
    assert "&lt;img src=x onerror=alert(11)&gt;" in c.get("/admin/audit").text


BIDI = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
        "\u2069")


def test_mail_text_is_bidi_isolated_and_controls_in_names_are_shown_on_every_page(client, db):
    """GIVEN mails whose sender name, addresses, subject and attachment name carry a
    right-to-left override, a failed one and one waiting for a no-reply decision, and an
    audit event naming the file WHEN an admin opens every page that shows them THEN no bidi
    control stands outside a <bdi> (it cannot reorder the rest of its line), and in names
    (sender, addresses, file names, event details) it is shown as <U+202E>."""
    mb = make_mailbox(db)
    rlo = "\u202e"
    cols = {"from_name": f"Alice {rlo}Kunde", "from_addr": f"alice{rlo}@customer.example",
            "to_addrs": "support@example.com",
            "attachments": f'[{{"filename": "Rechnung{rlo}fdp.exe", "content_type": '
                           '"application/pdf", "size": 10, "text_status": null}]'}
    mail = make_email(db, mb, subject=f"{rlo}TXT.exe Auftrag 77", **cols)
    draft = make_draft(db, mail)
    bad = make_email(db, mb, status="failed", subject=f"{rlo}kaputt", **cols)
    make_job(db, bad, state="dead")
    quiet = make_email(db, mb, status="no_reply_suggested", subject=f"{rlo}Danke",
                       needs_reply=False, **cols)
    AuditLog(db, "spool").record(AuditEvent("user:root", "email", mail, "attachment_downloaded",
                                            detail={"filename": f"Rechnung{rlo}fdp.exe"}))
    c = client()
    login(c, "root")
    shown = "&lt;U+202E&gt;</span>"
    for url, names in [("/queue", 1), (f"/drafts/{draft}", 3), ("/admin/failures", 1),
                       (f"/admin/mails/{bad}", 2), (f"/admin/mails/{mail}", 3),
                       ("/admin/audit", 1), ("/no-reply", 1), (f"/mails/{quiet}", 3)]:
        html = c.get(url).text
        outside = re.sub(r"<bdi>.*?</bdi>", "", html, flags=re.S)
        assert not [ch for ch in BIDI if ch in outside], url
        assert html.count(shown) >= names, (url, html.count(shown))
    draft_html = c.get(f"/drafts/{draft}").text
    assert f"Rechnung<span class=\"bidi-control\">{shown}fdp.exe" in draft_html
    assert f"Alice <span class=\"bidi-control\">{shown}Kunde" in draft_html


def test_mariadb_down_gives_503_pages_and_metrics_say_so(settings, redis_url):
    """GIVEN MariaDB unreachable WHEN pages are asked for THEN a 503 page says stored work is
    safe, /healthz is 503 and /metrics still answers with email_rag_database_up 0."""
    settings.db_port = 1  # nothing listens there
    settings.web_metrics_cache_seconds = 0
    with TestClient(create_app(settings), client=LOOPBACK) as c:
        r = c.post("/login", data={"name": "anna", "password": PASSWORD,
                                   "csrf_token": csrf_of(c.get("/login").text)})
        assert r.status_code == 503 and "Stored work is safe" in r.text
        assert "may or may not have been saved" in r.text
        assert c.get("/healthz").status_code == 503
        m = c.get("/metrics")
        assert m.status_code == 200 and "email_rag_database_up 0" in m.text
        assert "email_rag_redis_up 1" in m.text


# --- no reply suggested ---

def test_staff_can_open_every_mail_the_no_reply_list_asks_about(client, db):
    """GIVEN a no-reply suggestion in anna's mailbox and one in a mailbox she is not assigned
    WHEN anna (staff) follows each subject's link on /no-reply THEN it opens a page she may
    see (200, not the admins' timeline) with the mail's sender, text and attachments, and the
    two decisions; another mailbox's mail is not listed and its page is a 404."""
    import re as _re

    mine, other = make_mailbox(db, "support"), make_mailbox(db, "sales")
    users.set_mailbox(db, "anna", "support", True, "test")
    eid = make_email(db, mine, status="no_reply_suggested", subject="Danke für alles",
                     body="Vielen Dank, alles erledigt.\nGruß Alice", category="other",
                     needs_reply=False, from_name="Alice Kunde",
                     attachments='[{"filename": "Rechnung.pdf", "content_type": '
                                 '"application/pdf", "size": 2048}]')
    hidden = make_email(db, other, status="no_reply_suggested", subject="Nicht deins",
                        needs_reply=False)
    c = client()
    login(c)
    listing = c.get("/no-reply").text
    links = _re.findall(r'<td class="subject"><a href="([^"]+)"', listing)
    assert links and "Nicht deins" not in listing
    for href in links:
        r = c.get(href)
        assert r.status_code == 200, (href, r.status_code)
        assert "Vielen Dank, alles erledigt." in r.text and "Alice Kunde" in r.text
        assert "Rechnung.pdf" in r.text
        assert f"/no-reply/{eid}/confirm" in r.text and f"/no-reply/{eid}/reply" in r.text
    assert c.get(f"/mails/{hidden}").status_code == 404
    assert_inert(c.get(f"/mails/{eid}").text)


def test_no_reply_list_confirm_with_one_click(client, db):
    mb = make_mailbox(db)
    eid = make_email(db, mb, status="no_reply_suggested", subject=XSS_SUBJECT,
                     category="spam", needs_reply=False)
    c = client()
    token = login(c)
    page = c.get("/no-reply")
    assert page.status_code == 200 and f"/no-reply/{eid}/confirm" in page.text
    assert_inert(page.text)
    r = c.post(f"/no-reply/{eid}/confirm", data={"csrf_token": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/no-reply"
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (eid,))["status"] == "no_reply"
    assert "No mail waits" in c.get("/no-reply").text
    refused = c.post(f"/no-reply/{eid}/confirm", data={}, follow_redirects=False)
    assert refused.status_code in (400, 403)  # no CSRF token: refused


@pytest.mark.parametrize("error, says", [
    ("StoreUnavailableError", "did not answer"),
    ("OutcomeUnknownError", "may or may not have happened"),
])
def test_a_transient_or_unknown_outcome_error_is_a_503_with_retry_advice(app, monkeypatch,
                                                                         error, says):
    """GIVEN a service that is down for a moment (or an outcome nobody knows) WHEN a page
    meets it THEN the answer is 503 with Retry-After and says stored work is safe - not a 400
    claiming 'Nothing was changed'."""
    from email_rag.core import errors
    from email_rag.review import console

    def fail(*a, **k):
        raise getattr(errors, error)("the vector store is restarting")

    monkeypatch.setattr(console, "attention_items", fail)
    with browsers(app, log_in=True) as new:
        r = new("root").get("/admin/failures")
    assert r.status_code == 503 and r.headers["retry-after"] == "60"
    assert says in r.text and "Nothing was changed" not in r.text
