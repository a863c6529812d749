"""The admin pages in the admin's language (issue 18): an admin who chose German reads
German on the status page, the failure console, the audit log, the no-reply list and a
mail's timeline, and in the message after an action; an English admin still reads
English. State names, job ids and event names stay as they are; mail content stays
escaped in both languages."""

from __future__ import annotations

import pytest

from email_rag.db.audit import AuditEvent, AuditLog
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.webutil import XSS_SUBJECT, assert_inert, browsers, web_app


@pytest.fixture
def app(settings, db):
    return web_app(settings, db, people={"anna": "staff", "root": "admin", "karl": "admin"})


@pytest.fixture
def admins(app):
    """(karl, who chose German on /me; root, who kept English)."""
    with browsers(app, log_in=True) as new:
        karl = new("karl")
        r = karl.post("/me", data={"csrf_token": karl.csrf, "time_zone": "Europe/Berlin",
                                   "ui_language": "de"})
        assert r.status_code == 200
        yield karl, new("root")


@pytest.fixture
def mails(db, settings):
    """A failed mail with a dead entry, a failed mail whose entry is queued already, a mail
    whose send outcome is unknown, a mail waiting for a no-reply decision, audit events."""
    mb = make_mailbox(db)
    dead = make_email(db, mb, status="failed", subject=XSS_SUBJECT,
                      received_at="2026-11-30 08:00:00",
                      status_reason='<script>alert("reason")</script>')
    dead_job = make_job(db, dead, state="dead")
    db.execute("UPDATE jobs SET attempts = 3, last_error = 'LLMError: 503' WHERE id = %s",
               (dead_job,))
    busy = make_email(db, mb, status="failed", subject="busy")
    busy_job = make_job(db, busy, state="queued")
    unknown = make_email(db, mb, subject="unknown send")
    draft = make_draft(db, unknown, status="approved")
    db.execute("UPDATE emails SET status = 'manual' WHERE id = %s", (unknown,))
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status, tries, last_error)"
               " VALUES (%s, '<u@x>', 'unknown', 1, 'timeout after DATA')", (draft,))
    send = db.fetchone("SELECT id FROM send_attempts")["id"]
    quiet = make_email(db, mb, status="no_reply_suggested", subject="Newsletter",
                       category="spam", needs_reply=False)
    AuditLog(db, settings.audit_spool_path).record(
        AuditEvent("worker", "email", dead, "step_failed", "classified", "failed",
                   detail={"error": "<img src=x onerror=alert(11)>"}),
        AuditEvent("worker", "job", dead_job, "retry_scheduled", attempt=2))
    return {"dead": dead, "dead_job": dead_job, "busy": busy, "busy_job": busy_job, "unknown": unknown,
            "send": send, "quiet": quiet}


# (page, German that must be there, the English it replaces)
PAGES = [
    ("/admin/failures", ["Zu klären", "Ausgewählte erneut versuchen", "Letzter Fehler",
                         "Erneut versuchen", "Versand entscheiden…", "Woher Sie es wissen",
                         "Fehler</a>", "Protokoll</a>"],
     ["Needs attention", "Retry selected", "Last error", "Decide send", "How you know"]),
    ("/admin/audit", ["Protokoll", "Wer beginnt mit", "Neueste zuerst; ", "Ereignisse angezeigt",
                      "Wann (Europe/Berlin)", "Ereignis", "Keine Antwort?"],
     ["Audit log", "Actor starts with", "Newest first", "When (", "events shown"]),
    ("/admin/audit?since=tomorrow", ["Nicht gesucht: since:"], ["Newest first"]),
    ("/no-reply", ["Keine Antwort vorgeschlagen", "Keine Antwort: bestätigen",
                   "Braucht eine Antwort", "Zusammenfassung"],
     ["No reply suggested", "Needs a reply", "Summary"]),
    ("/status", ["Dienst", "Antwortzeit", "Redis-Warteschlangen", "Postfächer",
                 "Maschinenlesbar:"],
     ["Service", "Latency", "Redis queues", "Mailboxes", "Machine-readable"]),
]


def test_a_german_admin_reads_every_admin_page_in_german(admins, mails):
    karl, root = admins
    for url, german, english in PAGES:
        page = karl.get(url)
        assert page.status_code == 200, url
        assert 'lang="de"' in page.text
        for text in german:
            assert text in page.text, (url, text)
        for text in english:
            assert text not in page.text, (url, text)
        assert_inert(page.text)
        english_page = root.get(url).text
        assert 'lang="en"' in english_page
        for text in english:
            assert text in english_page, (url, text)
    failures = karl.get("/admin/failures").text
    # kinds and states in German (labels), ids stay; the domain's error text as it is
    assert f"#{mails['dead_job']} aufgegeben" in failures and "Versand unklar" in failures
    assert f"#{mails['dead_job']} dead" not in failures and "send unknown" not in failures
    assert "LLMError: 503" in failures
    assert "&lt;script&gt;" in failures  # the subject is text, in German as in English


