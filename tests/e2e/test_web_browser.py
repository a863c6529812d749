"""The web UI in a real headless Chromium, against the real `email-rag web` and worker.

Debian's chromium is driven by Playwright (its own browser download is not used).
The web server and the worker run as subprocesses (`python -m email_rag ...`)
against this test's MariaDB database and Redis db; replies go to the
fault-injecting aiosmtpd relay started here, which counts what it received.
Screenshots land in test-output/ for a person to look at.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.auth import users
from email_rag.sending import review
from email_rag.wiring.services import Services
from tests.e2e.test_cli_exit_codes_and_sent_wording import says_sent
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.helpers import ROOT
from tests.webutil import PASSWORD, XSS_BODY, XSS_HTML, XSS_SUBJECT, serve_web

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]
OUT = ROOT / "test-output"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (apt-get install chromium)")


@pytest.fixture
def relay():
    with FaultSmtpServer() as server:
        yield server


@pytest.fixture
def app_env(env, relay, tmp_path):
    values = {**os.environ, **env,
              "PYTHONPATH": str(ROOT),
              "EMAIL_RAG_SMTP_PORT": str(relay.port),
              "EMAIL_RAG_SMTP_TIMEOUT": "30",  # the relay is a thread of this test process
              "EMAIL_RAG_RECONCILE_SENT_FOLDER": "false",
              "EMAIL_RAG_RETRY_JITTER": "0",
              "EMAIL_RAG_WEB_SECRET_KEY": "e2e-secret",
              "EMAIL_RAG_WEB_METRICS_CACHE_SECONDS": "0",
              "EMAIL_RAG_LOG_LEVEL": "WARNING"}
    return values


@pytest.fixture
def web(app_env, tmp_path):
    """The real `python -m email_rag web` on a free port; yields its base URL."""
    with serve_web(app_env, tmp_path) as base:
        yield base


def run_worker(app_env, cwd, expect: int = 0, **extra) -> None:
    """`python -m email_rag worker --burst`: runs what is queued, then exits with its run
    result's code (0 completed, 2 completed with failures: docs/states.md)."""
    done = subprocess.run([sys.executable, "-m", "email_rag", "worker", "--burst"],
                          env={**app_env, **extra}, cwd=cwd, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == expect, done.stdout + done.stderr


@pytest.fixture
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def dialogs():
    return []


def new_page(browser, dialogs):
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(30_000)  # the web server is a subprocess on a busy machine

    def on_dialog(d):  # an alert() from mail content would land here
        dialogs.append(d.message)
        d.dismiss()
    page.on("dialog", on_dialog)
    return page


def log_in(page, base, name, password=PASSWORD):
    page.goto(base + "/queue")
    assert "/login" in page.url
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/queue")


def test_staff_review_approve_send_reject_and_xss_is_inert(web, app_env, browser, dialogs, db,
                                                           relay, tmp_path):
    """GIVEN three pending drafts (one from a mail full of script) WHEN a staff member logs in,
    edits and approves the first (with a double click), the worker runs, and rejects the second
    THEN the relay received the reply exactly once, the draft page says sent, the rejected
    mail is closed, nothing from the mail ran, and admin pages answer 403."""
    users.add_user(db, "anna", "staff", PASSWORD, "test")
    mb = make_mailbox(db)
    a = make_email(db, mb, subject="Drucker druckt nicht", category="technical",
                   priority="high", language="de", received_at="2026-11-30 07:10:00",
                   body="Hallo,\n\nunser Drucker im 2. Stock druckt seit heute nur leere "
                        "Seiten.\n\nGruss, Alice")
    b = make_email(db, mb, subject="Rechnung doppelt", category="billing", priority="normal",
                   language="de", received_at="2026-11-30 08:20:00",
                   body="Wir haben die Rechnung 4711 zweimal erhalten.")
    x = make_email(db, mb, subject=XSS_SUBJECT, body=XSS_BODY, body_html=XSS_HTML,
                   category="technical", priority="low", language="de",
                   received_at="2026-11-30 09:00:00")
    da = make_draft(db, a, body="Guten Tag,\n\nbitte starten Sie den Drucker neu.\n\n"
                                "Freundliche Gruesse\nIhr Support\n",
                    sources='[{"email_id": 12, "subject": "Drucker leer", "score": 0.83, '
                            '"snippet": "Toner war leer; nach Tausch ging es."}]')
    db_ = make_draft(db, b, body="Guten Tag,\n\nwir pruefen das.\n")
    dx = make_draft(db, x, body='Hallo <script>alert("draft")</script>')

    page = new_page(browser, dialogs)
    log_in(page, web, "anna")
    rows = page.locator("table.queue tbody tr")
    assert rows.count() == 3
    assert "Drucker druckt nicht" in rows.nth(0).inner_text()  # oldest first
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "queue.png"), full_page=True)

    page.click("text=Drucker druckt nicht")
    page.wait_for_url(f"**/drafts/{da}")
    assert "Toner war leer" in page.inner_text("ol.sources")
    page.screenshot(path=str(OUT / "review.png"), full_page=True)
    page.fill("#body", "Guten Tag Alice,\n\nbitte pruefen Sie den Toner.\n\nIhr Support\n")
    page.dblclick("#approve")  # a double click still approves once
    page.wait_for_url(f"**/drafts/{db_}")  # on to the next draft in the queue
    flash = page.inner_text(".flash.ok")
    assert f"Draft #{da} approved with your edits" in flash
    # nothing says "sent" before the relay answered (issue 16)
    assert "approved — queued to send, not sent yet" in flash and not says_sent(flash), flash
    page.goto(f"{web}/drafts/{da}")
    before = page.inner_text(".final-state")
    assert "not sent yet" in before and not says_sent(before), before
    page.goto(f"{web}/drafts/{db_}")

    run_worker(app_env, tmp_path)
    attempt = db.fetchone("SELECT * FROM send_attempts WHERE draft_id = %s", (da,))
    assert attempt["status"] == "sent"
    assert relay.count(attempt["message_id"]) == 1 and len(relay.received) == 1
    assert b"bitte pruefen Sie den Toner" in relay.received[0].data
    page.goto(f"{web}/drafts/{da}")
    assert "sent — accepted by the relay at " in page.inner_text(".final-state")
    assert page.get_attribute(".send-status", "data-verified-by") == "relay_250"

    page.goto(f"{web}/drafts/{db_}")
    page.fill("input[name=reason]", "Duplikat, schon per Telefon geklaert")
    page.click("#reject")
    page.wait_for_url(f"**/drafts/{dx}")  # next pending draft (the script mail)
    assert f"Draft #{db_} rejected" in page.inner_text(".flash.ok")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (b,))["status"] == "rejected"

    page.goto(f"{web}/drafts/{dx}")
    page.click("summary")  # open the sanitised HTML part too
    text = page.inner_text("body")
    assert '<script>alert("body")</script>' in text and "<img src=x onerror" in text
    assert page.locator(".mailhtml img").count() == 0
    assert page.locator(".mailhtml a[href^='javascript']").count() == 0
    assert page.input_value("#body") == 'Hallo <script>alert("draft")</script>'
    page.goto(f"{web}/queue")
    assert "<script>" in page.inner_text("table.queue")
    page.wait_for_timeout(200)
    assert dialogs == []

    for url in ("/admin/failures", f"/admin/mails/{x}", "/admin/audit"):
        response = page.goto(web + url)
        assert response.status == 403 and "for admins" in page.inner_text("main")


