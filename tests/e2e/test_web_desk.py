"""The review desk (issue 18) against the real `email-rag web` process: forwarded headers,
and the staff workflow in a real headless Chromium (Debian's chromium via Playwright)."""

from __future__ import annotations

import json
import os
import time
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest

from tests.factories import make_draft, make_email, make_mailbox
from tests.helpers import ROOT
from tests.webutil import PASSWORD, csrf_of, make_user, serve_web

OUT = ROOT / "test-output"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def web_env(env, tmp_path):
    return {**os.environ, **env, "PYTHONPATH": str(ROOT), "EMAIL_RAG_WEB_SECRET_KEY": "e2e",
            "EMAIL_RAG_LOG_LEVEL": "WARNING"}


def failed_login_client(base: str, db, forwarded_for: str) -> str:
    # a TLS proxy's headers (https: a remote browser may log in), the cookie carried by hand
    headers = {"X-Forwarded-For": forwarded_for, "X-Forwarded-Proto": "https"}
    with httpx.Client(base_url=base) as c:
        form = c.get("/login", headers=headers)
        r = c.post("/login", data={"name": "anna", "password": "wrong-one",
                                   "csrf_token": csrf_of(form.text)},
                   headers={**headers, "Cookie": form.headers["set-cookie"].split(";")[0]})
        assert r.status_code == 401
    return db.fetchone("SELECT JSON_VALUE(detail, '$.client') AS client FROM audit_log "
                       "WHERE event = 'login_failed' ORDER BY id DESC LIMIT 1")["client"]


def test_forwarded_for_is_believed_only_from_configured_proxies(web_env, db, tmp_path: Path):
    """GIVEN the web UI without trusted proxies WHEN a client sends X-Forwarded-For THEN the
    audit log (and the login throttle) see the peer address; WHEN 127.0.0.1 is a configured
    proxy THEN its forwarded address is used."""
    make_user(db, "anna")
    with serve_web(web_env, tmp_path) as base:
        assert failed_login_client(base, db, "203.0.113.9") == "127.0.0.1"
    trusted = {**web_env, "EMAIL_RAG_WEB_TRUSTED_PROXIES": "127.0.0.1"}
    with serve_web(trusted, tmp_path) as base:
        assert failed_login_client(base, db, "203.0.113.9") == "203.0.113.9"



def proxied_login(base: str, proto: str) -> httpx.Response:
    """A login through a TLS proxy on this machine that forwards ``proto`` and a browser's
    address on another machine (the session cookie carried by hand: a Secure cookie is not
    sent back over the proxy's plain-http hop by a cookie jar)."""
    headers = {"X-Forwarded-Proto": proto, "X-Forwarded-For": "203.0.113.9"}
    with httpx.Client(base_url=base) as c:
        form = c.get("/login", headers=headers)
        cookie = form.headers["set-cookie"].split(";")[0]
        return c.post("/login", data={"name": "anna", "password": PASSWORD,
                                      "csrf_token": csrf_of(form.text)},
                      headers={**headers, "Cookie": cookie})


def test_behind_a_trusted_tls_proxy_the_cookie_is_secure_and_plain_http_is_refused(
        web_env, db, tmp_path: Path):
    """GIVEN the real `email-rag web` behind a proxy it trusts (EMAIL_RAG_WEB_TRUSTED_PROXIES)
    and no other setting WHEN a remote browser logs in through it over https THEN the cookie
    is Secure and HSTS is sent; WHEN the proxy forwards plain http THEN the login is refused
    with the reason."""
    make_user(db, "anna")
    trusted = {**web_env, "EMAIL_RAG_WEB_TRUSTED_PROXIES": "127.0.0.1"}
    with serve_web(trusted, tmp_path) as base:
        ok = proxied_login(base, "https")
        assert ok.status_code == 303, ok.text
        assert "; secure" in ok.headers["set-cookie"].lower()
        assert ok.headers["strict-transport-security"].startswith("max-age=")
        refused = proxied_login(base, "http")
        assert refused.status_code == 403 and "not encrypted" in refused.text

# --- the staff workflow in Chromium ---

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
expect.set_options(timeout=30_000)  # the web server is a subprocess on a busy machine
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason="Debian's chromium is not installed")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def web(web_env, tmp_path):
    with serve_web(web_env, tmp_path) as base:
        yield base


