"""Saved replies, signatures, notes and mentions against the real MariaDB
(email_rag.review.answers, email_rag.review.notes): what is stored, what is audited (never
the text), who is notified, and what happens to a mention when the user opens the mail."""

from __future__ import annotations

import json

import pytest

from email_rag.auth import users
from email_rag.core.errors import BadInputError, DraftNotFoundError
from email_rag.review import answers, notes
from email_rag.wiring.services import Services
from tests.factories import make_email, make_mailbox
from tests.webutil import make_user


@pytest.fixture
def svc(settings):
    s = Services(settings)
    yield s
    s.close()


@pytest.fixture
def team(db):
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    ids = {name: make_user(db, name, role) for name, role in
           (("anna", "staff"), ("bob", "staff"), ("carl", "staff"), ("root", "admin"))}
    users.set_mailbox(db, "anna", "support", True, "test")
    users.set_mailbox(db, "bob", "support", True, "test")
    users.set_mailbox(db, "carl", "sales", True, "test")
    mail = make_email(db, support, subject="Bestellung 4711 fehlt", from_name="Carla Kunde",
                      from_addr="carla@example.org", body="Meine Bestellung 4711 kam nie an.")
    return {"support": support, "sales": sales, "mail": mail, **ids}


def audit(db, event: str) -> list[dict]:
    rows = db.fetchall("SELECT actor, entity_type, entity_id, detail FROM audit_log"
                       " WHERE event = %s ORDER BY id", (event,))
    return [{**r, "detail": json.loads(r["detail"] or "{}")} for r in rows]


def test_saved_replies_are_created_edited_and_deleted_with_an_audit_trail_without_text(
        svc, db, team):
    """GIVEN an admin WHEN she creates, edits and deletes a saved reply THEN each change is
    stored and audited under her with the mailbox's name, never the title or the text; an
    edit of an older version is refused and changes nothing."""
    rid = answers.create(svc, team["support"], "Lieferung", "Hallo {customer_name}, "
                         "Ihre Bestellung {order_number} ...", "user:root")
    assert [r.title for r in answers.replies(svc, team["support"])] == ["Lieferung"]
    assert answers.replies(svc, team["sales"]) == []
    answers.update(svc, rid, 1, "Lieferung verspätet", "Neuer Text {agent_name}", "user:root")
    with pytest.raises(BadInputError, match="changed this saved reply meanwhile"):
        answers.update(svc, rid, 1, "Alt", "alter Text", "user:root")
    assert answers.reply(svc, rid).body == "Neuer Text {agent_name}"
    assert answers.reply(svc, rid).version == 2
    with pytest.raises(BadInputError):
        answers.create(svc, team["support"], "  ", "text", "user:root")
    answers.delete(svc, rid, "user:root")
    with pytest.raises(DraftNotFoundError):
        answers.reply(svc, rid)
    trail = [(e["actor"], e["entity_type"], e["entity_id"], e["detail"]) for e in
             audit(db, "saved_reply_created") + audit(db, "saved_reply_updated")
             + audit(db, "saved_reply_deleted")]
    assert trail == [
        ("user:root", "saved_reply", str(rid), {"mailbox": "support"}),
        ("user:root", "saved_reply", str(rid), {"mailbox": "support", "version": 2}),
        ("user:root", "saved_reply", str(rid), {"mailbox": "support"}),
    ]
    everything = json.dumps([r["detail"] for r in db.fetchall("SELECT detail FROM audit_log")])
    assert "Lieferung" not in everything and "Text" not in everything


