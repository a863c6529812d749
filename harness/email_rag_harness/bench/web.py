"""Review desk speed: the real web UI with N pending drafts (default 10,000).

    python -m bench web [--mails 10000] [--json]

The queue holds N pending drafts (every 5th mail in a thread with our sent reply, the
same senders writing again, bodies of ~600 characters for the full-text index); the real
``email-rag web`` process serves them. Figures are server-side times (the app's
``Server-Timing`` header: request in to response start) of the queue's first page, a
deep page (keyset cursor near the end), sorting by priority, a search for a customer or
an order number, a broad search (a word in most mails: the worst case), and the draft
page (thread, history, sources, position "x of N"), sorting by due time (the support
mailbox has business hours), and the reports page per agent, mailbox and week (an admin;
the sent replies and their review figures spread over the last 8 weeks), 30 requests
each; and the first
contentful paint of the queue and a draft page in Chromium when it is installed (median of
5 loads after one warm-up load).
Before any figure: the queue says N and the draft pages say "x of N".
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import httpx

from email_rag.auth import users
from email_rag.core.settings import MailboxConfig
from email_rag.db import Database, sql
from email_rag.review import service_levels

from .common import CheckFailed, Report, Target, Workspace, percentile, spawn, stop, wait_until

WORDS = ("Rechnung Lieferung Bestellung Drucker Passwort Konto Vertrag Kündigung Rückerstattung "
         "Paket Adresse Termin Fehler Anmeldung Gutschrift Mahnung Rabatt Ersatzteil Garantie "
         "Lieferschein Zahlung Überweisung Storno Service Techniker Zugang Update Bildschirm").split()
PRIORITIES = ("low", "normal", "normal", "normal", "high", "urgent")
CATEGORIES = ("billing", "order", "technical", "account", "complaint")
REQUESTS = 30
PASSWORD = "bench-password-1"
# support has business hours (its due times are computed), sales has none
MAILBOXES = [{"name": "support", "username": "support@x", "service_level": {
    "time_zone": "Europe/Berlin", "days": "mon-fri", "hours": "08:00-17:00",
    "first_response_hours": 4}}, {"name": "sales", "username": "sales@x"}]


def _mail(mailbox_id: int, dedup_key: str, message_id: str, status: str, subject: str,
          body_text: str, from_addr: str, thread_key: str | None, category: str, priority: str,
          minute: int) -> dict[str, Any]:
    """The parameters of ``bench_web_insert_email``: received and sent ``minute`` minutes
    after the bench's day starts."""
    return {"mailbox_id": mailbox_id, "dedup_key": dedup_key, "message_id": message_id,
            "status": status, "subject": subject, "body_text": body_text,
            "from_addr": from_addr, "thread_key": thread_key, "category": category,
            "priority": priority, "language": "de", "received_minute": minute,
            "sent_minute": minute}


def fill(db: Database, n: int, seed: int = 7) -> list[int]:
    """n pending drafts (and their mails); every 5th mail has an earlier mail in its thread
    with our sent reply. Returns the pending draft ids."""
    rnd = random.Random(seed)
    db.execute(sql("bench_web_mailboxes"))
    boxes = [r["id"] for r in db.fetchall(sql("bench_web_mailbox_ids"))]
    mails, drafts, earlier = [], [], []
    for i in range(n):
        sender = f"kunde{rnd.randrange(n // 3 or 1)}@example.com"
        words = " ".join(rnd.choice(WORDS) for _ in range(80))
        thread = f"t{i}" if i % 5 == 0 else None
        minute = i
        mails.append(_mail(boxes[i % 2], f"d{i}", f"<m{i}@x>", "draft_ready",
                           f"{rnd.choice(WORDS)} {10000 + i}", f"Guten Tag,\n{words}\nGruss",
                           sender, thread, rnd.choice(CATEGORIES), rnd.choice(PRIORITIES), minute))
        if thread:
            earlier.append(_mail(boxes[i % 2], f"e{i}", f"<e{i}@x>", "sent", f"Frage {i}",
                                 "Erste Mail", sender, thread, "order", "normal", minute - 60))
    insert = sql("bench_web_insert_email")
    with db.transaction() as cur:
        for chunk in range(0, len(earlier), 1000):
            cur.executemany(insert, earlier[chunk:chunk + 1000])
        cur.execute(sql("bench_web_sent_drafts"))
        cur.execute(sql("bench_web_sends"))
        cur.execute(sql("bench_web_reviews"))
        for chunk in range(0, len(mails), 1000):
            cur.executemany(insert, mails[chunk:chunk + 1000])
        sources = ('{"sources": [{"email_id": 1, "subject": "Rechnung doppelt", "score": 0.8, '
                   '"snippet": "Doppelt abgebucht", "reply": {"text": "Storniert."}}]}')
        cur.execute(sql("bench_web_pending_drafts"), {"sources": sources})
        drafts = [r["id"] for r in cur.fetchall(sql("bench_web_pending_draft_ids"))]
    return drafts


