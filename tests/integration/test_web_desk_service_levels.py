"""Service levels on the desk (issue 28): each waiting mail's first-response due time from
its mailbox's business hours, kept with the mail, sortable in the queue's index, shown,
and marked when overdue; a changed service level computes them again."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from email_rag.core.settings import MailboxConfig
from email_rag.review import service_levels
from tests.webutil import web_app

PEOPLE = {"anna": "staff", "root": "admin"}

SUPPORT = {"time_zone": "Europe/Berlin", "days": "mon-fri", "hours": "08:00-17:00",
           "first_response_hours": 4}
SALES = {"time_zone": "Europe/Berlin", "days": "mon-sun", "hours": "00:00-24:00",
         "first_response_hours": 1}


def boxes(support=SUPPORT, sales=SALES):
    out = []
    for name, level in (("support", support), ("sales", sales)):
        out.append(MailboxConfig.model_validate(
            {"name": name, "username": f"{name}@example.com",
             **({"service_level": level} if level else {})}))
    return out


def waiting(db, mailbox: str, sent: str, subject: str) -> int:
    """A mail the customer sent at ``sent`` (UTC) with a pending draft; the draft's id."""
    db.execute("INSERT IGNORE INTO mailboxes (name, address) VALUES (%s, %s)",
               (mailbox, f"{mailbox}@example.com"))
    mb = db.fetchone("SELECT id FROM mailboxes WHERE name = %s", (mailbox,))["id"]
    with db.transaction() as cur:
        cur.execute("INSERT INTO emails (mailbox_id, dedup_key, message_id, status, subject,"
                    " body_text, from_addr, received_at, sent_at) VALUES (%s, %s, %s,"
                    " 'draft_ready', %s, 'x', 'k@example.com', %s, %s)",
                    (mb, subject, f"<{subject}@x>", subject, sent, sent))
        email_id = cur.lastrowid
        cur.execute("INSERT INTO drafts (email_id, version, status, subject, body_draft)"
                    " VALUES (%s, 1, 'pending_review', 'Re: x', 'Hallo')", (email_id,))
        return cur.lastrowid


def due_of(db, draft_id: int):
    return db.fetchone("SELECT e.due_at, e.due_rule FROM drafts d JOIN emails e"
                       " ON e.id = d.email_id WHERE d.id = %s", (draft_id,))


def due_order(db) -> list[int]:
    return [r["draft_id"] for r in db.fetchall(
        "SELECT draft_id FROM review_queue_keys WHERE sort = 'due' ORDER BY sort_key, draft_id")]


@pytest.fixture
def mails(db):
    """Friday 4 Dec 2026 (UTC): support (08-17 Berlin, 4 h) and sales (24/7, 1 h)."""
    return {
        # Fri 16:00 Berlin -> Mon 7 Dec 11:00 Berlin = 10:00 UTC
        "support_fri": waiting(db, "support", "2026-12-04 15:00:00", "support-fri"),
        # Fri 10:00 Berlin -> Fri 14:00 Berlin = 13:00 UTC
        "support_am": waiting(db, "support", "2026-12-04 09:00:00", "support-am"),
        # Fri 20:00 Berlin (24/7) -> 21:00 Berlin = 20:00 UTC
        "sales_eve": waiting(db, "sales", "2026-12-04 19:00:00", "sales-eve"),
        # Sat 5 Dec 01:00 UTC -> 02:00 UTC
        "sales_sat": waiting(db, "sales", "2026-12-05 01:00:00", "sales-sat"),
    }


def test_due_times_are_computed_once_and_the_due_sort_follows_them(db, mails):
    """GIVEN four waiting mails in two mailboxes with different business hours WHEN the due
    times are computed THEN each mail has its due time (UTC) and the rule it was computed
    under, the queue's 'due' order interleaves the mailboxes by due time, and a second
    computation writes nothing."""
    assert due_of(db, mails["support_fri"])["due_at"] is None
    assert service_levels.compute(db, boxes()) == 4
    assert due_of(db, mails["support_fri"])["due_at"] == datetime(2026, 12, 7, 10)
    assert due_of(db, mails["support_am"])["due_at"] == datetime(2026, 12, 4, 13)
    assert due_of(db, mails["sales_eve"])["due_at"] == datetime(2026, 12, 4, 20)
    assert due_of(db, mails["sales_sat"])["due_at"] == datetime(2026, 12, 5, 2)
    assert due_order(db) == [mails[k] for k in ("support_am", "sales_eve", "sales_sat",
                                                 "support_fri")]
    assert service_levels.compute(db, boxes()) == 0


