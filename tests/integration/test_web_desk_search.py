"""Search over every mail and reply, and the customer page, over HTTP: hostile mail text
stays text (escaped, the match marked by the page), only the user's mailboxes, links to
the mail, the draft and the customer."""

from __future__ import annotations

import html as htmllib

from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}
HOSTILE = 'Rechnung 4711 <img src=x onerror=alert(1)> <script>alert("x")</script> \u202eabc'


def _world(db, team):
    support, sales = team
    sent = make_email(db, support, status="sent", subject="Rechnung <b>4711</b>",
                      from_addr="erika@muster.example", from_name="Erika Muster",
                      body=HOSTILE)
    reply = make_draft(db, sent, body="Die Gutschrift zu 4711 ist unterwegs.")
    db.execute("UPDATE drafts SET status = 'sent', body_final = body_draft WHERE id = %s",
               (reply,))
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (sent,))
    waiting = make_email(db, support, subject="Wo bleibt 4711?",
                         from_addr="erika@muster.example", body="Immer noch nichts.")
    draft = make_draft(db, waiting)
    foreign = make_email(db, sales, subject="Sales 4711", from_addr="erika@muster.example",
                         body="4711 bei sales")
    return {"sent": sent, "reply": reply, "waiting": waiting, "draft": draft,
            "foreign": foreign}


def test_search_lists_mails_and_replies_with_escaped_marked_snippets(client, db, team):
    """GIVEN a sent case whose text holds markup and a bidi override, our reply, a waiting
    mail and a sales mail WHEN anna (support) searches "4711" THEN the sent mail, our reply
    and the waiting mail are listed (not the sales one), each linked; the markup is shown
    as text, the override isolated as <U+202E>, and 4711 marked by the page."""
    w = _world(db, team)
    anna = client("anna")
    page = anna.get("/search", params={"q": "4711"}).text
    assert f'id="hit-mail-{w["sent"]}"' in page and f'id="hit-mail-{w["waiting"]}"' in page
    assert f'id="hit-reply-{w["reply"]}"' in page
    assert f'id="hit-mail-{w["foreign"]}"' not in page and "bei sales" not in page
    assert "<script>" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;U+202E&gt;" in page and "\u202e" not in page
    assert "<mark><bdi>4711</bdi></mark>" in page
    assert f'href="/drafts/{w["reply"]}"' in page and f'href="/mails/{w["sent"]}"' in page
    assert 'href="/customers?addr=erika%40muster.example"' in page
    counts = htmllib.unescape(page)
    assert "2 mail(s) and 1 reply/replies" in counts
    carl = client("carl").get("/search", params={"q": "4711"}).text
    assert f'id="hit-mail-{w["foreign"]}"' in carl and f'id="hit-mail-{w["sent"]}"' not in carl
    short = anna.get("/search", params={"q": "ab"}).text
    assert "at least 3 characters" in short


def test_the_customer_page_shows_mails_replies_and_open_items(client, db, team):
    """GIVEN Erika's sent case, her waiting mail and a sales mail THEN anna's customer page
    lists the two support mails, our reply and one open item linking to its draft; carl
    (sales) sees only the sales mail; an unknown address says there is nothing."""
    w = _world(db, team)
    anna = client("anna")
    page = anna.get("/customers", params={"addr": "erika@muster.example"}).text
    assert f'id="mail-{w["sent"]}"' in page and f'id="mail-{w["waiting"]}"' in page
    assert f'id="mail-{w["foreign"]}"' not in page
    assert f'id="reply-{w["reply"]}"' in page and "Gutschrift zu 4711" in page
    assert f'id="open-{w["waiting"]}"' in page and f'href="/drafts/{w["draft"]}"' in page
    assert f'id="open-{w["sent"]}"' not in page
    assert "Rechnung &lt;b&gt;4711&lt;/b&gt;" in page and "Erika Muster" in page
    carl = client("carl").get("/customers", params={"addr": "erika@muster.example"}).text
    assert f'id="mail-{w["foreign"]}"' in carl and f'id="mail-{w["sent"]}"' not in carl
    assert "Gutschrift" not in carl
    none = anna.get("/customers", params={"addr": "nobody@example.org"}).text
    assert 'id="no-mails"' in none
    assert 'href="/customers?addr=erika%40muster.example"' in anna.get(
        f"/mails/{w['waiting']}").text


def test_search_and_customer_pages_need_a_login(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as anonymous:
        for path in ("/search?q=4711", "/customers?addr=erika@muster.example"):
            r = anonymous.get(path, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"].startswith("/login")


def test_the_search_page_links_to_older_hits_and_back_to_the_newest(client, db, team, monkeypatch):
    """GIVEN 5 mails with the word and pages of 2 WHEN anna follows "older" THEN each page
    lists the next older ones, the last has no "older" link, and a later page links back
    to the newest."""
    import re
    from datetime import datetime, timedelta

    from email_rag.review import search
    from tests.factories import make_email

    monkeypatch.setattr(search, "LIMIT", 2)
    support = team[0]
    mails = [make_email(db, support, status="sent", subject=f"Rechnung {i}", body="Rechnung",
                        received_at=datetime(2026, 11, 1) + timedelta(hours=i))
             for i in range(5)]
    anna = client("anna")
    seen, url = [], "/search?q=Rechnung"
    for _ in range(3):
        page = anna.get(url).text
        seen.append([int(i) for i in re.findall(r'id="hit-mail-(\d+)"', page)])
        more = re.search(r'id="next-page" href="([^"]+)"', page)
        if url != "/search?q=Rechnung":
            assert 'id="newest-page" href="/search?q=Rechnung"' in page
        if more is None:
            break
        url = htmllib.unescape(more.group(1))
    assert seen == [mails[4:2:-1], mails[2:0:-1], mails[:1]]
    assert more is None