def timings(client: httpx.Client, urls: list[str], timeouts: list[str] | None = None
            ) -> list[float]:
    """Server-side ms of each GET; ``timeouts``: where a 503 (the web's database timeout,
    EMAIL_RAG_WEB_DB_TIMEOUT_SECONDS) is a measured outcome, listed there, not a failure."""
    out = []
    for url in urls:
        r = client.get(url)
        if r.status_code == 503 and timeouts is not None:
            timeouts.append(url)
            continue
        if r.status_code != 200:
            said = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r.text))[-600:]
            raise CheckFailed(f"GET {url} answered {r.status_code}: {said}")
        m = re.search(r"app;dur=([\d.]+)", r.headers.get("server-timing", ""))
        if not m:
            raise CheckFailed(f"GET {url}: no Server-Timing header")
        out.append(float(m.group(1)))
    return out


def first_paint(base: str, cookies: dict[str, str], urls: list[str]) -> dict[str, float | None]:
    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    if not chromium.exists():
        return {}
    found: dict[str, float | None] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(bypass_csp=True)
        context.add_cookies([{"name": k, "value": v, "url": base} for k, v in cookies.items()])
        page = context.new_page()
        page.goto(base + urls[0], wait_until="load")  # warm: browser start, CSS, script
        for url in urls:
            paints = []
            for _ in range(5):
                page.goto(base + url, wait_until="load")
                # the paint entry is recorded a moment after "load" (when it is presented)
                page.wait_for_function("performance.getEntriesByName("
                                       "'first-contentful-paint').length > 0", timeout=5000)
                fcp = page.evaluate("() => performance.getEntriesByName("
                                    "'first-contentful-paint')[0].startTime")
                if fcp:
                    paints.append(fcp)
            found[url] = round(percentile(paints, 50), 1) if paints else None
        browser.close()
    return found