@pytest.fixture
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def open_as(browser, base, name, width=1440, height=1000):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)  # the web server is a subprocess on a busy machine
    page.dialogs = []

    def on_dialog(d):
        page.dialogs.append((d.type, d.message))
        d.dismiss()
    page.on("dialog", on_dialog)
    page.goto(base + "/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/queue")
    return page


def desk_data(db):
    """A realistic queue: a thread with our sent reply and a follow-up carrying a PDF and a
    source, an urgent mail, a subject with a right-to-left override, and 60 ordinary ones."""
    from email_rag_harness.testing import documents

    from email_rag.mail.mime import parse_mail

    mb = make_mailbox(db)
    first = make_email(db, mb, subject="Rechnung 4711 doppelt abgebucht", thread_key="t-4711",
                       from_name="Carla Kunde", from_addr="carla@example.org",
                       body="Guten Tag,\nmir wurde die Rechnung 4711 zweimal abgebucht.\nCarla",
                       received_at="2026-11-27 08:00:00", sent_at="2026-11-27 07:58:00")
    ours = make_draft(db, first, body="Guten Tag Frau Kunde,\nwir pruefen die Abbuchung und "
                                      "melden uns.\nIhr Support")
    db.execute("UPDATE drafts SET status = 'sent', body_final = body_draft, approved_by ="
               " 'user:bob', approved_at = '2026-11-27 09:00:00' WHERE id = %s", (ours,))
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status, recipients, sent_at)"
               " VALUES (%s, '<r1@support>', 'sent', 'carla@example.org',"
               " '2026-11-27 09:00:04')", (ours,))
    msg = EmailMessage()
    msg["From"] = "Carla Kunde <carla@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Re: Rechnung 4711 doppelt abgebucht"
    msg["Message-ID"] = "<follow@example.org>"
    msg.set_content("Guten Tag,\nes ist immer noch doppelt abgebucht, Rechnung anbei.\nCarla")
    msg.add_attachment(documents.pdf(["Rechnung 4711", "Betrag 99,00 EUR"]),
                       maintype="application", subtype="pdf", filename="rechnung-4711.pdf")
    raw = msg.as_bytes()
    follow = make_email(db, mb, subject="Re: Rechnung 4711 doppelt abgebucht",
                        thread_key="t-4711", from_name="Carla Kunde",
                        from_addr="carla@example.org", category="billing", priority="high",
                        language="de", body="Guten Tag,\nes ist immer noch doppelt abgebucht, "
                        "Rechnung anbei.\nCarla", raw=raw,
                        attachments=parse_mail(raw).attachments_json(),
                        received_at="2026-11-30 08:00:00", sent_at="2026-11-30 07:59:00")
    sources = {"sources": [{"email_id": 3, "subject": "Doppelte Abbuchung Rechnung 4690",
                            "score": 0.81, "category": "billing",
                            "snippet": "Mir wurde der Betrag doppelt abgebucht.",
                            "reply": {"text": "Wir haben die zweite Abbuchung storniert; das "
                                              "Geld ist in 3-5 Tagen zurueck."}}]}
    follow_draft = make_draft(db, follow, sources=json.dumps(sources),
                              body="Guten Tag Frau Kunde,\n\nwir haben die doppelte Abbuchung "
                                   "gefunden und storniert.\n\nFreundliche Gruesse\nIhr Support")
    urgent = make_draft(db, make_email(db, mb, subject="Server komplett down", priority="urgent",
                                       category="technical", received_at="2026-11-30 09:30:00",
                                       from_addr="ops@bigcustomer.example"))
    rlo = make_draft(db, make_email(db, mb, subject="\u202eTXT.exe Auftrag 77",
                                    received_at="2026-11-29 12:00:00", priority="normal"))
    others = [make_draft(db, make_email(db, mb, subject=f"Frage {i} zur Lieferung",
                                        priority="normal", category="order",
                                        received_at=f"2026-11-30 1{i // 30}:{i % 30 * 2:02d}:00",
                                        from_addr=f"kunde{i}@example.com"))
              for i in range(60)]
    return {"follow": follow_draft, "urgent": urgent, "rlo": rlo, "others": others}