def test_a_saved_reply_is_filled_from_the_mail_and_the_agent(svc, db, team):
    """GIVEN a mail from "Carla Kunde" about "Bestellung 4711" WHEN anna inserts a reply and
    the signature THEN name, order number and agent are filled; a second mail without a
    display name or an order number keeps those placeholders visible."""
    answers.create(svc, team["support"], "Lieferung", "Hallo {customer_name},\nBestellung "
                   "{order_number} ist unterwegs.", "user:root")
    assert answers.set_signature(svc, team["support"], "Viele Grüße\n{agent_name}", "user:root")
    assert not answers.set_signature(svc, team["support"], "Viele Grüße\n{agent_name}",
                                     "user:root")
    filled, sig = answers.for_mail(svc, team["support"], team["mail"], "anna")
    assert filled[0][1].text == "Hallo Carla Kunde,\nBestellung 4711 ist unterwegs."
    assert sig is not None and sig.text == "Viele Grüße\nanna"
    bare = make_email(db, team["support"], subject="Frage", from_addr="x@example.org",
                      body="Wo ist mein Paket?")
    filled, _ = answers.for_mail(svc, team["support"], bare, "anna")
    assert filled[0][1].text == "Hallo {customer_name},\nBestellung {order_number} ist unterwegs."
    assert filled[0][1].missing == ("customer_name", "order_number")
    assert [e["detail"] for e in audit(db, "signature_set")] == [
        {"mailbox": "support", "removed": False}]
    answers.set_signature(svc, team["support"], "", "user:root")
    assert answers.signature(svc, team["support"]) is None


def test_a_note_notifies_the_users_of_the_mailbox_it_mentions(svc, db, team):
    """GIVEN anna and bob on support, carl on sales WHEN anna writes a note mentioning bob,
    carl, herself and a nobody THEN only bob is notified (and the admin when mentioned);
    carl and the nobody are reported as not notified; the note is audited without its text;
    bob's mention is unread until he opens the mail."""
    added = notes.add(svc, team["mail"], team["support"], team["anna"], "anna",
                      "@bob kannst du das prüfen? @carl @anna @zoe")
    assert added.mentioned == ["bob"]
    assert added.not_notified == ["carl", "zoe"]
    notes.add(svc, team["mail"], team["support"], team["bob"], "bob", "@root bitte freigeben")
    shown = notes.of_mail(svc, team["mail"])
    assert [(n.author, n.mentioned) for n in shown] == [("anna", "bob"), ("bob", "root")]
    assert notes.unread_count(svc, team["bob"], frozenset({team["support"]})) == 1
    assert notes.unread_count(svc, team["root"], None) == 1
    assert notes.unread_count(svc, team["carl"], frozenset({team["sales"]})) == 0
    # a user who no longer sees the mailbox does not see the mention either
    assert notes.unread_count(svc, team["bob"], frozenset({team["sales"]})) == 0
    listed = notes.of_user(svc, team["bob"], frozenset({team["support"]}))
    assert [(m.email_id, m.author, m.subject, m.read_at) for m in listed] == [
        (team["mail"], "anna", "Bestellung 4711 fehlt", None)]
    notes.opened(svc, team["mail"], team["bob"])
    assert notes.unread_count(svc, team["bob"], frozenset({team["support"]})) == 0
    assert notes.of_user(svc, team["bob"], None)[0].read_at is not None
    trail = audit(db, "note_added")
    assert [(e["actor"], e["entity_id"], e["detail"]["mentioned"]) for e in trail] == [
        ("user:anna", str(team["mail"]), ["user:bob"]),
        ("user:bob", str(team["mail"]), ["user:root"])]
    assert "prüfen" not in json.dumps([e["detail"] for e in trail])
    with pytest.raises(BadInputError):
        notes.add(svc, team["mail"], team["support"], team["anna"], "anna", "  \n ")


def test_notes_go_with_their_mail(svc, db, team):
    """An erased (deleted) mail takes its notes and mentions along."""
    notes.add(svc, team["mail"], team["support"], team["anna"], "anna", "@bob hier")
    db.execute("DELETE FROM emails WHERE id = %s", (team["mail"],))
    assert db.fetchone("SELECT COUNT(*) AS n FROM mail_notes")["n"] == 0
    assert db.fetchone("SELECT COUNT(*) AS n FROM note_mentions")["n"] == 0


def test_a_persons_export_holds_the_notes_on_their_mails(svc, db, team, tmp_path):
    """An access request's archive (personal_data.export) carries the team's notes on the
    person's mails: they may say things about the person."""
    import zipfile

    from email_rag.privacy import personal_data

    notes.add(svc, team["mail"], team["support"], team["anna"], "anna",
              "Kundin hat angerufen, Paket liegt beim Nachbarn.")
    out = tmp_path / "carla.zip"
    personal_data.export(svc, "carla@example.org", out)
    with zipfile.ZipFile(out) as z:
        text = z.read(f"mails/{team['mail']}/mail.txt").decode()
    assert "== Internal note by anna at" in text
    assert "Paket liegt beim Nachbarn." in text
