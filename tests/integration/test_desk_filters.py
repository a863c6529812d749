"""The queue's filters beyond mailbox and category (real MariaDB): the draft's state
(waiting, stale, flagged), the owner, and the waiting-since days in the user's time zone;
with the count, the pages and the user's mailboxes as before."""

from __future__ import annotations

from datetime import datetime

import pytest

from email_rag.review import assignment
from email_rag.review import queue as desk_queue
from email_rag.review.queue import QueueQuery
from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}




@pytest.fixture
def queue(app, db, team, services):
    support, sales = team
    mk = lambda subject, day: make_draft(db, make_email(  # noqa: E731
        db, support, subject=subject, received_at=datetime(2026, 11, day, 12),
        sent_at=datetime(2026, 11, day, 9)))
    old, stale, flagged = mk("Alt", 2), mk("Veraltet", 10), mk("Markiert", 20)
    late_evening = make_draft(db, make_email(db, support, subject="Spaet",
                                             received_at=datetime(2026, 11, 20, 23, 30)))
    db.execute("UPDATE drafts SET status = 'stale' WHERE id = %s", (stale,))
    db.execute("UPDATE drafts SET check_flags = %s WHERE id = %s",
               ('["unsupported claim"]', flagged))
    email_of = db.fetchone("SELECT email_id FROM drafts WHERE id = %s", (old,))["email_id"]
    assignment.assign(services, email_of, support, "bob", "user:root")
    foreign = make_draft(db, make_email(db, sales, subject="Sales",
                                        received_at=datetime(2026, 11, 20, 12)))
    return {"old": old, "stale": stale, "flagged": flagged, "late": late_evening,
            "foreign": foreign, "support": support}


def _ids(services, scope=None, **filters) -> list[int]:
    page = desk_queue.queue_page(services, scope, QueueQuery(**filters))
    assert page.total == len(page.rows)
    return sorted(r.id for r in page.rows)


def test_the_queue_filters_by_state_owner_and_days(services, queue):
    """GIVEN waiting drafts of 2, 10 and 20 November (one stale, one flagged, one owned by
    bob) and one that arrived at 23:30 UTC on the 20th (the 21st in Berlin) THEN each filter
    keeps exactly its drafts, and the days are the user's: the 20th in Berlin excludes the
    late one, in UTC it includes it; the mailbox scope still holds."""
    support = frozenset({queue["support"]})
    assert _ids(services, support, state="stale") == [queue["stale"]]
    assert _ids(services, support, state="flagged") == [queue["flagged"]]
    assert _ids(services, support, state="pending_review") == sorted(
        [queue["old"], queue["flagged"], queue["late"]])
    assert _ids(services, support, owner="bob") == [queue["old"]]
    assert _ids(services, support, since="2026-11-10", until="2026-11-20",
                zone="Europe/Berlin") == sorted([queue["stale"], queue["flagged"]])
    assert _ids(services, support, since="2026-11-20", until="2026-11-20",
                zone="UTC") == sorted([queue["flagged"], queue["late"]])
    assert _ids(services, None, since="2026-11-20", until="2026-11-20", zone="UTC") == sorted(
        [queue["flagged"], queue["late"], queue["foreign"]])
    assert _ids(services, support, state="nonsense", since="gestern") == sorted(
        [queue["old"], queue["stale"], queue["flagged"], queue["late"]])


def test_the_filters_over_http_keep_their_values_in_links(client, queue):
    anna = client("anna")
    page = anna.get("/queue", params={"state": "stale", "owner": "", "since": "2026-11-01"}).text
    assert f'id="draft-{queue["stale"]}"' in page and f'id="draft-{queue["old"]}"' not in page
    assert 'id="queue-total">1<' in page
    assert 'value="stale" selected' in page and 'value="2026-11-01"' in page
    assert "state=stale" in page and "since=2026-11-01" in page  # the links keep them
    bob = anna.get("/queue", params={"owner": "bob"}).text
    assert f'id="draft-{queue["old"]}"' in bob and 'id="queue-total">1<' in bob
    carl = client("carl").get("/queue", params={"since": "2026-11-20",
                                                 "until": "2026-11-20"}).text
    assert f'id="draft-{queue["foreign"]}"' in carl and f'id="draft-{queue["flagged"]}"' not in carl