@needs_chromium
def test_queue_paging_sorting_search_and_the_draft_page(web, db, browser):
    """GIVEN 63 pending drafts WHEN anna works the queue in Chromium THEN it shows the true
    count and pages 50 at a time, sorts urgent first, finds the invoice by number, and the
    draft page shows the thread with our sent reply, the PDF, the source as a card; j/k move
    through the queue and approving by keyboard asks first."""
    make_user(db, "anna")
    data = desk_data(db)
    page = open_as(browser, web, "anna")
    assert page.inner_text("#queue-total") == "63"
    assert page.inner_text("#range") == "1–50 of 63"
    assert page.locator("table.queue tbody tr").count() == 50
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "desk-queue.png"), full_page=False)
    page.click("#next-page")
    expect(page.locator("#range")).to_have_text("51–63 of 63")
    page.select_option("#sort", "priority")
    page.click("form.filters button[type=submit]")
    expect(page.locator("table.queue tbody tr").first).to_have_attribute(
        "id", f"draft-{data['urgent']}")
    # the right-to-left override stays inside its cell
    cell = page.locator(f"#draft-{data['rlo']} td.subject bdi")
    assert cell.count() == 1
    page.fill("#search", "4711")
    page.press("#search", "Enter")
    rows = page.locator("table.queue tbody tr")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("id") == f"draft-{data['follow']}"
    page.screenshot(path=str(OUT / "desk-search.png"))

    page.click(f"#draft-{data['follow']} td.subject a")
    page.wait_for_url(f"**/drafts/{data['follow']}?*")
    conversation = page.inner_text("ol.conversation")
    assert conversation.index("zweimal abgebucht") < conversation.index("wir pruefen") \
        < conversation.index("this mail")
    assert page.locator("a.attachment").inner_text() == "rechnung-4711.pdf"
    assert "We answered" in page.inner_text("ol.sources")
    assert "Re: Re:" not in page.inner_text(".reply-to")
    page.screenshot(path=str(OUT / "desk-draft.png"), full_page=True)

    page.goto(f"{web}/drafts/{data['others'][0]}")
    page.keyboard.press("j")
    page.wait_for_url(f"**/drafts/{data['others'][1]}*")
    page.keyboard.press("k")
    page.wait_for_url(f"**/drafts/{data['others'][0]}*")
    page.keyboard.press("a")  # asks first
    expect(page.locator("#confirm-approve")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#confirm-approve")).to_be_hidden()
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s",
                       (data["others"][0],))["status"] == "pending_review"
    page.click("#body")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#confirm-approve")).to_be_visible()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/drafts/{data['others'][1]}*")
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s",
                       (data["others"][0],))["status"] == "approved"
    assert "Keyboard shortcuts" in page.inner_text("details.shortcuts")


@needs_chromium
def test_two_agents_autosave_conflict_and_no_lost_edits(web, db, browser):
    """GIVEN anna and bob on the same draft WHEN anna types (saved as she types), bob sees
    that she is editing and approves his version, and anna then approves THEN anna is told
    bob approved it and her text is still there; leaving with text not yet saved and
    regenerating over edits both ask first."""
    make_user(db, "anna")
    make_user(db, "bob")
    data = desk_data(db)
    draft = data["follow"]
    anna, bob = open_as(browser, web, "anna"), open_as(browser, web, "bob")
    anna.goto(f"{web}/drafts/{draft}")
    bob.goto(f"{web}/drafts/{draft}")
    anna.click("#body")
    anna.keyboard.press("Control+End")
    anna.keyboard.type("\nPS: Die Gutschrift sehen Sie in 3 Tagen.")
    expect(anna.locator("#save-state")).to_have_text("Your text is saved.")
    bob.reload()
    assert "Being edited by anna" in bob.inner_text(".editing")
    bob.click("#approve")
    # bob's approval is committed (he is on the next draft, told so) before anna types on:
    # her next save must find the draft changed
    expect(bob.locator(".flash.ok")).to_contain_text(f"Draft #{draft} approved")
    anna.keyboard.type(" Danke!")
    anna.wait_for_selector("#live-changed:not([hidden])")
    assert "bob approved it" in anna.inner_text("#live-changed")
    anna.click("#approve")
    anna.wait_for_selector("#kept-text")  # the answer's page (her old page showed a
    # .flash.error too: the live notice)
    assert "bob approved it" in anna.inner_text(".flash.error")
    assert "Die Gutschrift sehen Sie in 3 Tagen. Danke!" in anna.input_value("#kept-text")
    anna.screenshot(path=str(OUT / "desk-conflict.png"), full_page=True)
    assert db.fetchone("SELECT approved_by FROM drafts WHERE id = %s", (draft,)) == \
        {"approved_by": "user:bob"}

    other = data["others"][5]
    anna.goto(f"{web}/drafts/{other}")
    anna.route("**/autosave", lambda route: route.abort())  # the save does not get through
    anna.click("#body")
    anna.keyboard.type("Nicht gespeichert")
    expect(anna.locator("#save-state")).to_contain_text("Not saved")
    anna.click("#regenerate")
    assert anna.dialogs[-1][0] == "confirm" and "throws away your edits" in anna.dialogs[-1][1]
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (other,))["status"] == \
        "pending_review"
    anna.close(run_before_unload=True)
    deadline = time.monotonic() + 30  # the dialog event comes when the browser gets to it
    while anna.dialogs[-1][0] != "beforeunload" and time.monotonic() < deadline:
        anna.wait_for_timeout(100)
    assert anna.dialogs[-1][0] == "beforeunload"


