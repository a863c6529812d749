"""The knowledge admin pages over HTTP against the real MariaDB (issue 41): admins upload
(.md and a .docx built here) and write articles, list and filter them, read an article's
passages (anchors ``#pN``), edit it (a stale version refused), disable / enable and delete it
(only with the confirm box); candidates from sent replies are edited, approved and dropped;
staff may read but never change; the audit names ids and titles, never the text; a missing
article is a 404 page; bad files are refused with a reason and store nothing; article text is
shown as text."""

from __future__ import annotations

import html as htmllib
import io
import re

from email_rag.web import views_knowledge
from tests.factories import make_draft, make_email
from tests.webutil import assert_inert

PEOPLE = {"anna": "staff", "carl": "staff", "root": "admin"}
SECRET = "Geheimtext"  # a word of an article's text: never in an audit entry
RETURNS_MD = f"""# Returns

You can send any item back within 30 days of delivery. {SECRET} stays inside.

## Refunds

We refund the purchase price within 5 working days after the parcel arrived.

## Fees

Returns are free of charge inside Germany.
"""




def text(page: str) -> str:
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def post(c, url: str, files=None, **data):
    return c.post(url, data={"csrf_token": c.csrf, **data}, files=files)


def upload(c, name: str, data: bytes, mailbox_id: str = "global"):
    return post(c, "/admin/knowledge/upload", files={"file": (name, data)},
                mailbox_id=mailbox_id)


def docx_bytes() -> bytes:
    from docx import Document

    doc = Document()
    doc.add_heading("Warranty", level=0)
    doc.add_heading("Claims", level=1)
    doc.add_paragraph("Every device has a warranty of 24 months. Send it with its receipt.")
    doc.add_heading("Repairs", level=1)
    doc.add_paragraph("A repair outside the warranty costs 49 EUR plus parts.")
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def articles(db) -> list[dict]:
    return db.fetchall("SELECT id, title, mailbox_id, origin, status, version "
                       "FROM knowledge_articles ORDER BY id")


def audit(db, entity: str) -> list[dict]:
    return db.fetchall("SELECT actor, entity_id, event, detail FROM audit_log "
                       "WHERE entity_type = %s ORDER BY id", (entity,))


def test_an_admin_uploads_lists_filters_and_reads_articles(client, db, team):
    """GIVEN an admin WHEN she uploads a Markdown file for every mailbox and a .docx for
    support THEN each is one article (origin web) split at its headings, listed with scope,
    origin, language, status, version and passages, the filters narrow the list, and the
    article page holds each passage under ``id="pN"``; the audit names id and title only."""
    support, _ = team
    root = client("root")
    r = upload(root, "returns.md", RETURNS_MD.encode())
    assert r.status_code == 200 and "Article “Returns” added from returns.md." in text(r.text)
    r = upload(root, "warranty.docx", docx_bytes(), str(support))
    assert "Article “Warranty” added from warranty.docx." in text(r.text)
    md, dx = articles(db)
    assert (md["title"], md["mailbox_id"], md["origin"], md["version"]) == (
        "Returns", None, "web", 1)
    assert (dx["title"], dx["mailbox_id"], dx["origin"]) == ("Warranty", support, "web")

    listing = root.get("/admin/knowledge")
    rows = {a["id"]: text(m) for a in (md, dx) for m in re.findall(
        rf'<tr id="article-{a["id"]}".*?</tr>', listing.text, re.S)}
    assert rows[md["id"]].split() == ["Returns", "every", "mailbox", "written", "in", "the",
                                      "web", "en", "active", "1", "3"] + rows[md["id"]].split()[11:]
    assert "support" in rows[dx["id"]] and " 2 " in f" {rows[dx['id']]} "
    only_support = root.get(f"/admin/knowledge?mailbox={support}").text
    assert f'id="article-{dx["id"]}"' in only_support
    assert f'id="article-{md["id"]}"' not in only_support
    only_global = root.get("/admin/knowledge?mailbox=global").text
    assert f'id="article-{md["id"]}"' in only_global
    assert f'id="article-{dx["id"]}"' not in only_global
    assert "article-" not in root.get("/admin/knowledge?status=disabled").text.replace(
        'id="articles"', "")
    assert "article-" not in root.get("/admin/knowledge?origin=file").text.replace(
        'id="articles"', "")

    page = root.get(f"/admin/knowledge/{md['id']}").text
    for n, heading in [(1, "Returns"), (2, "Returns > Refunds"), (3, "Returns > Fees")]:
        block = re.search(rf'<li class="card passage" id="p{n}">(.*?)</li>', page, re.S)
        assert block and heading in text(block.group(1))
    assert "within 5 working days" in text(re.search(r'id="p2">(.*?)</li>', page,
                                                     re.S).group(1))
    assert "knowledge_article_created" in page  # the history
    events = audit(db, "knowledge_article")
    assert [(e["actor"], e["entity_id"], e["event"]) for e in events] == [
        ("user:root", str(md["id"]), "knowledge_article_created"),
        ("user:root", str(dx["id"]), "knowledge_article_created")]
    assert '"title": "Returns"' in events[0]["detail"]
    assert not any(SECRET in e["detail"] or "30 days" in e["detail"] for e in events)


