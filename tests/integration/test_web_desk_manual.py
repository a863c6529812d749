"""A mail the product could not answer (``manual``: no usable sender address) over HTTP:
the sender shown as what is known (never an empty ``<>``), and its raw source viewable
safely by whoever may see its mailbox (plain text, never rendered, audited)."""

from __future__ import annotations

from email_rag.auth import users
from tests.factories import make_email, make_mailbox

PEOPLE = {"anna": "staff", "otto": "staff", "root": "admin"}

RAW = (
    b"From: <>\r\nTo: support@example.com\r\nSubject: Hallo <script>alert(1)</script>\r\n"
    b"Message-ID: <manual-1@example.org>\r\n\r\nText ohne Absender <img src=x onerror=1>\r\n"
)


def manual_mail(db) -> int:
    mine, other = make_mailbox(db, "support"), make_mailbox(db, "sales")
    users.set_mailbox(db, "anna", "support", True, "test")
    users.set_mailbox(db, "otto", "sales", True, "test")
    assert other
    return make_email(
        db,
        mine,
        status="manual",
        subject="Hallo",
        body="Text ohne Absender",
        from_addr=None,
        from_name=None,
        raw=RAW,
    )


def test_a_mail_without_a_sender_says_so_instead_of_an_empty_address(client, db):
    """GIVEN a manual mail with ``From: <>`` WHEN anna opens its page and root its timeline
    THEN both say the sender is unknown; neither shows an empty ``<>``; the mail page links
    its raw source."""
    eid = manual_mail(db)
    page = client("anna").get(f"/mails/{eid}").text
    assert "unknown sender" in page and "&lt;&gt;" not in page
    assert f'href="/mails/{eid}/source"' in page
    timeline = client("root").get(f"/admin/mails/{eid}").text
    assert "unknown sender" in timeline and "&lt;&gt;" not in timeline
    assert f'href="/mails/{eid}/source"' in timeline


def test_the_raw_source_is_plain_text_for_the_mailboxs_staff_only_and_audited(client, db):
    """GIVEN a manual mail in anna's mailbox WHEN anna opens its raw source THEN she gets the
    stored bytes as text/plain (nosniff, shown inline, never HTML: the script in it is
    text) and the view is audited under user:anna; otto (another mailbox) gets 404, an
    anonymous client the login page."""
    eid = manual_mail(db)
    r = client("anna").get(f"/mails/{eid}/source")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in r.headers["content-security-policy"]
    assert r.content == RAW
    event = db.fetchone(
        "SELECT actor, entity_type, entity_id FROM audit_log WHERE event = 'raw_source_viewed'"
    )
    assert event == {"actor": "user:anna", "entity_type": "email", "entity_id": str(eid)}
    assert client("otto").get(f"/mails/{eid}/source").status_code == 404
    assert client("root").get(f"/mails/{eid}/source").status_code == 200
    anonymous = client("anna")
    anonymous.cookies.clear()
    r = anonymous.get(f"/mails/{eid}/source", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