# Each visible character's box, in the order of the text (controls and spaces left out):
# text read in logical order has every character right of the one before on its line.
CHAR_BOXES = """el => {
  const out = [];
  const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      if (/[\\s\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]/.test(node.data[i])) continue;
      const r = document.createRange();
      r.setStart(node, i);
      r.setEnd(node, i + 1);
      const b = r.getBoundingClientRect();
      if (b.width > 0) out.push([node.data[i], b.left, b.top]);
    }
  }
  return out;
}"""


def reads_in_logical_order(locator) -> bool:
    boxes = locator.evaluate(CHAR_BOXES)
    assert len(boxes) > 5
    return all(b[1] > a[1] or b[2] > a[2] + 2 for a, b in zip(boxes, boxes[1:], strict=False))


@needs_chromium
def test_a_right_to_left_override_cannot_mirror_names_on_the_draft_page(web, db, browser):
    """GIVEN a mail from "Alice <U+202E>Kunde" with an attachment "Rechnung<U+202E>fdp.exe"
    WHEN anna opens its draft in Chromium THEN the file name reads in logical order with the
    control shown ("Rechnung<U+202E>fdp.exe", never "Rechnungexe.pdf"), and the sender line,
    recipient included, is not mirrored."""
    make_user(db, "anna")
    mail = make_email(db, make_mailbox(db), subject="Rechnung anbei",
                      from_name="Alice \u202eKunde", from_addr="alice@customer.example",
                      to_addrs="support@example.com",
                      attachments='[{"filename": "Rechnung\u202efdp.exe", "content_type": '
                                  '"application/pdf", "size": 10, "text_status": null}]')
    draft = make_draft(db, mail)
    page = open_as(browser, web, "anna")
    page.goto(f"{web}/drafts/{draft}")
    link, sender = page.locator("a.attachment"), page.locator("section.mail p.from")
    expect(sender).to_contain_text("support@example.com")
    assert reads_in_logical_order(link)
    assert reads_in_logical_order(sender)
    expect(link).to_have_text("Rechnung<U+202E>fdp.exe")
    expect(sender).to_contain_text("Alice <U+202E>Kunde")



@needs_chromium
def test_a_right_to_left_override_in_a_subject_and_body_is_a_visible_marker(web, db, browser):
    """GIVEN a mail with the subject "Rechnung<U+202E>fdp.exe" and the same override in its
    text WHEN anna opens the queue and the draft in Chromium THEN the queue row and the
    draft's heading read "Rechnung<U+202E>fdp.exe" in logical order (the marker visible, never
    "Rechnung exe.pdf"), and so does the line of the mail's text."""
    make_user(db, "anna")
    mail = make_email(db, make_mailbox(db), subject="Rechnung\u202efdp.exe",
                      body="Anbei die Datei Rechnung\u202efdp.exe von heute.")
    draft = make_draft(db, mail)
    page = open_as(browser, web, "anna")
    row = page.locator(f"#draft-{draft} td.subject a")
    expect(row).to_have_text("Rechnung<U+202E>fdp.exe")
    assert reads_in_logical_order(row)
    page.goto(f"{web}/drafts/{draft}")
    heading = page.locator("h1.subject")
    expect(heading).to_have_text("Rechnung<U+202E>fdp.exe")
    assert reads_in_logical_order(heading)
    assert heading.locator("span.bidi-control").count() == 1  # styled as a marker
    text = page.locator("section.mail pre.mailtext")
    expect(text).to_have_text("Anbei die Datei Rechnung<U+202E>fdp.exe von heute.")
    assert reads_in_logical_order(text)
    assert "exe.pdf" not in page.inner_text("body")