def test_admin_bulk_retries_failed_sends_and_reads_the_timeline(web, app_env, browser, dialogs,
                                                                  db, relay, settings, tmp_path):
    """GIVEN two approved replies whose sends died (relay 451, one attempt allowed) and a failed
    mail full of script WHEN an admin selects both in the failure console and retries THEN
    the worker sends each exactly once, the console is clear of them, the timeline shows the
    admin's retry, and the script mail stays inert on every admin page."""
    users.add_user(db, "root", "admin", PASSWORD, "test")
    mb = make_mailbox(db)
    mails = [make_email(db, mb, subject=f"Bestellung {n}", received_at=f"2026-11-30 0{n}:00:00")
             for n in (1, 2)]
    drafts = [make_draft(db, m) for m in mails]
    svc = Services(settings)
    try:
        for d in drafts:
            review.approve(svc, d, "anna")
    finally:
        svc.close()
    relay.add_fault("451 4.3.0 mailbox busy, try later", stage="data", times=2)
    run_worker(app_env, tmp_path, expect=2, EMAIL_RAG_MAX_ATTEMPTS="1")
    assert relay.received == [] and len(relay.injected) == 2
    assert {r["state"] for r in db.fetchall("SELECT state FROM jobs")} == {"dead"}
    bad = make_email(db, mb, status="failed", subject=XSS_SUBJECT,
                     status_reason='<script>alert("reason")</script>')
    make_job(db, bad, state="dead")

    page = new_page(browser, dialogs)
    log_in(page, web, "root")
    page.goto(web + "/admin/failures")
    for m in mails:
        row = page.locator(f"#mail-{m}")
        assert "451" in row.inner_text() and "dead" in row.inner_text()
    page.screenshot(path=str(OUT / "failures.png"), full_page=True)
    for m in mails:
        page.check(f"#mail-{m} input[name=job_id]")
    page.fill("#bulk input[name=note]", "relay fixed")
    page.click("#retry-selected")
    page.wait_for_selector(".flash.ok")
    assert "Queued again" in page.inner_text(".flash.ok")

    run_worker(app_env, tmp_path)
    sends = db.fetchall("SELECT status, message_id FROM send_attempts ORDER BY id")
    assert [s["status"] for s in sends] == ["sent", "sent"]
    assert sorted(relay.count(s["message_id"]) for s in sends) == [1, 1]
    page.goto(web + "/admin/failures")
    assert page.locator(f"#mail-{mails[0]}").count() == 0
    assert page.locator(f"#mail-{bad}").count() == 1

    page.goto(f"{web}/admin/mails/{mails[0]}")
    timeline = page.inner_text("table.events")
    assert "dead_letter" in timeline and "admin_retry" in timeline and "user:root" in timeline
    assert timeline.index("admin_retry") < timeline.rindex("sent")
    page.screenshot(path=str(OUT / "timeline.png"), full_page=True)

    for url in (f"/admin/mails/{bad}", "/admin/failures?kind=failed",
                f"/admin/audit?entity_type=email&entity_id={bad}", "/admin/audit", "/status"):
        page.goto(web + url)
        assert page.locator("main").count() == 1
    page.goto(f"{web}/admin/mails/{bad}")
    assert '<script>alert("reason")</script>' in page.inner_text("main")
    page.wait_for_timeout(200)
    assert dialogs == []


