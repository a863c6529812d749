"""Search over every mail and reply, and the customer page, against the real MariaDB:
closed and answered mails are found too, our sent replies by their text, only in the
user's mailboxes, with a snippet around the match whose parts are plain text."""

from __future__ import annotations

import pytest

from email_rag.review import search
from tests.factories import make_draft, make_email, make_mailbox


@pytest.fixture
def world(db):
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    answered = make_email(db, support, status="sent", subject="Drucker kaputt",
                          from_addr="erika@muster.example", from_name="Erika Muster",
                          body="Der Drucker zeigt Fehler E-471122 seit gestern.")
    reply = make_draft(db, answered, body="Bitte setzen Sie den Toner neu ein, Frau Muster.")
    db.execute("UPDATE drafts SET status = 'sent', body_final = %s WHERE id = %s",
               ("Bitte tauschen Sie die Trommel aus, Frau Muster.", reply))
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (answered,))
    waiting = make_email(db, support, subject="Nochmal der Drucker",
                         from_addr="erika@muster.example", body="Immer noch E-471122.")
    waiting_draft = make_draft(db, waiting)
    closed = make_email(db, support, status="rejected", subject="Werbung",
                        from_addr="spam@werbung.example", body="Kaufen Sie Trommeln!")
    foreign = make_email(db, sales, status="sent", subject="Angebot Drucker",
                         from_addr="erika@muster.example", body="E-471122 bei sales")
    return {"support": support, "sales": sales, "answered": answered, "reply": reply,
            "waiting": waiting, "waiting_draft": waiting_draft, "closed": closed,
            "foreign": foreign}


def test_search_finds_answered_and_closed_mails_and_our_sent_reply(services, world):
    """GIVEN a sent case, a waiting one, a rejected one and a mail of another mailbox WHEN
    anna (support only) searches THEN the error number finds both support mails, not the
    sales one; "Trommel" finds the rejected mail and our sent reply by the text that went
    out (not the generated one), with the match marked in the snippet."""
    scope = frozenset({world["support"]})
    found = search.search(services, scope, "E-471122")
    assert {(h.kind, h.email_id) for h in found.hits} == {
        ("mail", world["answered"]), ("mail", world["waiting"])}
    assert found.mails == 2 and found.replies == 0
    trommel = search.search(services, scope, "trommel")
    assert {(h.kind, h.email_id, h.draft_id) for h in trommel.hits} == {
        ("mail", world["closed"], None), ("reply", world["answered"], world["reply"])}
    reply = next(h for h in trommel.hits if h.kind == "reply")
    assert ("Trommel", True) in reply.snippet and reply.status == "sent"
    assert search.search(services, scope, "Toner").hits == []  # the generated text only
    admin = search.search(services, None, "E-471122")
    assert world["foreign"] in {h.email_id for h in admin.hits}


def test_a_search_of_short_words_only_searches_nothing(services, world):
    found = search.search(services, None, "E 4")
    assert found.searched is False and found.hits == []


def test_the_snippet_is_cut_around_the_first_match_and_keeps_markup_as_text():
    text = ("Einleitung " * 30 + "<script>alert(1)</script> Rechnung 4711 ist doppelt. "
            + "Schluss " * 40)
    parts = search.snippet(text, ["rechnung", "4711"])
    assert parts[0] == ("…", False) and parts[-1] == ("…", False)
    assert ("Rechnung", True) in parts and ("4711", True) in parts
    joined = "".join(p for p, _ in parts)
    assert "<script>alert(1)</script>" in joined  # as text: the page escapes every part
    assert len(joined) < 300
    assert search.snippet("nichts davon", ["rechnung"]) == (("nichts davon", False),)


def test_the_customer_page_lists_their_mails_our_replies_and_open_items(services, world):
    """GIVEN Erika's sent case and her waiting mail in support and a mail to sales THEN
    anna (support) sees the two support mails newest first, our sent reply, one open item
    with its waiting draft, and her name; nothing of sales."""
    scope = frozenset({world["support"]})
    c = search.customer(services, scope, "erika@muster.example")
    assert [m.id for m in c.mails] == [world["waiting"], world["answered"]]
    assert [r.draft_id for r in c.replies] == [world["reply"]]
    assert [(m.id, m.open_draft) for m in c.open_items] == [
        (world["waiting"], world["waiting_draft"])]
    assert c.names == ["Erika Muster"]
    assert world["foreign"] in [m.id for m in search.customer(
        services, None, "erika@muster.example").mails]
    assert search.customer(services, frozenset({world["sales"]}),
                           "spam@werbung.example").mails == []


def test_search_pages_beyond_the_first_page_newest_first(services, db):
    """GIVEN 14 mails and 6 of our replies with the word (some at the same minute, one reply
    found only by its generated text, which is not listed) and one mail of another mailbox
    WHEN searched 4 hits a page, following each page's cursor THEN every hit is listed
    once, newest first, as one search without a limit lists them; the last page has no
    cursor."""
    from datetime import datetime, timedelta

    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    start = datetime(2026, 11, 1, 9)
    for i in range(14):
        at = start + timedelta(hours=i // 2)  # two mails each hour
        mail = make_email(db, support, status="sent", subject=f"Rechnung {i}",
                          body="Rechnung doppelt", received_at=at, sent_at=at)
        if i % 2:
            d = make_draft(db, mail, body="Die Rechnung ist storniert.")
            db.execute("UPDATE drafts SET status = 'sent', approved_at = %s WHERE id = %s",
                       (at, d))
    ignored = make_draft(db, make_email(db, support, status="sent", subject="x", body="y"),
                         body="Rechnung im Entwurf")
    db.execute("UPDATE drafts SET status = 'sent', body_final = 'anders' WHERE id = %s",
               (ignored,))
    make_email(db, sales, status="sent", subject="Rechnung sales", body="Rechnung")
    scope = frozenset({support})
    everything = search.search(services, scope, "Rechnung", limit=1000)
    assert (everything.mails, everything.replies) == (14, 7)
    assert everything.next_cursor is None
    pages, cursor = [], None
    while True:
        found = search.search(services, scope, "Rechnung", limit=4, before=cursor)
        pages.append([h.anchor for h in found.hits])
        cursor = found.next_cursor
        if cursor is None:
            break
        assert len(pages) < 20
    listed = [a for page in pages for a in page]
    assert listed == [h.anchor for h in everything.hits]
    assert len(listed) == 21 and all(len(p) <= 4 for p in pages)
    times = [h.at for h in everything.hits]
    assert times == sorted(times, reverse=True)


def test_search_ignores_a_broken_cursor(services, world):
    found = search.search(services, None, "E-471122", before="kaputt")
    assert found.mails == 3
