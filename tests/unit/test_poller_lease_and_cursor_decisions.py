"""The poller's decisions on a mailbox row and a folder cursor (pure: no database)."""

from datetime import datetime, timedelta

import pytest

from email_rag.ingest.mailbox_state import (
    CursorAction,
    FolderCursor,
    Mailbox,
    cursor_start,
    refusal,
)

NOW = datetime(2026, 3, 1, 12, 0, 0)


def mailbox(**row) -> Mailbox:
    return Mailbox.from_row({"id": 3, "name": "support", "db_now": NOW, **row})


def test_from_row_converts_columns_and_ignores_unnamed_ones():
    mb = Mailbox.from_row({"id": 3, "name": "support", "consecutive_failures": 2,
                           "needs_attention": 1, "address": "x@example.com", "raw": b"big"})
    assert (mb.id, mb.consecutive_failures, mb.needs_attention) == (3, 2, True)
    with pytest.raises(AttributeError):
        mb.consecutive_failures = 0  # type: ignore[misc]


def test_failed_and_recovered_return_new_records_and_keep_the_original():
    mb = mailbox(consecutive_failures=1, needs_attention=1, failing_since=NOW)
    assert mb.failed(2).consecutive_failures == 2 and mb.consecutive_failures == 1
    ok = mb.recovered()
    assert (ok.consecutive_failures, ok.needs_attention, ok.failing_since) == (0, False, None)
    assert ok.name == "support" and mb.needs_attention


def test_refused_lease_is_backoff_when_free_and_waiting():
    until = NOW + timedelta(seconds=30)
    r = refusal(mailbox(backoff_until=until), force=False)
    assert (r.got, r.why, r.backoff_until, r.holder) == (False, "backoff", until, None)


def test_refused_lease_is_busy_when_someone_holds_it_even_in_backoff():
    r = refusal(mailbox(backoff_until=NOW + timedelta(seconds=30), lease_owner="h:1:a",
                        lease_until=NOW + timedelta(seconds=60)), force=False)
    assert (r.why, r.holder) == ("busy", "h:1:a")


def test_an_expired_lease_counts_as_free():
    r = refusal(mailbox(backoff_until=NOW + timedelta(seconds=5), lease_owner="h:1:a",
                        lease_until=NOW - timedelta(seconds=1)), force=False)
    assert r.why == "backoff"


def test_forced_or_past_backoff_refusal_is_busy():
    assert refusal(mailbox(backoff_until=NOW + timedelta(seconds=5)), force=True).why == "busy"
    assert refusal(mailbox(backoff_until=NOW - timedelta(seconds=5)), force=False).why == "busy"


def test_lease_expired_reads_the_database_clock():
    assert mailbox().lease_expired
    assert mailbox(lease_until=NOW - timedelta(microseconds=1)).lease_expired
    assert not mailbox(lease_until=NOW + timedelta(seconds=1)).lease_expired


def test_a_folder_without_cursor_starts_at_zero_and_creates_it():
    start = cursor_start(None, 77)
    assert (start.action, start.last_uid) == (CursorAction.NEW, 0)


def test_same_uidvalidity_continues_above_the_cursor():
    start = cursor_start(FolderCursor.from_row({"uidvalidity": 77, "last_uid": 41}), 77)
    assert (start.action, start.last_uid) == (CursorAction.CONTINUE, 41)


def test_changed_uidvalidity_resets_the_cursor():
    start = cursor_start(FolderCursor.from_row({"uidvalidity": 77, "last_uid": 41}), 78)
    assert (start.action, start.last_uid) == (CursorAction.RESET, 0)


def test_cursor_columns_are_integers_whatever_the_driver_returns():
    c = FolderCursor.from_row({"uidvalidity": "77", "last_uid": None})
    assert (c.uidvalidity, c.last_uid) == (77, 0)
    assert cursor_start(c, 77).action == CursorAction.CONTINUE