def test_the_real_server_refuses_a_300_mb_login_post_without_reading_it(web):
    """GIVEN the real `email-rag web` WHEN an anonymous client sends the headers of a 300 MB
    login POST and no body THEN the answer is 413 at once (the server does not wait for the
    body it would have to read)."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(web)
    with socket.create_connection((url.hostname, url.port), timeout=60) as s:
        s.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/x-www-form-urlencoded\r\n"
                  b"Content-Length: 314572800\r\n\r\nname=a")
        head = s.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 413"), head[:200]


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_login_flood_from_40_clients_keeps_the_web_process_small(web_env, db, tmp_path):
    """GIVEN the real `email-rag web` behind a trusted proxy WHEN 40 clients (40 addresses)
    post 120 logins with random names at once THEN the process's peak memory stays under
    300 MB (password checks, 64 MiB each, wait in line instead of running 40 at once), every
    one is answered 401, and a real login still works afterwards."""
    import secrets
    from concurrent.futures import ThreadPoolExecutor

    make_user(db, "anna")
    env = {**web_env, "EMAIL_RAG_WEB_TRUSTED_PROXIES": "127.0.0.1"}
    with serve_web(env, tmp_path) as base:

        def client(i: int) -> list[int]:
            # through the TLS proxy (https: remote logins are checked), cookie carried by hand
            headers = {"X-Forwarded-For": f"198.51.100.{i}", "X-Forwarded-Proto": "https"}
            with httpx.Client(base_url=base, timeout=120) as c:
                form = c.get("/login", headers=headers)
                headers["Cookie"] = form.headers["set-cookie"].split(";")[0]
                return [c.post("/login", data={"name": secrets.token_hex(8), "password": "x",
                                               "csrf_token": csrf_of(form.text)},
                               headers=headers).status_code
                        for _ in range(3)]

        with ThreadPoolExecutor(40) as pool:
            answers = [s for statuses in pool.map(client, range(40)) for s in statuses]
        assert answers == [401] * 120
        assert peak_memory_mb(base.pid) < 300, peak_memory_mb(base.pid)
        with httpx.Client(base_url=base) as c:
            r = c.post("/login", data={"name": "anna", "password": PASSWORD,
                                       "csrf_token": csrf_of(c.get("/login").text)})
            assert r.status_code == 303


def test_ten_parallel_10_mib_downloads_keep_the_web_process_small(web, db):
    """GIVEN a draft whose mail carries a 10 MiB attachment WHEN ten agents download it at
    once from the real `email-rag web` THEN each gets the exact bytes and the process's peak
    memory grows by less than 250 MB (attachments are decoded a few at a time, not ten
    copies of the mail at once)."""
    import hashlib
    import secrets
    from concurrent.futures import ThreadPoolExecutor

    from email_rag.mail.mime import parse_mail

    make_user(db, "anna")
    blob = secrets.token_bytes(10 * 1024 * 1024)
    msg = EmailMessage()
    msg["From"] = "Carla Kunde <carla@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Grosse Datei"
    msg["Message-ID"] = "<big@example.org>"
    msg.set_content("Anbei die Datei.")
    msg.add_attachment(blob, maintype="application", subtype="octet-stream",
                       filename="daten.bin")
    raw = msg.as_bytes()
    draft = make_draft(db, make_email(db, make_mailbox(db), subject="Grosse Datei", raw=raw,
                                      attachments=parse_mail(raw).attachments_json()))
    with httpx.Client(base_url=web) as c:
        token = csrf_of(c.get("/login").text)
        c.post("/login", data={"name": "anna", "password": PASSWORD, "csrf_token": token})
        cookies = dict(c.cookies)
    before = peak_memory_mb(web.pid)

    def download(_: int) -> str:
        with httpx.Client(base_url=web, cookies=cookies, timeout=120) as c:
            r = c.get(f"/drafts/{draft}/attachments/1")
            assert r.status_code == 200
            return hashlib.sha256(r.content).hexdigest()

    with ThreadPoolExecutor(10) as pool:
        digests = list(pool.map(download, range(10)))
    assert digests == [hashlib.sha256(blob).hexdigest()] * 10
    grown = peak_memory_mb(web.pid) - before
    assert grown < 250, grown


PAGE_WIDTH = "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"


@needs_chromium
def test_the_queue_and_the_draft_page_fit_a_390_px_phone(web, db, browser):
    """GIVEN the realistic queue (long subjects and addresses) WHEN anna opens the queue and a
    draft in Chromium at 390 x 844 px THEN neither page is wider than the screen (nothing to
    scroll sideways): the queue's columns fold into lines."""
    make_user(db, "anna")
    data = desk_data(db)
    page = open_as(browser, web, "anna", width=390, height=844)
    assert page.locator("table.queue tbody tr").count() == 50
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "desk-queue-390.png"), full_page=False)
    assert page.evaluate(PAGE_WIDTH) <= 390, page.evaluate(PAGE_WIDTH)
    page.goto(f"{web}/drafts/{data['follow']}")
    page.screenshot(path=str(OUT / "desk-draft-390.png"), full_page=False)
    assert page.evaluate(PAGE_WIDTH) <= 390, page.evaluate(PAGE_WIDTH)


