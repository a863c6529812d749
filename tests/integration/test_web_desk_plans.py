"""Query plans the desk's speed at 100,000 mails rests on (`bench web`, docs/web.md "Speed"):
checked with EXPLAIN on the real MariaDB, so a dropped index fails here and not only in a
benchmark."""

from __future__ import annotations

from email_rag.db import sql
from tests.factories import make_email, make_mailbox


def test_the_queue_filters_categories_come_from_an_index_not_from_every_mail(db):
    """The category list of the queue's filter (SELECT DISTINCT category) reads an index: at
    100,000 mails a scan of the mails' rows took 800 ms of every queue page."""
    mb = make_mailbox(db)
    for category in ("billing", "order", "technical"):
        make_email(db, mb, category=category)
    plan = db.fetchall("EXPLAIN " + sql("web_categories"))
    assert [p["key"] for p in plan] == ["ix_email_category"], plan
    assert "Using index" in plan[0]["Extra"], plan


def test_the_reports_replies_are_read_from_the_sends_of_the_weeks_asked_for(db):
    """The reports page's reply times start from send_attempts (by sent_at), never from the
    mailboxes and every mail behind them (a plan MariaDB chose at 100,000 mails: 2-3 s)."""
    plan = db.fetchall("EXPLAIN " + sql("figures_replies_report"),
                       {"weeks": 8, "by_mailbox": True, "by_agent": False})
    tables = [p["table"] for p in plan if not str(p["table"]).startswith("<")]
    assert tables[:4] == ["s", "d", "e", "m"], plan