def test_admin_exports_and_erases_a_person_and_the_vector_worker_carries_it_out(
        web, app_env, browser, dialogs, db, tmp_path):
    """GIVEN a person's mail with a draft and another person's mail, local Qdrant WHEN an
    admin downloads the person's archive, asks to erase them with a reason, checks what
    goes and confirms THEN the erasure is queued, the vector worker (`worker --with-vectors
    --burst`) carries it out, and the page lists it done under the address's hash."""
    import zipfile

    users.add_user(db, "root", "admin", PASSWORD, "test")
    mb = make_mailbox(db)
    alice = make_email(db, mb, subject="Rechnung 4711", from_addr="alice@customer.example")
    make_draft(db, alice)
    other = make_email(db, mb, subject="Router", from_addr="carol@other.example")

    page = new_page(browser, dialogs)
    log_in(page, web, "root")
    page.goto(web + "/admin/privacy")
    page.fill("#export-address", "alice@customer.example")
    with page.expect_download() as got:
        page.click("#export-submit")
    archive = tmp_path / "export.zip"
    got.value.save_as(archive)
    with zipfile.ZipFile(archive) as z:
        assert f"mails/{alice}/mail.txt" in z.namelist()
        assert not [n for n in z.namelist() if n.startswith(f"mails/{other}/")]

    page.fill("#forget-address", "alice@customer.example")
    page.fill("#forget-reason", "Art. 17: the customer asked by phone")
    page.click("#forget-check")
    page.wait_for_selector("#forget-plan")
    assert "Erase for good" in page.inner_text("#forget-confirm")
    page.screenshot(path=str(OUT / "privacy-confirm.png"), full_page=True)
    assert db.fetchone("SELECT COUNT(*) AS n FROM emails")["n"] == 2
    page.click("#forget-confirm-button")
    page.wait_for_selector(".flash.ok")
    assert "Erasure queued" in page.inner_text(".flash.ok")

    done = subprocess.run([sys.executable, "-m", "email_rag", "worker", "--with-vectors",
                           "--burst"], env=app_env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    page.goto(web + "/admin/privacy")
    listed = page.inner_text("#privacy-erasures")
    assert "done" in listed and "alice" not in listed.lower()
    page.screenshot(path=str(OUT / "privacy.png"), full_page=True)
    assert [r["id"] for r in db.fetchall("SELECT id FROM emails")] == [other]
    assert dialogs == []
