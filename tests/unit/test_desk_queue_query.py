"""The review queue's filters read from request parameters (``queue.query_of``): the one
reading the queue page, the draft page and the draft's actions share."""

from __future__ import annotations

from urllib.parse import parse_qsl

from email_rag.review import queue, saved_views
from email_rag.review.queue import QueueQuery

EVERY = {"mailbox": "support", "category": "billing", "q": "Rechnung 4711", "sort": "due",
         "view": "mine", "state": "stale", "owner": "bob", "since": "2026-11-10",
         "until": "2026-11-20"}


def test_every_filter_is_read_and_written_back_the_same():
    """GIVEN every filter the queue has WHEN read from parameters THEN each lands in the
    record, and its links' parameters are the same ones again (nothing dropped on the way
    from the queue to the draft page and back)."""
    query = queue.query_of(EVERY, me=7, zone="Europe/Berlin")
    assert query == QueueQuery("support", "billing", "Rechnung 4711", "due", "mine", 7,
                               "stale", "bob", "2026-11-10", "2026-11-20", "Europe/Berlin")
    assert query.url_params() == EVERY
    assert set(EVERY) == set(queue.FILTER_KEYS)


def test_defaults_unknown_values_and_other_keys():
    """Missing filters are the whole queue; unknown sorts, views, states and days fall back;
    other keys and non-text values (a form's file) are ignored; text is trimmed and capped."""
    assert queue.query_of({}, me=1) == QueueQuery(me=1)
    odd = queue.query_of({"sort": "evil", "view": "x", "state": "sent", "since": "gestern",
                         "csrf_token": "t", "body": "text", "mailbox": object(),
                         "q": "  " + "x" * 300, "owner": " " + "b" * 150}, me=1)
    assert (odd.sort, odd.view, odd.state, odd.since, odd.mailbox) == ("waiting", "all", "",
                                                                       "", "")
    assert odd.search == "x" * queue.MAX_SEARCH and odd.owner == "b" * queue.MAX_OWNER


def test_a_saved_view_keeps_exactly_the_filters():
    kept = saved_views.clean_query({**EVERY, "after": "00-1", "csrf_token": "t"})
    assert dict(parse_qsl(kept)) == EVERY