def run(args: Any) -> Report:
    n = args.mails or 10_000
    with Workspace("web") as ws:
        db = ws.database()
        started = time.monotonic()
        drafts = fill(db, n)
        fill_s = time.monotonic() - started
        started = time.monotonic()
        due_n = service_levels.compute(db, [MailboxConfig.model_validate(b) for b in MAILBOXES],
                                       limit=n)
        due_s = time.monotonic() - started
        users.add_user(db, "bench", "staff", PASSWORD, "bench")
        users.add_user(db, "boss", "admin", PASSWORD, "bench")
        from email_rag_harness.testing.dovecot import free_port

        port = free_port()
        env = ws.env(db, web_secret_key="bench", web_port=port, log_level="WARNING",
                     mailboxes=MAILBOXES)
        proc = spawn("web", ["-m", "email_rag", "web", "--host", "127.0.0.1", "--port",
                             str(port)], env, ws.tmp)
        base = f"http://127.0.0.1:{port}"
        try:
            def up() -> bool:
                try:
                    return httpx.get(base + "/healthz", timeout=1).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_until(up, 30, "the web UI", procs=[proc])
            with httpx.Client(base_url=base, timeout=30) as c, \
                    httpx.Client(base_url=base, timeout=30) as admin:
                for client, name in ((c, "bench"), (admin, "boss")):
                    token = re.search(r'name="csrf_token" value="([^"]+)"',
                                      client.get("/login").text)[1]
                    client.post("/login", data={"name": name, "password": PASSWORD,
                                                "csrf_token": token})
                first = c.get("/queue").text
                if f'id="queue-total">{n}<' not in first:
                    raise CheckFailed(f"the queue does not say {n}")
                deep = c.get("/queue", params={"before": "ff-0"}).text  # the last page
                m = re.search(r'id="prev-page" href="/queue\?before=([^"]+)"', deep)
                cursor = m.group(1) if m else ""
                rnd = random.Random(3)
                sample = [rnd.choice(drafts) for _ in range(REQUESTS)]
                page = c.get(f"/drafts/{drafts[n // 2]}").text
                if f"of {n} waiting" not in page:
                    raise CheckFailed(f"the draft page does not say 'x of {n}'")
                c.get("/queue")  # warm
                rows = []
                figures: dict[str, Any] = {"drafts": n, "fill_s": round(fill_s, 1),
                                           "due_times": due_n, "due_s": round(due_s, 1)}
                if "<table class=\"list reports\">" not in admin.get("/reports").text:
                    raise CheckFailed("the reports page shows no figures")
                for client, name, urls in (
                        (c, "queue, first page", ["/queue"] * REQUESTS),
                        (c, "queue, deep page (keyset)", [f"/queue?before={cursor}"] * REQUESTS),
                        (c, "queue, by priority", ["/queue?sort=priority"] * REQUESTS),
                        (c, "queue, by due time", ["/queue?sort=due"] * REQUESTS),
                        (c, "queue, search (customer or number)",
                         [f"/queue?q=kunde{rnd.randrange(n // 3 or 1)}" if i % 2 else
                          f"/queue?q={10000 + rnd.randrange(n)}" for i in range(REQUESTS)]),
                        (c, "queue, broad search (a word in most mails)",
                         [f"/queue?q={w}" for w in rnd.choices(WORDS, k=10)]),
                        (c, "draft page", [f"/drafts/{d}" for d in sample]),
                        (admin, "reports, per agent (8 weeks)", ["/reports"] * REQUESTS),
                        (admin, "reports, per mailbox", ["/reports?by=mailbox"] * REQUESTS),
                        (admin, "reports, per week", ["/reports?by=week"] * REQUESTS)):
                    timeouts: list[str] = []
                    t = timings(client, urls, timeouts if "broad" in name else None)
                    # a request answered 503 after the database timeout (5 s) counts as
                    # that long: at least
                    worst = [5000.0] * len(timeouts)
                    p50, p95 = percentile(t + worst, 50), percentile(t + worst, 95)
                    rows.append({"page": name + (f" ({len(timeouts)} x 503 after the "
                                                 f"5 s database timeout, as 5000 ms)" if timeouts else ""),
                                 "requests": len(urls), "p50_ms": round(p50, 1),
                                 "p95_ms": round(p95, 1)})
                    figures[name] = {"p50_ms": p50, "p95_ms": p95, "timeouts": len(timeouts)}
                fcp = first_paint(base, dict(c.cookies), ["/queue", f"/drafts/{drafts[0]}"])
                for url, value in fcp.items():
                    rows.append({"page": f"first contentful paint {url.split('/')[1]}",
                                 "requests": 5, "p50_ms": value, "p95_ms": None})
                figures["first_contentful_paint_ms"] = fcp
        finally:
            stop([proc])
    queue_p50 = figures["queue, first page"]["p50_ms"]
    draft_p50 = figures["draft page"]["p50_ms"]
    search_p50 = figures["queue, search (customer or number)"]["p50_ms"]
    broad_p50 = figures["queue, broad search (a word in most mails)"]["p50_ms"]
    reports_p50 = max(figures[k]["p50_ms"] for k in figures if k.startswith("reports"))
    fcp_max = max((v for v in fcp.values() if v is not None), default=None)
    return Report(
        "web", f"{n} pending drafts: queue p50 {queue_p50:.1f} ms, draft page p50 "
               f"{draft_p50:.1f} ms (server side)",
        ["page", "requests", "p50_ms", "p95_ms"], rows, figures,
        targets=[Target("queue p50 ms <= 100", round(queue_p50, 1), 100, False),
                 Target("draft page p50 ms <= 100", round(draft_p50, 1), 100, False),
                 Target("search p50 ms <= 100", round(search_p50, 1), 100, False),
                 Target("broad search p50 ms <= 100", round(broad_p50, 1), 100, False),
                 Target("reports page p50 ms <= 300", round(reports_p50, 1), 300, False),
                 Target("first contentful paint ms <= 500", fcp_max, 500, False)],
        checks=[f"the queue says {n}", f"a draft page says 'x of {n}'",
                "the reports page shows figures"])