def test_a_mails_timeline_in_german_with_times_in_the_admins_zone(admins, mails):
    karl, root = admins
    page = karl.get(f"/admin/mails/{mails['dead']}").text
    for text in ("Mail #", "empfangen 2026-11-30 09:00", "Warteschlangen-Einträge",
                 "3 Versuche", "Entwürfe", "Sendeversuche", "Zeitleiste", "Text der Mail",
                 "Wann (Europe/Berlin)", "← Fehler"):
        assert text in page, text
    assert "step_failed" in page and "retry_scheduled" in page  # event names stay
    assert "Queue entries" not in page and "attempts" not in page
    assert_inert(page)
    assert "&lt;img src=x onerror=alert(11)&gt;" in page
    unknown = karl.get(f"/admin/mails/{mails['unknown']}").text
    assert "1 Versuch" in unknown
    assert "unbekannt — ein Mensch entscheidet. Bekannt: timeout after DATA" in unknown
    missing = karl.get("/admin/mails/99999")  # the domain's reason, in German too
    assert missing.status_code == 400
    assert "Nicht möglich" in missing.text and "Mail #99999 gibt es nicht Nichts wurde " \
        "geändert." in missing.text
    english = root.get(f"/admin/mails/{mails['dead']}").text
    assert "received 2026-11-30 09:00" in english and "3 attempts" in english
    assert "1 try" in root.get(f"/admin/mails/{mails['unknown']}").text


def test_the_message_after_an_admin_action_is_in_the_admins_language(admins, mails, db):
    karl, root = admins
    refused = karl.post("/admin/failures/retry", data={"csrf_token": karl.csrf,
                                                        "job_id": str(mails["busy_job"])})
    assert f"Nicht erneut versucht: #{mails['busy_job']}: " in refused.text
    assert "Daran wurde nichts geändert." in refused.text and "Not retried" not in refused.text
    english = root.post("/admin/failures/retry", data={"csrf_token": root.csrf,
                                                        "job_id": str(mails["busy_job"])})
    assert f"Not retried: #{mails['busy_job']}: " in english.text
    assert "Nothing changed for it." in english.text

    none = karl.post("/admin/failures/retry", data={"csrf_token": karl.csrf})
    assert "Wählen Sie mindestens einen Eintrag aus" in none.text

    queued = karl.post("/admin/failures/retry", data={"csrf_token": karl.csrf,
                                                       "job_id": str(mails["dead_job"])})
    assert f"Wieder eingereiht: #{mails['dead_job']}." in queued.text

    noteless = karl.post(f"/admin/sends/{mails['send']}/decide",
                         data={"csrf_token": karl.csrf, "decision": "mark_sent", "note": " "})
    assert f"Sendeversuch #{mails['send']}: Schreiben Sie, woher Sie es wissen" in noteless.text
    decided = karl.post(f"/admin/sends/{mails['send']}/decide",
                        data={"csrf_token": karl.csrf, "decision": "mark_sent",
                              "note": "Kunde hat angerufen"})
    assert (f"Sendeversuch #{mails['send']} von Ihnen als gesendet markiert, nicht überprüft"
            in decided.text)

    final = karl.post("/admin/failures/resolve", data={
        "csrf_token": karl.csrf, "email_id": str(mails["unknown"]), "note": "erledigt"})
    assert f"Mail #{mails['unknown']} nicht erledigt: " in final.text  # sent: final
    resolved = karl.post("/admin/failures/resolve", data={
        "csrf_token": karl.csrf, "email_id": str(mails["busy"]), "note": "erledigt"})
    assert f"Mail #{mails['busy']} von Hand mit Ihrer Notiz erledigt" in resolved.text
    assert f'<a href="/admin/mails/{mails["busy"]}">Zeitleiste</a>' in resolved.text

    confirmed = karl.post(f"/no-reply/{mails['quiet']}/confirm", data={"csrf_token": karl.csrf})
    assert f"Mail #{mails['quiet']}: keine Antwort, bestätigt." in confirmed.text
    again = karl.post(f"/no-reply/{mails['quiet']}/confirm", data={"csrf_token": karl.csrf})
    assert "jemand hat schon entschieden. Nichts wurde geändert." in again.text
    assert db.fetchone("SELECT status FROM emails WHERE id = %s",
                       (mails["quiet"],))["status"] == "no_reply"


def test_the_audit_search_reads_from_and_to_in_the_admins_zone(admins, db, settings):
    """GIVEN an event at 10:00 UTC (12:00 in Berlin, summer time) and karl, whose zone is
    Europe/Berlin and who sees it listed at 12:00 WHEN he searches from 11:30 to 12:30
    (his clock, as every time on the page) THEN it is found, and from 12:30 it is not; the
    fields name his zone. root, who chose New York, finds it from 05:30 to 06:30 his time."""
    from datetime import datetime

    karl, root = admins
    at = datetime(2026, 6, 1, 10, 0, 0)
    AuditLog(db, settings.audit_spool_path).record(
        AuditEvent("user:zoe", "system", 0, "zone_probe", at=at))
    found = karl.get("/admin/audit?event=zone_probe&since=2026-06-01T11:30&until=2026-06-01T12:30")
    assert "<b>zone_probe</b>" in found.text and "2026-06-01 12:00" in found.text
    assert "Von (Europe/Berlin)" in found.text and "Bis (Europe/Berlin)" in found.text
    later = karl.get("/admin/audit?event=zone_probe&since=2026-06-01T12:30").text
    assert "<b>zone_probe</b>" not in later
    assert root.post("/me", data={"csrf_token": root.csrf, "time_zone": "America/New_York",
                                  "ui_language": "en"}).status_code == 200
    ny = root.get("/admin/audit?event=zone_probe&since=2026-06-01T05:30&until=2026-06-01T06:30")
    assert "<b>zone_probe</b>" in ny.text and "From (America/New_York)" in ny.text
    assert "<b>zone_probe</b>" not in root.get(
        "/admin/audit?event=zone_probe&until=2026-06-01T05:30").text
