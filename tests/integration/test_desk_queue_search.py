"""The queue's search (real MariaDB): what it lists is exactly the queue without the search,
restricted to the mails the FULLTEXT index finds - same drafts, same order, same pages
through the keyset cursors, same "x of N" and neighbours, within the user's mailboxes -
whether the search is narrow (driven by the index's result) or broad (more matches than
the count's cap: the sort order is walked and each mail tested against the index)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from email_rag.db import sql
from email_rag.review import assignment, queue
from email_rag.review.queue import QueueQuery, fulltext_query
from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}
WORDS = ("Rechnung", "Lieferung", "Drucker", "Passwort", "Gutschrift")
PRIORITIES = ("low", "normal", "high", "urgent")


@pytest.fixture
def seeded(app, db, team, services):
    """40 waiting drafts in support and sales (random words, priorities, categories and
    days; some assigned, one stale), mails already answered with the same words (never
    listed), and the word Anfrage in every mail of the database."""
    rnd = random.Random(5)
    support, sales = team
    start = datetime(2026, 11, 1, 8)
    drafts = {}
    for i in range(40):
        words = " ".join(rnd.choice(WORDS) for _ in range(3))
        at = start + timedelta(hours=rnd.randrange(300))
        email = make_email(db, support if i % 3 else sales, subject=f"Anfrage {4700 + i}",
                           body=f"Guten Tag, {words}. Gruss", from_addr=f"kunde{i % 7}@x.example",
                           received_at=at, sent_at=at - timedelta(minutes=i % 4),
                           priority=rnd.choice(PRIORITIES),
                           category=rnd.choice(("billing", "order")))
        drafts[make_draft(db, email)] = email
        if i % 4 == 1 and i % 3:
            assignment.assign(services, email, support, "bob", "user:root")
    stale = next(iter(drafts))
    db.execute("UPDATE drafts SET status = 'stale' WHERE id = %s", (stale,))
    for i in range(10):  # answered: the index finds them, the queue does not list them
        make_email(db, support, status="sent", subject="Anfrage alt",
                   body=f"Rechnung Lieferung {i}", received_at=start)
    return frozenset({support})


def _reference(services, db, scope, query: QueueQuery) -> list[int]:
    """The queue without the search, in its order, keeping the drafts whose mail the
    FULLTEXT index finds for the search."""
    everything = queue.queue_page(services, scope, QueueQuery(**{
        **query.__dict__, "search": ""}), limit=10_000).rows
    found = {int(r["id"]) for r in db.fetchall(
        "SELECT id FROM emails WHERE MATCH(subject, from_addr, from_name, body_text) "
        "AGAINST (%(q)s IN BOOLEAN MODE)", {"q": fulltext_query(query.search)})}
    return [r.id for r in everything if r.email_id in found]


def _walk(services, scope, query: QueueQuery, limit: int):
    """Every page forward from the start through next_cursor, then back through
    prev_cursor: (forward ids, backward pages' ids, first positions, totals)."""
    pages, after = [], None
    while True:
        pg = queue.queue_page(services, scope, query, after=after, limit=limit)
        pages.append(pg)
        if pg.next_cursor is None:
            break
        after = pg.next_cursor
    back, before = [], pages[-1].prev_cursor
    while before is not None:
        pg = queue.queue_page(services, scope, query, before=before, limit=limit)
        back.insert(0, [r.id for r in pg.rows])
        before = pg.prev_cursor
    return pages, back


CASES = [dict(search="Rechnung"), dict(search="Drucker Gutschrift", sort="priority"),
         dict(search="kunde3", sort="mailbox"), dict(search="Anfrage", sort="due"),
         dict(search="Lieferung", category="billing"), dict(search="Passwort", view="unassigned"),
         dict(search="Rechnung", owner="bob"), dict(search="4712"),
         dict(search="Anfrage", state="stale")]


@pytest.mark.parametrize("cap", [1000, 5], ids=["narrow", "broad"])
def test_a_searched_queue_is_the_queue_restricted_to_the_mails_the_index_finds(
        services, db, seeded, monkeypatch, cap):
    """GIVEN the seeded queue WHEN it is searched (each sort, with filters, for staff of
    support and for an admin), paged 3 at a time forward and back THEN the drafts, their
    order, every page, the first positions and the total equal the unsearched queue
    restricted to the index's matches; with a count cap below the matches (broad) the total
    says "more than the cap" and the pages are still the same."""
    monkeypatch.setattr(queue, "COUNT_CAP", cap)
    for case in CASES:
        for scope in (seeded, None):
            query = QueueQuery(**case)
            expected = _reference(services, db, scope, query)
            pages, back = _walk(services, scope, query, 3)
            assert [r.id for pg in pages for r in pg.rows] == expected, case
            assert [r.id for pg in pages[:len(back)] for r in pg.rows] == [
                i for b in back for i in b], case
            capped = len(expected) > cap
            for n, pg in enumerate(pages):
                assert pg.capped == capped, case
                assert pg.total == (cap if capped else len(expected)), case
                position = 1 + 3 * n
                assert pg.first_position == (position if position <= cap else None), case


@pytest.mark.parametrize("cap", [1000, 5], ids=["narrow", "broad"])
def test_a_drafts_place_in_a_searched_queue_is_its_place_in_the_restricted_queue(
        services, db, seeded, monkeypatch, cap):
    """The draft page's "x of N", Next and Previous under a search: the neighbours in the
    restricted queue (Next after the last wraps to the first); a draft the search does not
    find is "not in this queue"."""
    monkeypatch.setattr(queue, "COUNT_CAP", cap)
    query = QueueQuery(search="Rechnung", sort="priority")
    expected = _reference(services, db, seeded, query)
    assert len(expected) > 5
    for i, draft_id in enumerate(expected):
        where = queue.position(services, seeded, query, draft_id)
        assert where.position == (i + 1 if i + 1 <= cap else None), draft_id
        assert where.total == min(len(expected), cap)
        assert where.capped == (len(expected) > cap)
        assert where.next_id == (expected[i + 1] if i + 1 < len(expected) else expected[0])
        assert where.prev_id == (expected[i - 1] if i else None)
    missing = next(d for d in queue.queue_page(services, seeded, QueueQuery(), limit=100).rows
                   if d.id not in expected)
    where = queue.position(services, seeded, query, missing.id)
    assert where.position is None and not where.listed and where.next_id == expected[0]


def test_a_broad_search_over_http_says_more_than_the_cap(client, seeded, monkeypatch):
    """The queue's count for a broad search: "more than 5" (English) and "mehr als 5"
    (German), never a number presented as exact."""
    monkeypatch.setattr(queue, "COUNT_CAP", 5)
    anna = client("anna")
    page = anna.get("/queue", params={"q": "Anfrage"}).text
    assert 'id="queue-total">more than 5<' in page
    assert "of more than 5" in page
    anna.post("/me", data={"ui_language": "de", "time_zone": "UTC", "csrf_token": anna.csrf})
    page = anna.get("/queue", params={"q": "Anfrage"}).text
    assert 'id="queue-total">mehr als 5<' in page


def test_the_non_search_queries_do_not_search():
    """The queue's queries without a search take no search parameter: the search has its
    own variants (the index's result joined to the sort index, or the sort order walked)."""
    for name in ("desk_queue_page", "desk_queue_page_before", "desk_queue_count"):
        assert "MATCH" not in sql(name) and "%(search)s" not in sql(name)


def _statements(services, monkeypatch) -> list[str]:
    """Every statement the desk sends through ``services.db`` from now on."""
    sent: list[str] = []
    for name in ("fetchone", "fetchall"):
        real = getattr(services.db, name)

        def recording(query, params=None, _real=real):
            sent.append(query)
            return _real(query, params)

        monkeypatch.setattr(services.db, name, recording)
    return sent


def test_a_broad_search_never_asks_the_fulltext_index(services, db, seeded, monkeypatch):
    """A word in most mails: the FULLTEXT index evaluates such a word in 70-120 ms per
    statement however it is used (at 100,000 drafts), so neither the choice of the plan nor
    the page, the count up to a draft or the draft page's neighbours ask it - each row's
    mail is tested by the search's word pattern, the same rows the index finds."""
    monkeypatch.setattr(queue, "COUNT_CAP", 5)
    query = QueueQuery(search="Anfrage", sort="priority")
    expected = _reference(services, db, seeded, query)
    assert len(expected) > 10
    sent = _statements(services, monkeypatch)
    pages, back = _walk(services, seeded, query, 3)
    where = queue.position(services, seeded, query, expected[7])
    assert [r.id for pg in pages for r in pg.rows] == expected
    assert pages[0].capped and where.position is None and where.listed
    searched = [s for s in sent if "review_queue_keys" in s]
    assert searched and not [s for s in searched if "MATCH" in s], searched


def test_a_narrow_search_asks_the_fulltext_index_twice_a_first_page(services, db, seeded,
                                                                     monkeypatch):
    """A customer or an order number: the capped count that chose the plan is the page's
    total and the first row's place (1), so the index is asked for the count and the
    page only - the first 100 listed drafts tested by the pattern (is the word in most
    mails?) cost no more than the count they replace."""
    query = QueueQuery(search="kunde3")
    expected = _reference(services, db, seeded, query)
    assert 0 < len(expected) < queue.COUNT_CAP
    sent = _statements(services, monkeypatch)
    page = queue.queue_page(services, seeded, query)
    assert [r.id for r in page.rows] == expected and page.first_position == 1
    assert page.total == len(expected) and not page.capped
    searched = [s for s in sent if "%(search)s" in s or "%(pattern)s" in s]
    assert len([s for s in searched if "MATCH" in s]) == 2, searched
    assert len(searched) == 3, searched  # before the pattern: count, page, count