def test_edit_refuses_a_stale_version_then_disable_enable_and_delete(client, db, team):
    """GIVEN an article at version 1 WHEN it is saved from version 1 THEN version 2 with the
    new passages; WHEN saved again from version 1 THEN refused, nothing saved; disable and
    enable change its status; delete without the confirm box deletes nothing, with it the
    article and its passages are gone and its page is a 404."""
    root = client("root")
    post(root, "/admin/knowledge/create", mailbox_id="global", title="Shipping",
         body="# Shipping\n\nWe ship within 2 days.")
    (a,) = articles(db)
    url = f"/admin/knowledge/{a['id']}"
    r = post(root, f"{url}/edit", version=1, title="Shipping times",
             body="# Shipping\n\nWe ship within 3 days.\n\n## Costs\n\nShipping costs 4.90 EUR.")
    assert "Article saved as version 2." in text(r.text)
    assert 'id="p2"' in r.text and "4.90 EUR" in r.text
    r = post(root, f"{url}/edit", version=1, title="Old", body="stale text")
    assert "Someone changed this knowledge article meanwhile; nothing was saved." in text(r.text)
    (a,) = articles(db)
    assert (a["title"], a["version"]) == ("Shipping times", 2)
    r = post(root, f"{url}/edit", version=2, title="Shipping times",
             body="# Shipping\n\nWe ship within 3 days.\n\n## Costs\n\nShipping costs 4.90 EUR.")
    assert "nothing changed" in text(r.text) and articles(db)[0]["version"] == 2

    r = post(root, f"{url}/status", to="disabled")
    assert "Article disabled" in text(r.text) and 'id="disabled-note"' in r.text
    assert articles(db)[0]["status"] == "disabled"
    post(root, f"{url}/status", to="active")
    assert articles(db)[0]["status"] == "active"

    r = post(root, f"{url}/delete")
    assert "Nothing was deleted" in text(r.text) and len(articles(db)) == 1
    r = post(root, f"{url}/delete", confirm="yes")
    assert "Article “Shipping times” deleted." in text(r.text) and articles(db) == []
    assert db.fetchone("SELECT COUNT(*) AS n FROM knowledge_passages")["n"] == 0
    gone = root.get(url)
    assert gone.status_code == 404 and f"There is no knowledge article {a['id']}." in text(
        gone.text)
    assert root.get("/admin/knowledge/999999").status_code == 404
    assert post(root, "/admin/knowledge/999999/delete", confirm="yes").status_code == 404
    events = [(e["event"], e["entity_id"]) for e in audit(db, "knowledge_article")]
    assert [e for e, _ in events] == [
        "knowledge_article_created", "knowledge_article_updated", "knowledge_article_disabled",
        "knowledge_article_enabled", "knowledge_article_deleted"]
    assert {i for _, i in events} == {str(a["id"])}


