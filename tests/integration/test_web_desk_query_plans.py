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


def _search_params(**kw):
    from email_rag.review.desk import QueueQuery

    return {**QueueQuery(search="Rechnung").params(None), "after_key": None, "after_id": 0,
            "before_key": b"\xff", "before_id": 0, "limit": 50, "at_key": None, "at_id": 0,
            "cap": 1001, **kw}


def _seed_queue(db):
    from tests.factories import make_draft

    mb = make_mailbox(db)
    for i in range(30):
        make_draft(db, make_email(db, mb, subject=f"Rechnung {i}", body=f"Lieferung {i}"))


def test_a_narrow_queue_search_starts_from_the_fulltext_result(db):
    """A search for a customer or an order number: the page and the count start from the
    FULLTEXT index's result and find each mail's waiting drafts by ix_rqk_email - never
    the whole sort index probed (at 100,000 drafts 189 ms a page that way)."""
    _seed_queue(db)
    for name in ("desk_queue_search_page", "desk_queue_search_page_before",
                 "desk_queue_search_count"):
        plan = db.fetchall("EXPLAIN " + sql(name), _search_params())
        rows = [p for p in plan if p["table"] in ("f", "q")]
        assert [(p["table"], p["type"]) for p in rows] == [("f", "fulltext"), ("q", "ref")], plan
        assert rows[1]["key"] == "ix_rqk_email", plan


def test_a_broad_queue_search_walks_the_sort_index_and_tests_each_mail(db):
    """A word in most mails: the page walks the sort index in order and tests each row's mail,
    read by its primary key, with the search's pattern - the FULLTEXT index is no access
    path (that reads every matching mail's row first: 3.5 s a page at 100,000) and not
    asked at all (70-120 ms per statement for such a word)."""
    _seed_queue(db)
    for name in ("desk_queue_broad_page", "desk_queue_broad_page_before",
                 "desk_queue_broad_count"):
        plan = db.fetchall("EXPLAIN " + sql(name), _search_params(at_key=b"\xff"))
        rows = [p for p in plan if p["table"] in ("f", "q")]
        assert [(p["table"], p["type"]) for p in rows] == [("q", "ref"), ("f", "eq_ref")] or \
            [(p["table"], p["type"]) for p in rows] == [("q", "range"), ("f", "eq_ref")], plan
        assert rows[0]["key"] == "PRIMARY" and rows[1]["key"] == "PRIMARY", plan
        assert "filesort" not in str(rows[0]["Extra"]), plan
        assert "MATCH" not in sql(name), name


def test_the_queue_count_tests_no_subquery_per_draft(db):
    """The queue's count ("x of N" on every queue and draft page) reads the sort index once;
    the filters' subqueries (snoozed, mine, unassigned, ...) are each read once, never once
    per draft: the snoozed test per draft took 90 of the count's 130 ms at 100,000."""
    from email_rag.review.desk import QueueQuery

    _seed_queue(db)
    for view in ("all", "snoozed", "mine", "unassigned"):
        params = {**QueueQuery(view=view).params(None), "at_key": b"x", "at_id": 1,
                  "after_key": None, "after_id": 0, "before_key": b"\xff", "before_id": 0,
                  "limit": 50}
        for name in ("desk_queue_count", "desk_queue_page", "desk_queue_page_before"):
            plan = db.fetchall("EXPLAIN " + sql(name), params)
            assert not [p for p in plan if p["select_type"] == "DEPENDENT SUBQUERY"], (
                view, name, plan)


def test_a_search_reaches_the_drafts_of_each_found_mail_by_its_mail_at_10000_drafts(db):
    """At `bench web`'s 10,000 drafts (its own fill, a word in 95 % of the mails) MariaDB
    joined the found mails to the sort index by the sort's prefix of the primary key (20,000
    rows per found mail): the capped count of a broad search took 1.8 s. Each found mail's
    drafts are read by `ix_rqk_email`, whatever the table's statistics."""
    from email_rag_harness.bench import web as bench_web

    from email_rag.core.settings import MailboxConfig
    from email_rag.review import service_levels

    bench_web.fill(db, 10_000)
    service_levels.compute(db, [MailboxConfig.model_validate(b) for b in bench_web.MAILBOXES],
                           limit=10_000)
    plan = db.fetchall("EXPLAIN " + sql("desk_queue_search_count"), _search_params())
    q = next(p for p in plan if p["table"] == "q")
    assert q["key"] == "ix_rqk_email", plan