def test_a_mailbox_without_a_service_level_sorts_after_the_due_ones_by_waiting_time(db, mails):
    service_levels.compute(db, boxes(sales=None))
    assert due_of(db, mails["sales_eve"]) == {"due_at": None, "due_rule": "none"}
    assert due_order(db) == [mails[k] for k in ("support_am", "support_fri", "sales_eve",
                                                 "sales_sat")]


def test_a_changed_service_level_computes_the_waiting_mails_again(db, mails):
    service_levels.compute(db, boxes())
    faster = {**SUPPORT, "first_response_hours": 1}
    service_levels.forget_changed(db, boxes(support=faster))
    assert due_of(db, mails["support_am"])["due_at"] is None
    assert due_of(db, mails["sales_eve"])["due_at"] == datetime(2026, 12, 4, 20)  # unchanged
    assert service_levels.compute(db, boxes(support=faster)) == 2
    assert due_of(db, mails["support_am"])["due_at"] == datetime(2026, 12, 4, 10)


def test_a_draft_that_leaves_the_queue_leaves_the_due_sort_and_a_new_one_enters_it(db, mails):
    service_levels.compute(db, boxes())
    db.execute("UPDATE drafts SET status = 'rejected' WHERE id = %s", (mails["sales_eve"],))
    assert mails["sales_eve"] not in due_order(db)
    new = waiting(db, "sales", "2026-12-04 18:00:00", "sales-new")
    assert due_order(db)[-1] == new  # not computed yet: last
    service_levels.compute(db, boxes())
    assert due_order(db)[:2] == [mails["support_am"], new]


def queue_ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr id="draft-(\d+)"', html)]


def test_the_queue_shows_due_times_sorts_by_them_and_marks_overdue(settings, db, mails):
    """GIVEN the mailboxes' service levels in the settings WHEN anna opens the queue sorted
    by due time THEN the rows come in due order with their due time in her time zone, and a
    row is marked overdue exactly when its due time has passed."""
    settings.mailboxes = boxes()
    app = web_app(settings, db, PEOPLE)
    from tests.webutil import browsers

    with browsers(app, log_in=True) as new:
        c = new("root")
        html = c.get("/queue?sort=due").text
        assert queue_ids(html) == [mails[k] for k in ("support_am", "sales_eve", "sales_sat",
                                                       "support_fri")]
        row = re.search(rf'<tr id="draft-{mails["support_am"]}".*?</tr>', html, re.S).group(0)
        assert "2026-12-04 14:00" in row  # Berlin time
        now = db.fetchone("SELECT UTC_TIMESTAMP() AS n")["n"]
        for key, draft_id in mails.items():
            row = re.search(rf'<tr id="draft-{draft_id}".*?</tr>', html, re.S).group(0)
            due = due_of(db, draft_id)["due_at"]
            assert ("overdue" in row) == (due < now), key
        assert 'value="due" selected' in html
        # the draft page names the due time too
        page = c.get(f"/drafts/{mails['support_am']}?sort=due").text
        assert 'id="due"' in page and "1 of 4" in page


def test_a_mail_due_later_is_not_marked_overdue(settings, db):
    """A mail sent a minute ago to a 24/7 mailbox with a 1 h target is due in about an hour."""
    now = db.fetchone("SELECT UTC_TIMESTAMP() AS n")["n"]
    draft = waiting(db, "sales", now.strftime("%Y-%m-%d %H:%M:%S"), "fresh")
    settings.mailboxes = boxes()
    app = web_app(settings, db, PEOPLE)
    from tests.webutil import browsers

    with browsers(app, log_in=True) as new:
        html = new("root").get("/queue").text
        row = re.search(rf'<tr id="draft-{draft}".*?</tr>', html, re.S).group(0)
        assert 'class="due' in row and "overdue" not in row
