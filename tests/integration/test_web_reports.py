"""The reports page (issue 28): first-response time, time to send, and the drafts approved
unchanged / edited / rejected, per agent, mailbox and week, aggregated in MariaDB from the
review figures (draft_reviews) and the sends; admins only."""

from __future__ import annotations

import html as htmllib
import re
from datetime import UTC, datetime

from email_rag.db import figures
from tests.factories import make_draft, make_email, make_mailbox

PEOPLE = {"anna": "staff", "bob": "staff", "root": "admin"}
TEXT = "Dear Alice,\n\nplease restart it.\n"


def post(c, path: str, **data: str) -> None:
    r = c.post(path, data={"csrf_token": c.csrf, **data}, follow_redirects=False)
    assert r.status_code == 303, r.text[:500]


def waiting_draft(db, mailbox_id: int, hours_ago: int) -> int:
    """A mail the customer sent ``hours_ago`` hours ago with a pending draft."""
    email_id = make_email(db, mailbox_id, reply_addr="alice@customer.example",
                          reply_rule="from")
    db.execute("UPDATE emails SET sent_at = UTC_TIMESTAMP() - INTERVAL %s HOUR,"
               " received_at = UTC_TIMESTAMP() - INTERVAL %s HOUR WHERE id = %s",
               (hours_ago, hours_ago, email_id))
    return make_draft(db, email_id, body=TEXT)


def relay_accepted(db, draft_id: int, minutes_after_approval: int) -> None:
    """What the sender writes once the relay accepted the reply."""
    db.execute("UPDATE send_attempts s JOIN drafts d ON d.id = s.draft_id SET s.status = 'sent',"
               " s.sent_at = d.approved_at + INTERVAL %s MINUTE WHERE s.draft_id = %s",
               (minutes_after_approval, draft_id))


def cells(page: str, table: str) -> list[list[str]]:
    found = re.search(rf'<table class="list {table}">(.*?)</table>', page, re.S)
    assert found, f"no {table} table"
    rows = [[" ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", td)).split())
             for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S)]
    return [r for r in rows if r]  # the head's row has no <td>


def test_reports_per_agent_mailbox_and_week(client, db):
    """GIVEN anna approves one draft unchanged and one after rewriting it, bob rejects one,
    and the relay accepted anna's replies 2 and 4 minutes after approval, the customers
    having written 3 and 5 hours before WHEN root opens the reports by agent THEN anna's row
    counts exactly her decisions (one unchanged, one edited), her replies' median first
    response 4 h 03 min and time to send 3 min; bob's row says 1 rejected; by mailbox the same
    decisions on one row; staff get 403."""
    mb = make_mailbox(db, "support")
    a1, a2, b1 = (waiting_draft(db, mb, h) for h in (3, 5, 1))
    anna, bob = client("anna"), client("bob")
    post(anna, f"/drafts/{a1}/approve", body=TEXT)
    post(anna, f"/drafts/{a2}/approve", body="Hello, a whole new answer written by hand.")
    post(bob, f"/drafts/{b1}/reject", reason="wrong customer")
    relay_accepted(db, a1, 2)
    relay_accepted(db, a2, 4)
    week = "{}-W{:02d}".format(*datetime.now(UTC).isocalendar()[:2])

    root = client("root")
    by_agent = {tuple(r[:2]): r[2:] for r in cells(root.get("/reports?by=agent").text,
                                                    "reports")}
    # week, agent -> decided, unchanged, edited, rejected, regenerated, sent,
    #                first response p50, mean, time to send p50, due met
    assert by_agent[(week, "anna")][:6] == ["2", "1", "1", "0", "0", "2"]
    # median of 3 h + 2 min and 5 h + 4 min (the customer's Date to the relay's acceptance)
    assert by_agent[(week, "anna")][6] == "4 h 03 min"
    assert by_agent[(week, "anna")][8] == "3 min"  # median of 2 and 4 min
    assert by_agent[(week, "bob")][:6] == ["1", "0", "0", "1", "0", "0"]
    by_mailbox = {tuple(r[:2]): r[2:] for r in cells(root.get("/reports?by=mailbox").text,
                                                      "reports")}
    assert by_mailbox[(week, "support")][:6] == ["3", "1", "1", "1", "0", "2"]
    by_week = {r[0]: r[1:] for r in cells(root.get("/reports?by=week").text, "reports")}
    assert by_week[week][:6] == ["3", "1", "1", "1", "0", "2"]
    assert anna.get("/reports").status_code == 403


def test_the_report_is_a_few_grouped_reads_over_the_weeks_asked_for(db):
    """The figures module answers the report from its rows (no second computation): the
    decisions of earlier weeks than asked for are not read."""
    mb = make_mailbox(db, "support")
    draft = waiting_draft(db, mb, 1)
    db.execute("UPDATE drafts SET approved_by = 'user:anna' WHERE id = %s", (draft,))
    with db.transaction() as cur:
        figures.draft_decided(cur, draft, figures.ReviewOutcome.UNCHANGED, 0.0, "user:anna")
    db.execute("UPDATE draft_reviews SET week = week - INTERVAL 10 WEEK")
    assert figures.report(db, weeks=8, by="agent") == []
    rows = figures.report(db, weeks=12, by="agent")
    assert [(r.agent, r.figures.decided) for r in rows] == [("anna", 1)]
