"""Rough edges of the review desk (issue 18): HTML error pages for bad input, a staff
status page without internal hosts, times in the user's zone, the UI in German per user,
and right-to-left overrides isolated."""

from __future__ import annotations

from tests.factories import make_draft, make_email, make_mailbox


def test_bad_input_gets_an_html_page_not_json(client):
    c = client()
    for r in (c.get("/drafts/abc"), c.get("/drafts/1/attachments/x"),
              c.post("/drafts/1/approve", data={"csrf_token": c.csrf})):
        assert r.status_code == 422
        assert r.headers["content-type"].startswith("text/html")
        assert "Not understood" in r.text and '"detail"' not in r.text
    r = c.get("/no/such/page")
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")


def test_staff_status_page_shows_no_internal_hosts(client, settings):
    staff = client().get("/status").text
    assert "MariaDB" in staff or "mariadb" in staff
    for internal in (f"{settings.db_host}:{settings.db_port}", "6379", str(settings.qdrant_path)):
        assert internal not in staff
    admin = client("root").get("/status").text
    assert f"{settings.db_port}" in admin


def test_times_in_the_users_zone_and_the_ui_in_german(client, db):
    """GIVEN a mail received 08:00 UTC WHEN anna looks with the default zone THEN she reads
    09:00 (Europe/Berlin, no seconds); after choosing America/New_York 03:00; after choosing
    German the queue is the Prüfliste."""
    draft = make_draft(db, make_email(db, make_mailbox(db), received_at="2026-11-30 08:00:00",
                                      sent_at="2026-11-30 07:59:00"))
    c = client()
    page = c.get(f"/drafts/{draft}").text
    assert "received 2026-11-30 09:00" in page and "09:00:00" not in page
    assert "Europe/Berlin" in page
    r = c.post("/me", data={"csrf_token": c.csrf, "time_zone": "America/New_York",
                            "ui_language": "de"})
    assert r.status_code == 200
    page = c.get(f"/drafts/{draft}").text
    assert "2026-11-30 03:00" in page and 'lang="de"' in page
    assert "Freigeben und senden" in page
    assert "Prüfliste" in c.get("/queue").text
    done = c.post(f"/drafts/{draft}/approve", data={"csrf_token": c.csrf, "body": "Hallo"})
    assert f"Entwurf #{draft} mit Ihren Änderungen freigegeben" in done.text
    bad = c.post("/me", data={"csrf_token": c.csrf, "time_zone": "Mars/Olympus",
                              "ui_language": "de"})
    assert bad.status_code == 400 and "unknown time zone" in bad.text
    event = db.fetchone("SELECT actor FROM audit_log WHERE event = 'preferences_changed'")
    assert event == {"actor": "user:anna"}


def test_a_right_to_left_override_stays_in_its_cell(client, db):
    make_draft(db, make_email(db, make_mailbox(db), subject="\u202eFDP.exe Rechnung"))
    page = client().get("/queue").text
    assert '<bdi><span class="bidi-control">&lt;U+202E&gt;</span>FDP.exe Rechnung</bdi>' in page
    assert "\u202e" not in page  # shown as its marker, never handed to the browser