# a box's place in the page (document coordinates, CSS px) and in the viewport
BOX = "el => { const r = el.getBoundingClientRect();" \
      " return {top: r.top + window.scrollY, view_top: r.top, view_bottom: r.bottom}; }"


@needs_chromium
def test_on_a_390_px_phone_the_first_mail_and_the_reply_actions_are_in_reach(web, db, browser):
    """GIVEN a queue with a saved view and 63 drafts WHEN anna opens it on a 390 x 844 phone
    THEN the first mail's row starts within the first screen (the filters are folded behind
    one button; search stays), and opening the filters shows them; on a draft page the
    Approve button is on the screen at once and stays there while she scrolls through the
    mail, and it approves the draft."""
    make_user(db, "anna")
    data = desk_data(db)
    page = open_as(browser, web, "anna", width=390, height=844)
    first = page.locator("table.queue tbody tr").first
    row = first.evaluate(BOX)
    print(f"390x844 queue: first mail's row at {row['top']:.0f} px")
    assert row["top"] < 844 - 40, row  # the row itself on the first screen
    expect(page.locator("#search")).to_be_visible()
    state = page.locator("#filter-state")
    expect(state).to_be_hidden()
    page.click("label[for=queue-tools]")
    expect(state).to_be_visible()
    expect(page.locator("#bulk-action")).to_be_visible()
    page.select_option("#filter-state", "pending_review")
    page.click("form.filters button[type=submit]")
    expect(page.locator("table.queue tbody tr")).to_have_count(50)

    draft = data["others"][3]
    page.goto(f"{web}/drafts/{draft}")
    bar = page.locator("#bar-approve")
    at_load = bar.evaluate(BOX)
    approve = page.locator("#approve").evaluate(BOX)
    print(f"390x844 draft: Approve of the bar at {at_load['view_top']:.0f}-"
          f"{at_load['view_bottom']:.0f} px of the screen; the form's own button at "
          f"{approve['top']:.0f} px in the page")
    assert 0 <= at_load["view_top"] and at_load["view_bottom"] <= 844, at_load
    page.locator("section.mail pre.mailtext").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 900)")
    page.wait_for_function("window.scrollY > 300")  # scrolling may finish after the call
    scrolled = bar.evaluate(BOX)
    assert 0 <= scrolled["view_top"] and scrolled["view_bottom"] <= 844, scrolled
    page.screenshot(path=str(OUT / "desk-draft-390-actions.png"), full_page=False)
    bar.click()
    page.wait_for_url(f"**/drafts/{data['others'][4]}*")
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == \
        "approved"
    page.set_viewport_size({"width": 1440, "height": 1000})  # a desktop shows no bar
    expect(page.locator("#bar-approve")).to_be_hidden()

