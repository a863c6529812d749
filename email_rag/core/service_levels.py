"""Service levels: when a mail's first response is due, counting only business hours.

A mailbox's business hours are local: its time zone, its working days, one window of
working hours a day (the same every working day; ``end`` 00:00 means midnight at the end
of the day) and holidays. The target is business time: 4 hours from Friday 16:00 with
hours 08:00-17:00 is Monday 11:00. Each day's window is turned into UTC instants through
the time zone, so a clock change moves the window's UTC position, and a window that
contains the change is as long as the clock says (23 or 25 hours for a whole day).

Pure computation: no I/O, no clock; times in and out are UTC (a naive time is read as
UTC, as MariaDB returns them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MAX_DAYS = 800  # a target no calendar of working days can reach in this long is refused


@dataclass(frozen=True)
class BusinessHours:
    time_zone: str  # IANA name, e.g. Europe/Berlin
    days: frozenset[int]  # working weekdays, 0 = Monday
    start: time  # opening, local
    end: time  # closing, local; 00:00 = the end of the day
    target: timedelta  # first response within this much business time
    holidays: frozenset[date] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        ZoneInfo(self.time_zone)  # unknown zone: ZoneInfoNotFoundError (a KeyError)
        if not self.days or not self.days <= set(range(7)):
            raise ValueError("service level: at least one working day (0-6)")
        if self.end != time(0) and self.end <= self.start:
            raise ValueError("service level: the working hours must end after they start")
        if self.target <= timedelta(0):
            raise ValueError("service level: the first-response target must be positive")

    def window(self, day: date) -> tuple[datetime, datetime] | None:
        """The day's working hours as UTC instants (None: not a working day)."""
        if day.weekday() not in self.days or day in self.holidays:
            return None
        zone = ZoneInfo(self.time_zone)
        opens = datetime.combine(day, self.start, zone)
        closes = (datetime.combine(day + timedelta(days=1), time(0), zone)
                  if self.end == time(0) else datetime.combine(day, self.end, zone))
        return opens.astimezone(UTC), closes.astimezone(UTC)


def due_at(arrived: datetime, hours: BusinessHours) -> datetime:
    """When the first response to a mail that arrived at ``arrived`` is due (UTC)."""
    at = arrived.replace(tzinfo=UTC) if arrived.tzinfo is None else arrived.astimezone(UTC)
    left = hours.target
    day = at.astimezone(ZoneInfo(hours.time_zone)).date() - timedelta(days=1)
    for _ in range(MAX_DAYS):
        window = hours.window(day)
        day += timedelta(days=1)
        if window is None:
            continue
        begin, end = max(window[0], at), window[1]
        if begin >= end:
            continue
        if left <= end - begin:
            return begin + left
        left -= end - begin
    raise ValueError("service level: no business hours within the target")


def overdue(due: datetime | None, now: datetime) -> bool:
    """Past its due time (naive times are UTC)."""
    if due is None:
        return False
    as_utc = [t.replace(tzinfo=UTC) if t.tzinfo is None else t for t in (due, now)]
    return as_utc[0] < as_utc[1]