def test_candidates_are_edited_approved_and_dropped_on_one_page(client, db, team):
    """GIVEN two sent replies WHEN the admin collects them THEN two pending candidates with
    personal data removed; WHEN she edits one and approves it THEN it is an article of the
    mailbox (origin case) under the edited title; WHEN she drops the other THEN no article;
    deciding one again is refused; the audit names ids and titles."""
    support, _ = team
    for n, who in ((4711, "Alice Example"), (4712, "Bert Beispiel")):
        mail = make_email(db, support, subject=f"Rücksendung Bestellung {n}",
                          from_name=who, body=f"Hallo, wie lange kann ich Bestellung {n} "
                          f"zurückschicken? {who}")
        make_draft(db, mail, body=f"Hallo {who},\n\nSie können jede Bestellung innerhalb von "
                   "30 Tagen zurückschicken.\n\nViele Grüße\nAnna\n", status="sent")
    root = client("root")
    r = post(root, "/admin/knowledge/candidates/collect")
    assert "2 sent reply(s) proposed as knowledge." in text(r.text)
    ids = [int(i) for i in re.findall(r'id="candidate-(\d+)"', r.text)]
    assert len(ids) == 2 and "Alice" not in r.text and "Bert" not in r.text
    first, second = sorted(ids)
    r = post(root, f"/admin/knowledge/candidates/{first}/edit", title="Rücksendefrist",
             question="Wie lange kann ich zurückschicken?",
             answer="Sie können jede Bestellung innerhalb von 30 Tagen zurückschicken.",
             then="approve")
    assert "Candidate “Rücksendefrist” approved" in text(r.text)
    (a,) = articles(db)
    assert (a["title"], a["mailbox_id"], a["origin"]) == ("Rücksendefrist", support, "case")
    r = post(root, f"/admin/knowledge/candidates/{second}/drop")
    assert "dropped" in text(r.text) and len(articles(db)) == 1
    assert "No candidates here." in text(root.get("/admin/knowledge/candidates").text)
    r = post(root, f"/admin/knowledge/candidates/{second}/drop")
    assert f"Knowledge candidate {second} was dropped already; nothing was changed." in text(
        r.text)
    decided = root.get("/admin/knowledge/candidates?status=approved").text
    assert f'href="/admin/knowledge/{a["id"]}"' in decided
    events = [(e["entity_id"], e["event"]) for e in audit(db, "knowledge_candidate")]
    assert (str(first), "knowledge_candidate_edited") in events
    assert (str(first), "knowledge_candidate_approved") in events
    assert (str(second), "knowledge_candidate_dropped") in events
    assert not any("30 Tagen" in e["detail"] for e in audit(db, "knowledge_candidate"))


