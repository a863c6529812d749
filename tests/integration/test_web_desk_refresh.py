"""The pages' own refresh (issue 28) over HTTP: a refresh (``X-Refresh: 1``, what the
page's script sends) shows the page as it is now but is no new opening - it does not take
a mail that was given away or unassigned meanwhile."""

from __future__ import annotations

from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}


def owner(db, email_id: int):
    row = db.fetchone("SELECT u.name FROM mail_assignments a JOIN users u ON u.id = a.user_id"
                      " WHERE a.email_id = %s", (email_id,))
    return row and row["name"]


def test_a_refresh_does_not_take_back_a_mail_unassigned_meanwhile(client, db, team):
    """GIVEN anna opened a draft (so she owns it) WHEN root unassigns it while anna's page
    stays open and refreshes itself THEN it stays unassigned, her refreshed page says so,
    and the audit has no new assignment; opening the draft again (a real page load) takes
    it, as before."""
    support, _ = team
    email_id = make_email(db, support, subject="Rechnung doppelt")
    draft = make_draft(db, email_id)
    anna, root = client("anna"), client("root")
    assert anna.get(f"/drafts/{draft}").status_code == 200
    assert owner(db, email_id) == "anna"
    r = root.post(f"/drafts/{draft}/assign", data={"csrf_token": root.csrf, "to": ""},
                  follow_redirects=False)
    assert r.status_code == 303 and owner(db, email_id) is None
    events = db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE event = 'assigned'")["n"]
    page = anna.get(f"/drafts/{draft}", headers={"X-Refresh": "1"})
    assert page.status_code == 200 and owner(db, email_id) is None
    assert db.fetchone("SELECT COUNT(*) AS n FROM audit_log WHERE event = 'assigned'")["n"] \
        == events
    anna.get(f"/drafts/{draft}")
    assert owner(db, email_id) == "anna"