@needs_chromium
def test_a_german_agent_reads_the_editor_and_states_in_german(web, db, browser):
    """GIVEN anna chose German WHEN she opens a draft and types THEN the editor's live
    messages (made by the page's script) are German, as are the draft's state, category
    and priority; no English state or category is left on the page."""
    from email_rag.auth import users

    make_user(db, "anna")
    anna = users.active_user(db, db.fetchone("SELECT id FROM users WHERE name = 'anna'")["id"])
    users.set_prefs(db, anna, "Europe/Berlin", "de")
    data = desk_data(db)
    page = open_as(browser, web, "anna")
    queue = page.inner_text("table.queue")
    assert "Bestellung" in queue and "dringend" in queue
    assert not {"order", "urgent", "technical", "billing"} & set(queue.split())
    page.goto(f"{web}/drafts/{data['follow']}")
    meta = page.inner_text("p.meta")
    assert "Rechnung" in meta and "hoch" in meta and "wartet auf Prüfung" in meta, meta
    assert "pending_review" not in meta and "billing" not in meta
    page.fill("#body", "Guten Tag,\nwir kümmern uns.")
    expect(page.locator("#save-state")).to_have_text("Ihr Text ist gespeichert.")


@needs_chromium
def test_two_agents_ownership_views_and_the_collision_warning(web, db, browser):
    """GIVEN anna and bob in two browser contexts WHEN anna opens a draft (without typing)
    THEN it is hers: bob opening it is warned at once that anna has it open and sees her as
    the owner; anna's "Mine" view lists it, bob's "Unassigned" does not; WHEN bob assigns it
    to himself through the page THEN both see him as owner (audited as user:bob); WHEN he
    unassigns it THEN it is back in "Unassigned"."""
    make_user(db, "anna")
    make_user(db, "bob")
    data = desk_data(db)
    draft = data["urgent"]
    anna, bob = open_as(browser, web, "anna"), open_as(browser, web, "bob")
    anna.goto(f"{web}/drafts/{draft}")
    expect(anna.locator("#owner")).to_contain_text("Assigned to anna (you)")
    expect(anna.locator(".collision")).to_have_count(0)
    bob.goto(f"{web}/drafts/{draft}")
    expect(bob.locator(".collision")).to_contain_text("anna has this draft open as well")
    expect(bob.locator("#owner .owner-name")).to_have_text("anna")
    OUT.mkdir(exist_ok=True)
    bob.screenshot(path=str(OUT / "desk-collision.png"), full_page=False)
    anna.goto(f"{web}/queue")
    anna.click("#view-mine")
    expect(anna.locator("table.queue tbody tr")).to_have_count(1)
    assert anna.locator("table.queue tbody tr").first.get_attribute("id") == f"draft-{draft}"
    anna.screenshot(path=str(OUT / "desk-queue-mine.png"), full_page=False)
    bob.goto(f"{web}/queue")
    bob.click("#view-unassigned")
    expect(bob.locator("#view-unassigned")).to_have_class("on")
    assert bob.locator(f"#draft-{draft}").count() == 0
    assert bob.inner_text("#queue-total") == "62"
    bob.goto(f"{web}/drafts/{draft}")
    bob.select_option("#assign-to", "bob")
    bob.click("#assign")
    expect(bob.locator(".flash.ok")).to_contain_text("is now assigned to bob")
    expect(bob.locator("#owner")).to_contain_text("Assigned to bob (you)")
    anna.goto(f"{web}/drafts/{draft}")
    expect(anna.locator("#owner .owner-name")).to_have_text("bob")
    expect(anna.locator(".collision")).to_contain_text("bob has this draft open as well")
    assert db.fetchone("SELECT actor FROM audit_log WHERE event = 'assigned' "
                       "ORDER BY id DESC LIMIT 1")["actor"] == "user:bob"
    bob.select_option("#assign-to", "")
    bob.click("#assign")
    bob.wait_for_url("**/queue*")
    expect(bob.locator(".flash.ok")).to_contain_text("is unassigned now")
    bob.click("#view-unassigned")
    expect(bob.locator(f"#draft-{draft}")).to_have_count(1)