def test_staff_read_their_articles_but_change_nothing(client, db, team):
    """GIVEN a global article, one of support and one of sales WHEN anna (support) reads THEN
    she sees the global and the support one, the sales one is a 404, and her pages carry no
    form to change; every change and the candidates page are 403 for her."""
    support, sales = team
    root, anna = client("root"), client("anna")
    for scope, title in (("global", "Everyone"), (str(support), "Support"),
                         (str(sales), "Sales")):
        post(root, "/admin/knowledge/create", mailbox_id=scope, title=title,
             body=f"# {title}\n\nText of {title}.")
    every, own, other = (a["id"] for a in articles(db))
    listing = anna.get("/admin/knowledge")
    assert listing.status_code == 200
    assert f'id="article-{every}"' in listing.text and f'id="article-{own}"' in listing.text
    assert f'id="article-{other}"' not in listing.text and 'id="upload"' not in listing.text
    page = anna.get(f"/admin/knowledge/{own}")
    assert page.status_code == 200 and 'id="p1"' in page.text
    assert "/edit" not in page.text and "/delete" not in page.text
    assert anna.get(f"/admin/knowledge/{other}").status_code == 404
    assert anna.get("/admin/knowledge/candidates").status_code == 403
    for url, data in [(f"/admin/knowledge/{own}/edit", {"version": 1, "title": "x",
                                                        "body": "y"}),
                      (f"/admin/knowledge/{own}/status", {"to": "disabled"}),
                      (f"/admin/knowledge/{own}/delete", {"confirm": "yes"}),
                      ("/admin/knowledge/create", {"title": "x", "body": "y"}),
                      ("/admin/knowledge/candidates/collect", {})]:
        assert post(anna, url, **data).status_code == 403, url
    assert upload(anna, "a.md", b"# A\n\nText.").status_code == 403
    r = root.post("/admin/knowledge/create", data={"title": "x", "body": "y"})  # no CSRF
    assert r.status_code == 403
    assert [a["title"] for a in articles(db)] == ["Everyone", "Support", "Sales"]
    assert [a["version"] for a in articles(db)] == [1, 1, 1]


def test_bad_files_are_refused_with_a_reason_and_store_nothing(client, db, team, monkeypatch):
    """GIVEN an admin WHEN she uploads an unknown type, an empty file, a broken .docx, a file
    above the size limit or a form without title THEN each is refused with a reason that
    names the file (never its text) and nothing is stored."""
    monkeypatch.setattr(views_knowledge, "MAX_UPLOAD_BYTES", 1000)
    root = client("root")
    cases = [("tool.exe", b"MZ binary", "tool.exe: this type cannot be read"),
             ("empty.md", b"   \n", "empty.md: the file is empty"),
             ("broken.docx", b"not a zip at all " + SECRET.encode(),
              "broken.docx: not a Word document"),
             ("big.md", b"# Big\n\n" + b"word " * 400, "big.md is larger than 1000 bytes")]
    for name, data, why in cases:
        r = upload(root, name, data)
        assert r.status_code == 200 and why in text(r.text), name
        assert SECRET not in r.text
    r = post(root, "/admin/knowledge/create", mailbox_id="global", title=" ", body="text")
    assert "A knowledge article needs a title and a text." in text(r.text)
    r = post(root, "/admin/knowledge/create", mailbox_id="987654", title="T", body="text")
    assert "There is no such mailbox." in text(r.text)
    assert articles(db) == [] and audit(db, "knowledge_article") == []


def test_article_text_is_shown_as_text_without_bidi_controls(client, db, team):
    """GIVEN an article whose text holds markup, a script and a right-to-left override WHEN
    it is shown THEN everything is escaped text and the override is shown as <U+202E>."""
    root = client("root")
    body = ("# Tricks\n\n<script>alert(1)</script> <img src=x onerror=alert(2)> "
            "Rechnung\u202efdp.exe")
    post(root, "/admin/knowledge/create", mailbox_id="global", title="Tricks \u202eevil",
         body=body)
    (a,) = articles(db)
    page = root.get(f"/admin/knowledge/{a['id']}").text
    assert_inert(page)
    assert "\u202e" not in page and "&lt;U+202E&gt;" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert_inert(root.get("/admin/knowledge").text)


def test_the_pages_speak_german(client, db, team):
    """GIVEN an admin who chose German WHEN she opens the knowledge pages THEN their texts
    and a refusal are German."""
    root = client("root")
    assert post(root, "/me", time_zone="Europe/Berlin", ui_language="de").status_code == 200
    page = root.get("/admin/knowledge").text
    assert "Datei hochladen" in page and "Artikel schreiben" in page and ">Wissen<" in page
    r = post(root, "/admin/knowledge/create", mailbox_id="global", title=" ", body="x")
    assert "Ein Wissensartikel braucht einen Titel und einen Text." in text(r.text)
    assert "Wissensvorschläge" in root.get("/admin/knowledge/candidates").text
