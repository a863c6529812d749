"""Bidi controls in mail text (issue 44): no page hands the browser a raw embedding,
override, isolate or mark taken from a mail; each is shown as a visible marker
(``<U+202E>``) wherever mail text appears - subjects and bodies included."""

from __future__ import annotations

import json
import re

import pytest

from email_rag.db.audit import AuditEvent, AuditLog
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.webutil import browsers, login, web_app

# every control the desk neutralises: embeddings and overrides, isolates, the marks
CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.fixture
def client(settings, db):
    with browsers(web_app(settings, db), log_in=False) as new:
        yield new


def hostile(word: str) -> str:
    """``word`` with every control in it (a right-to-left override first)."""
    return f"{word}\u202efdp.exe {''.join(CONTROLS)} {word}"


def test_no_page_shows_a_raw_bidi_control_from_mail_text(client, db):
    """GIVEN mails whose subject, text, HTML part, sender, attachment names, draft, sources
    and an internal note carry every bidi control WHEN an admin opens every page that shows
    mail text (queue, draft, mail, no-reply list, failures, timeline, audit log, search,
    customer, mentions) THEN none of the controls reaches the page as a character: each is
    shown as its marker, and the subject reads ``Rechnung<U+202E>fdp.exe``."""
    mb = make_mailbox(db)
    cols = {"from_name": hostile("Alice"), "from_addr": "alice@customer.example",
            "to_addrs": "support@example.com", "body_html": f"<p title=\"{hostile('t')}\">"
            f"{hostile('Hallo')}</p><p>&#x202E;entity</p>",
            "attachments": json.dumps([{"filename": hostile("Rechnung"),
                                        "content_type": "application/pdf", "size": 10,
                                        "text_status": None}])}
    mail = make_email(db, mb, subject=hostile("Rechnung"), body=hostile("Guten Tag"), **cols)
    sources = {"sources": [{"email_id": mail, "subject": hostile("Quelle"), "score": 0.8,
                            "snippet": hostile("Schnipsel"),
                            "reply": {"text": hostile("Antwort")}}]}
    draft = make_draft(db, mail, body=hostile("Entwurf"), sources=json.dumps(sources))
    bad = make_email(db, mb, status="failed", subject=hostile("kaputt"),
                     status_reason=hostile("Grund"), **cols)
    make_job(db, bad, state="dead")
    quiet = make_email(db, mb, status="no_reply_suggested", subject=hostile("Danke"),
                       needs_reply=False, **cols)
    AuditLog(db, "spool").record(AuditEvent("user:root", "email", mail, "attachment_downloaded",
                                            detail={"filename": hostile("Rechnung")}))
    c = client()
    token = login(c, "root")
    assert c.post(f"/mails/{mail}/notes", data={"csrf_token": token, "body":
                  f"@anna {hostile('Notiz')}"}).status_code == 200
    anna = client()
    login(anna, "anna")
    pages = ["/queue", f"/drafts/{draft}", f"/mails/{mail}", f"/mails/{quiet}", "/no-reply",
             "/admin/failures", f"/admin/mails/{bad}", f"/admin/mails/{mail}", "/admin/audit",
             "/search?q=Rechnung", "/customers?addr=alice@customer.example"]
    for who, url in [*((c, u) for u in pages), (anna, "/mentions")]:
        r = who.get(url)
        assert r.status_code == 200, url
        raw = sorted({f"U+{ord(ch):04X}" for ch in r.text if ch in CONTROLS})
        assert raw == [], (url, raw)
    draft_page = c.get(f"/drafts/{draft}").text
    heading = re.search(r'<h1 class="subject">(.*?)</h1>', draft_page, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", heading).startswith("Rechnung&lt;U+202E&gt;fdp.exe")
    for marker in ("U+202A", "U+2066", "U+2069", "U+200E", "U+200F", "U+061C"):
        assert f"&lt;{marker}&gt;" in heading, marker
    assert "Guten Tag<span class=\"bidi-control\">&lt;U+202E&gt;</span>fdp.exe" in draft_page
