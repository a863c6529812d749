"""Answering tools over HTTP against the real MariaDB (issue 28): admins keep saved replies
and signatures, staff insert them into a draft (filled from the mail; a placeholder without
a value stays and blocks approval), internal notes with @mentions, the header's count and
the mentions list, CSRF, roles and mailbox scope, escaping."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from tests.factories import make_draft, make_email
from tests.webutil import assert_inert

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}


@pytest.fixture
def desk(db, team):
    support, sales = team
    mail = make_email(db, support, subject="Bestellung 4711 fehlt", from_name="Carla Kunde",
                      from_addr="carla@example.org", body="Meine Bestellung 4711 kam nie an.")
    bare = make_email(db, support, subject="Frage", from_addr="x@example.org",
                      body="Wo bleibt mein Paket?")
    return {"support": support, "sales": sales, "mail": mail, "bare": bare,
            "d1": make_draft(db, mail, body="Guten Tag,\n\nwir prüfen das.\n"),
            "d2": make_draft(db, bare, body="Guten Tag,\n\nwir prüfen das.\n")}


def text(page: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def post(c, url: str, **data):
    return c.post(url, data={"csrf_token": c.csrf, **data})


def reply_ids(db) -> list[int]:
    return [int(r["id"]) for r in db.fetchall("SELECT id FROM saved_replies ORDER BY id")]


def test_admins_keep_saved_replies_and_signatures_staff_may_not(client, db, desk):
    """GIVEN an admin WHEN she adds, edits and deletes a saved reply and sets a signature
    through the page THEN each is stored and audited as user:root; a form without the CSRF
    token changes nothing (403); staff get 403 on the page and every action."""
    root, anna = client("root"), client("anna")
    page = root.get(f"/admin/answers?mailbox={desk['support']}")
    assert page.status_code == 200 and "Signature of support" in text(page.text)
    r = post(root, "/admin/answers/create", mailbox_id=desk["support"], title="Lieferung",
             body="Guten Tag {customer_name},\nIhre Bestellung {order_number} ist unterwegs.")
    assert "Saved reply “Lieferung” added." in text(r.text)
    (rid,) = reply_ids(db)
    r = post(root, f"/admin/answers/{rid}/edit", version=1, title="Lieferung unterwegs",
             body="Guten Tag {customer_name},\nBestellung {order_number} ist unterwegs.")
    assert "saved" in text(r.text)
    r = post(root, f"/admin/answers/{rid}/edit", version=1, title="Alt", body="alt")
    assert "Someone changed this saved reply meanwhile" in text(r.text)
    r = post(root, "/admin/answers/signature", mailbox_id=desk["support"],
             body="Viele Grüße\n{agent_name}\nAcme Support")
    assert "Signature saved." in text(r.text)
    r = root.post("/admin/answers/create", data={"mailbox_id": desk["support"], "title": "x",
                                                 "body": "y"})
    assert r.status_code == 403 and len(reply_ids(db)) == 1
    assert anna.get("/admin/answers").status_code == 403
    assert post(anna, "/admin/answers/create", mailbox_id=desk["support"], title="t",
                body="b").status_code == 403
    assert post(anna, f"/admin/answers/{rid}/delete").status_code == 403
    events = db.fetchall("SELECT actor, event FROM audit_log WHERE event LIKE 'saved_reply%%'"
                         " OR event = 'signature_set' ORDER BY id")
    assert [(e["actor"], e["event"]) for e in events] == [
        ("user:root", "saved_reply_created"), ("user:root", "saved_reply_updated"),
        ("user:root", "signature_set")]
    post(root, f"/admin/answers/{rid}/delete")
    assert reply_ids(db) == []


def test_a_saved_reply_is_filled_from_the_mail_and_unfilled_ones_block_approval(
        client, db, desk):
    """GIVEN a saved reply and a signature WHEN anna opens the draft of Carla's mail THEN the
    page carries the reply filled in (Carla Kunde, 4711, anna); inserting it without the
    script appends it to her text (kept as her edit). On the mail without a display name or
    order number the placeholders stay visible, and approving with them is refused (her
    text kept); once she fills them in, it is approved."""
    root, anna = client("root"), client("anna")
    post(root, "/admin/answers/create", mailbox_id=desk["support"], title="Lieferung",
         body="Guten Tag {customer_name},\nBestellung {order_number} ist unterwegs.")
    post(root, "/admin/answers/signature", mailbox_id=desk["support"], body="Grüße\n{agent_name}")
    (rid,) = reply_ids(db)
    page = anna.get(f"/drafts/{desk['d1']}").text
    assert "Guten Tag Carla Kunde,\nBestellung 4711 ist unterwegs." in htmllib.unescape(page)
    assert "Grüße\nanna" in htmllib.unescape(page)
    r = post(anna, f"/drafts/{desk['d1']}/insert", body="Hallo,\r\nich schaue nach.",
             saved_reply=str(rid))
    assert "Inserted at the end of your text." in text(r.text)
    saved = db.fetchone("SELECT body FROM draft_edits WHERE draft_id = %s", (desk["d1"],))
    assert saved["body"] == ("Hallo,\nich schaue nach.\n\nGuten Tag Carla Kunde,\n"
                             "Bestellung 4711 ist unterwegs.")
    r = post(anna, f"/drafts/{desk['d1']}/insert", body=saved["body"], signature="1")
    assert db.fetchone("SELECT body FROM draft_edits WHERE draft_id = %s",
                       (desk["d1"],))["body"].endswith("unterwegs.\n\nGrüße\nanna")

    # a reply written by hand starts with the signature, filled in
    assert '<textarea name="body" rows="12" required dir="auto">\n\n\nGrüße\nanna</textarea>' \
        in htmllib.unescape(anna.get(f"/mails/{desk['mail']}").text)

    r = post(anna, f"/drafts/{desk['d2']}/insert", body="", saved_reply=str(rid))
    assert "Fill in what is still in braces before you approve: {customer_name}, " \
           "{order_number}." in text(r.text)
    body = db.fetchone("SELECT body FROM draft_edits WHERE draft_id = %s", (desk["d2"],))["body"]
    assert body == "Guten Tag {customer_name},\nBestellung {order_number} ist unterwegs."
    r = post(anna, f"/drafts/{desk['d2']}/approve", body=body)
    assert "was not approved: fill in {customer_name}, {order_number} first" in text(r.text)
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (desk["d2"],))["status"] \
        == "pending_review"
    # a saved reply of another mailbox is not offered and cannot be inserted
    post(root, "/admin/answers/create", mailbox_id=desk["sales"], title="Sales", body="x")
    other = reply_ids(db)[-1]
    assert post(anna, f"/drafts/{desk['d2']}/insert", body="",
                saved_reply=str(other)).status_code == 404
    done = body.replace("{customer_name}", "Herr X").replace("{order_number}", "A-123")
    r = post(anna, f"/drafts/{desk['d2']}/approve", body=done)
    assert f"Draft #{desk['d2']} approved with your edits." in text(r.text)
    r = post(anna, f"/drafts/{desk['d2']}/insert", body="x", saved_reply=str(rid))
    assert "not waiting for review any more; nothing was inserted" in text(r.text)


def test_a_note_with_a_mention_notifies_its_user_until_they_open_the_mail(client, db, desk):
    """GIVEN anna and bob on support WHEN anna adds a note on a draft saying "@bob ... @carl"
    with markup and a right-to-left override THEN the note shows escaped and isolated on the
    draft and the mail page; bob's header counts 1 mention, his list links to the mail; once
    he opens the mail it is read (count gone); carl (another mailbox) is not notified and
    cannot post a note there (404); the audit has note_added without the text."""
    anna, bob, carl = client("anna"), client("bob"), client("carl")
    note = '@bob bitte prüfen <script>alert(1)</script> \u202eexe.pdf @carl'
    r = post(anna, f"/mails/{desk['mail']}/notes", body=note, back=f"/drafts/{desk['d1']}")
    assert str(r.url).endswith(f"/drafts/{desk['d1']}#notes")
    said = text(r.text)
    assert "Note added (internal: never sent to the customer). Notified: bob." in said
    assert "Not notified (no user of this mailbox): @carl." in said
    assert_inert(r.text)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert "&lt;U+202E&gt;" in r.text and "\u202e" not in r.text
    assert re.search(r'<div class="note-text" dir="auto"><bdi>@bob bitte', r.text)
    assert 'id="mention-count"' not in r.text  # anna mentioned nobody who is herself

    queue = bob.get("/queue").text
    assert re.search(r'id="mention-count"[^>]*>1</span>', queue)
    listed = bob.get("/mentions").text
    assert f'href="/mails/{desk["mail"]}#note-' in listed and "unread" in text(listed)
    page = bob.get(f"/mails/{desk['mail']}").text
    assert "Internal notes" in text(page) and "bitte prüfen" in text(page)
    assert 'id="mention-count"' not in page
    assert "unread" not in text(bob.get("/mentions").text).replace("Unread", "")
    assert 'id="mention-count"' not in carl.get("/queue").text
    assert post(carl, f"/mails/{desk['mail']}/notes", body="@bob hi").status_code == 404
    assert post(anna, f"/mails/{desk['mail']}/notes", body="  ").status_code == 200
    r = anna.post(f"/mails/{desk['mail']}/notes", data={"body": "@bob ohne Token"})
    assert r.status_code == 403
    rows = db.fetchall("SELECT actor, detail FROM audit_log WHERE event = 'note_added'")
    assert [(x["actor"], json.loads(x["detail"])["mentioned"]) for x in rows] == [
        ("user:anna", ["user:bob"])]
    assert "prüfen" not in rows[0]["detail"]
    assert db.fetchone("SELECT COUNT(*) AS n FROM mail_notes")["n"] == 1


def test_a_german_agent_reads_the_answering_tools_in_german(client, db, desk):
    anna = client("anna")
    post(anna, "/me", time_zone="Europe/Berlin", ui_language="de")
    page = text(anna.get(f"/mails/{desk['mail']}").text)
    assert "Interne Notizen" in page and "Notiz hinzufügen" in page and "Erwähnungen" in page
    r = post(anna, f"/mails/{desk['mail']}/notes", body="@bob schau mal")
    assert "Notiz hinzugefügt" in text(r.text) and "Benachrichtigt: bob." in text(r.text)
