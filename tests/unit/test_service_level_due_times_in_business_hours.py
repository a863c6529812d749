"""Service levels: the due time of a first response counts only business hours of the
mailbox's own time zone, working days and holidays (email_rag/core/service_levels.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest

from email_rag.core.service_levels import BusinessHours, due_at
from email_rag.core.settings import MailboxConfig

BERLIN = BusinessHours("Europe/Berlin", frozenset(range(5)), time(8), time(17),
                       timedelta(hours=4))


def utc(*a: int) -> datetime:
    return datetime(*a, tzinfo=UTC)


def test_mail_inside_hours_is_due_after_the_target_the_same_day():
    """Wed 2026-12-02 10:00 Berlin (09:00 UTC) + 4 h -> 14:00 Berlin (13:00 UTC)."""
    assert due_at(utc(2026, 12, 2, 9), BERLIN) == utc(2026, 12, 2, 13)


def test_the_target_carries_over_the_evening_into_the_next_morning():
    """Wed 15:00 Berlin: 2 h left today (until 17:00), 2 h on Thursday from 08:00."""
    assert due_at(utc(2026, 12, 2, 14), BERLIN) == utc(2026, 12, 3, 9)  # Thu 10:00 Berlin


def test_mail_arriving_overnight_counts_from_the_next_opening():
    """Thu 23:30 Berlin and Fri 03:00 Berlin both count from Fri 08:00 -> Fri 12:00."""
    assert due_at(utc(2026, 12, 3, 22, 30), BERLIN) == utc(2026, 12, 4, 11)
    assert due_at(utc(2026, 12, 4, 2), BERLIN) == utc(2026, 12, 4, 11)


def test_the_weekend_is_skipped():
    """Fri 16:00 Berlin: 1 h on Friday, 3 h on Monday -> Mon 11:00 Berlin; a mail on
    Saturday counts from Monday 08:00."""
    assert due_at(utc(2026, 12, 4, 15), BERLIN) == utc(2026, 12, 7, 10)
    assert due_at(utc(2026, 12, 5, 12), BERLIN) == utc(2026, 12, 7, 11)


def test_a_holiday_is_skipped_like_a_weekend():
    hours = BusinessHours("Europe/Berlin", frozenset(range(5)), time(8), time(17),
                          timedelta(hours=4), frozenset({date(2026, 12, 24),
                                                         date(2026, 12, 25)}))
    # Wed 23 Dec 16:00 Berlin: 1 h, then Thu and Fri are holidays, weekend -> Mon 28, 11:00
    assert due_at(utc(2026, 12, 23, 15), hours) == utc(2026, 12, 28, 10)


def test_the_clock_change_in_spring_and_autumn():
    """Working hours are local: in March the opening moves from 07:00 to 06:00 UTC, in
    October back to 07:00 UTC, and a target across the change keeps its business length."""
    # Fri 27 Mar 2026 16:00 CET (15:00 UTC): 1 h Friday, 3 h Monday 30 Mar from 08:00 CEST
    assert due_at(utc(2026, 3, 27, 15), BERLIN) == utc(2026, 3, 30, 9)
    # Fri 23 Oct 2026 16:00 CEST (14:00 UTC): 1 h Friday, 3 h Monday 26 Oct from 08:00 CET
    assert due_at(utc(2026, 10, 23, 14), BERLIN) == utc(2026, 10, 26, 10)


def test_a_day_with_the_clock_change_inside_the_working_hours_is_as_long_as_the_clock_says():
    """Around the clock on Sunday 29 Mar 2026 (the hour 02:00-03:00 does not exist): a
    24/7 mailbox's 24 business hours from Sat 12:00 end Sun 13:00 local (23 real hours)."""
    always = BusinessHours("Europe/Berlin", frozenset(range(7)), time(0), time(0),
                           timedelta(hours=24))
    # Sat 28 Mar 12:00 CET = 11:00 UTC; due Sun 11:00 UTC = 13:00 CEST: 24 real hours
    assert due_at(utc(2026, 3, 28, 11), always) == utc(2026, 3, 29, 11)


def test_a_mail_exactly_at_closing_time_counts_from_the_next_opening():
    assert due_at(utc(2026, 12, 2, 16), BERLIN) == utc(2026, 12, 3, 11)  # Thu 12:00 Berlin


def test_a_naive_time_is_read_as_utc():
    assert due_at(datetime(2026, 12, 2, 9), BERLIN) == utc(2026, 12, 2, 13)


def test_the_mailbox_setting_reads_days_hours_and_holidays():
    box = MailboxConfig.model_validate({
        "name": "support", "username": "u", "service_level": {
            "time_zone": "America/New_York", "days": "mon-thu", "hours": "09:00-17:30",
            "first_response_hours": 2, "holidays": ["2026-12-25"]}})
    hours = box.service_level.business_hours()
    assert hours.days == frozenset({0, 1, 2, 3})
    assert (hours.start, hours.end) == (time(9), time(17, 30))
    assert hours.target == timedelta(hours=2) and date(2026, 12, 25) in hours.holidays
    # Thu 3 Dec 17:00 New York (22:00 UTC): 30 min Thursday, then Mon 7 Dec 09:00 + 1.5 h
    assert due_at(utc(2026, 12, 3, 22), hours) == utc(2026, 12, 7, 15, 30)
    assert box.service_level.fingerprint != MailboxConfig.model_validate({
        "name": "support", "username": "u", "service_level": {
            "time_zone": "America/New_York", "days": "mon-thu", "hours": "09:00-17:30",
            "first_response_hours": 3}}).service_level.fingerprint


@pytest.mark.parametrize("bad", [
    {"time_zone": "Mars/Olympus"}, {"days": ""}, {"days": "mon-xyz"},
    {"hours": "17:00-08:00"}, {"hours": "8-17"}, {"first_response_hours": 0},
])
def test_a_wrong_service_level_is_refused_when_the_settings_are_read(bad):
    with pytest.raises(ValueError):
        MailboxConfig.model_validate({"name": "s", "username": "u", "service_level": {
            "first_response_hours": 4, **bad}})
