"""The review queue over HTTP (issue 18): true counts, keyset paging that keeps its place,
"x of N" and Next beyond the first 200, sorting, waiting time from the customer's Date,
full-text search, and per-mailbox permissions enforced on every route."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from email_rag.auth import users


def bulk_drafts(db, n, mailbox="support", start="2026-11-01 00:00:00", **cols):
    """n pending drafts, one a minute from ``start`` (customer Date = received time)."""
    db.execute("INSERT IGNORE INTO mailboxes (name, address) VALUES (%s, %s)",
               (mailbox, f"{mailbox}@example.com"))
    mb = db.fetchone("SELECT id FROM mailboxes WHERE name = %s", (mailbox,))["id"]
    with db.transaction() as cur:
        first = None
        for i in range(n):
            cur.execute(
                "INSERT INTO emails (mailbox_id, dedup_key, message_id, status, subject,"
                " body_text, from_addr, category, priority, language, received_at, sent_at)"
                " VALUES (%s, %s, %s, 'draft_ready', %s, %s, %s, %s, %s, 'de',"
                " %s + INTERVAL %s MINUTE, %s + INTERVAL %s MINUTE)",
                (mb, f"{mailbox}-{i}", f"<{mailbox}-{i}@x>", cols.get("subject", f"Frage {i}"),
                 cols.get("body", f"Text {i}"), cols.get("from_addr", f"kunde{i}@example.com"),
                 cols.get("category", "order"), cols.get("priority", "normal"),
                 start, i, start, i))
            email_id = cur.lastrowid
            cur.execute("INSERT INTO drafts (email_id, version, status, subject, body_draft)"
                        " VALUES (%s, 1, 'pending_review', 'Re: x', 'Hallo')", (email_id,))
            first = first or cur.lastrowid
    return list(range(first, first + n))


def ids_on(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr id="draft-(\d+)">', html)]


def test_queue_counts_all_and_pages_by_keyset_to_the_end(client, db):
    """GIVEN 230 pending drafts WHEN staff page through the queue THEN the badge says 230,
    every draft appears exactly once in order, and the last page says 201-230 of 230."""
    ids = bulk_drafts(db, 230)
    c = client()
    html = c.get("/queue").text
    assert 'id="queue-total">230<' in html and "1–50 of 230" in html
    seen = ids_on(html)
    while (m := re.search(r'id="next-page" href="([^"]+)"', html)):
        html = c.get(m.group(1).replace("&amp;", "&")).text
        seen += ids_on(html)
    assert seen == ids and "201–230 of 230" in html
    back = re.search(r'id="prev-page" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert ids_on(c.get(back).text) == ids[150:200]


def test_a_page_keeps_its_place_when_earlier_drafts_are_approved(client, db):
    ids = bulk_drafts(db, 120)
    c = client()
    page1 = c.get("/queue").text
    later = re.search(r'id="next-page" href="([^"]+)"', page1).group(1).replace("&amp;", "&")
    db.execute("UPDATE drafts SET status = 'approved' WHERE id IN (%s, %s, %s)", tuple(ids[:3]))
    html = c.get(later).text
    assert ids_on(html)[0] == ids[50] and "48–97 of 117" in html


def test_draft_beyond_200_has_its_position_and_next_goes_on(client, db):
    """GIVEN 230 drafts WHEN staff open the 220th THEN it says 220 of 230, Next opens the
    221st, and after approving it the next page is the 221st (not the oldest)."""
    ids = bulk_drafts(db, 230)
    c = client()
    html = c.get(f"/drafts/{ids[219]}").text
    assert "220 of 230 waiting" in html
    assert f'id="skip" href="/drafts/{ids[220]}"' in html
    assert f'id="prev" href="/drafts/{ids[218]}"' in html
    r = c.post(f"/drafts/{ids[219]}/approve", data={"csrf_token": c.csrf, "body": "Hallo"},
               follow_redirects=False)
    assert r.headers["location"] == f"/drafts/{ids[220]}"


def test_sorting_by_priority_and_waiting_from_the_customers_date(client, db):
    """GIVEN an urgent mail received last and a mail whose Date is 3 days old WHEN sorted by
    priority THEN the urgent one is first; its waiting time counts from the customer's Date
    and is coloured late."""
    today = datetime.now(UTC) - timedelta(hours=2)  # the mails' dates relative to the clock
    normal = bulk_drafts(db, 3, start=f"{today:%Y-%m-%d %H:%M:%S}")
    urgent = bulk_drafts(db, 1, mailbox="sales", start=f"{today + timedelta(hours=1):%Y-%m-%d %H:%M:%S}",
                         priority="urgent")[0]
    db.execute("UPDATE emails e JOIN drafts d ON d.email_id = e.id SET e.received_at = NOW(6),"
               " e.sent_at = NOW(6) - INTERVAL 3 DAY WHERE d.id = %s", (normal[0],))
    c = client()
    assert ids_on(c.get("/queue").text)[0] == normal[0]  # waiting longest first
    html = c.get("/queue?sort=priority").text
    assert ids_on(html)[0] == urgent
    html = c.get("/queue").text
    row = re.search(rf'<tr id="draft-{normal[0]}">\s*<td class="age wait-(\w+)"[^>]*>([^<]+)<',
                    html)
    assert row.group(1) == "late" and row.group(2).startswith("3 d")
    assert ids_on(c.get("/queue?sort=mailbox").text)[0] == urgent  # "sales" < "support"


def test_search_finds_subject_sender_and_text(client, db):
    bulk_drafts(db, 20)
    order = bulk_drafts(db, 1, mailbox="b1", subject="Rechnung doppelt",
                        body="Die Bestellung 471122 kam zweimal.", from_addr="erika@muster.example")[0]
    c = client()
    for q in ("471122", "rechnung", "erika muster", "zweimal Bestellung"):
        html = c.get("/queue", params={"q": q}).text
        assert ids_on(html) == [order], q
        assert 'id="queue-total">1<' in html
    html = c.get(f"/drafts/{order}", params={"q": "471122"}).text
    assert "1 of 1 waiting" in html


def test_staff_see_and_act_only_on_their_mailboxes(client, db):
    """GIVEN anna assigned to 'support' only WHEN she lists, opens, downloads from, approves,
    rejects or regenerates a 'sales' draft THEN it does not exist for her and nothing
    changes; an admin sees both mailboxes."""
    mine = bulk_drafts(db, 2)
    other = bulk_drafts(db, 1, mailbox="sales")[0]
    users.set_mailbox(db, "anna", "support", True, "cli:root")
    c = client()
    html = c.get("/queue").text
    assert ids_on(html) == mine and 'id="queue-total">2<' in html and "sales" not in html
    assert c.get(f"/drafts/{other}").status_code == 404
    assert c.get(f"/drafts/{other}/attachments/1").status_code == 404
    for action, data in (("approve", {"body": "x"}), ("reject", {"reason": "x"}),
                         ("regenerate", {})):
        r = c.post(f"/drafts/{other}/{action}", data={"csrf_token": c.csrf, **data},
                   follow_redirects=False)
        assert r.status_code == 404, action
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (other,))["status"] == \
        "pending_review"
    other_mail = db.fetchone("SELECT email_id FROM drafts WHERE id = %s", (other,))["email_id"]
    for action, data in (("snooze", {"until": "2099-01-01"}), ("unsnooze", {}),
                         ("reopen", {"reason": "x"}), ("forward", {"to": "x@y.example"})):
        r = c.post(f"/mails/{other_mail}/{action}", data={"csrf_token": c.csrf, **data},
                   follow_redirects=False)
        assert r.status_code == 404, action
    assert "sales" not in c.get("/queue", params={"view": "snoozed"}).text
    other_from = db.fetchone("SELECT from_addr, subject FROM emails WHERE id = %s",
                             (other_mail,))
    assert f'id="hit-mail-{other_mail}"' not in c.get(
        "/search", params={"q": other_from["subject"]}).text
    assert f'id="mail-{other_mail}"' not in c.get(
        "/customers", params={"addr": other_from["from_addr"]}).text
    assert c.get(f"/drafts/{mine[0]}").status_code == 200
    admin = client("root")
    assert set(ids_on(admin.get("/queue").text)) == {*mine, other}


def test_no_reply_list_and_decisions_respect_the_mailbox_scope(client, db):
    from tests.factories import make_email

    db.execute("INSERT INTO mailboxes (name, address) VALUES ('support', 's@x'), ('sales', 'x@x')")
    ids = {r["name"]: r["id"] for r in db.fetchall("SELECT id, name FROM mailboxes")}
    mine = make_email(db, ids["support"], status="no_reply_suggested", subject="Danke support")
    other = make_email(db, ids["sales"], status="no_reply_suggested", subject="Danke sales")
    users.set_mailbox(db, "anna", "support", True, "cli:root")
    c = client()
    page = c.get("/no-reply").text
    assert "Danke support" in page and "Danke sales" not in page
    r = c.post(f"/no-reply/{other}/confirm", data={"csrf_token": c.csrf}, follow_redirects=False)
    assert r.status_code == 404
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (other,))["status"] == \
        "no_reply_suggested"
    assert mine


def test_the_sort_index_follows_every_change_of_a_draft_or_its_mail(client, db, settings):
    """review_queue_keys is derived by triggers: after approve, reject, stale, regenerate
    and a corrected priority it holds exactly the waiting drafts, with their new keys."""
    from email_rag.sending import review
    from email_rag.wiring.services import Services

    ids = bulk_drafts(db, 6)

    def indexed():
        rows = db.fetchall("SELECT sort, draft_id FROM review_queue_keys")
        by_sort = {}
        for r in rows:
            by_sort.setdefault(r["sort"], set()).add(r["draft_id"])
        assert set(by_sort) <= {"waiting", "priority", "mailbox", "due"}
        assert len({frozenset(v) for v in by_sort.values()}) <= 1  # same drafts in each
        return by_sort.get("waiting", set())

    assert indexed() == set(ids)
    svc = Services(settings)
    try:
        review.approve(svc, ids[0], "anna")
        review.reject(svc, ids[1], "anna", "spam")
    finally:
        svc.close()
    db.execute("UPDATE drafts SET status = 'stale' WHERE id = %s", (ids[2],))
    db.execute("UPDATE drafts SET status = 'superseded' WHERE id = %s", (ids[3],))
    assert indexed() == {ids[2], ids[4], ids[5]}
    db.execute("UPDATE emails e JOIN drafts d ON d.email_id = e.id SET e.priority = 'urgent'"
               " WHERE d.id = %s", (ids[5],))
    c = client()
    assert ids_on(c.get("/queue?sort=priority").text)[0] == ids[5]
    assert indexed() == {ids[2], ids[4], ids[5]}
    db.execute("DELETE FROM drafts WHERE id = %s", (ids[4],))
    assert indexed() == {ids[2], ids[5]}
