"""The review desk's queue: true counts, keyset paging, sorting, search, mailbox scope.

The queue is the view ``review_queue`` (migration 0185). A page is found by its sort key
and draft id (keyset), so a position survives drafts before it being approved by others,
and "x of N" is one COUNT over the same filters. Every query takes the user's mailbox
scope (``review.access``): staff only see the mailboxes they are assigned to; admins see all.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| cursor from an old link points at a draft that left the queue | - | yes | the page starts after that key (keys are values, not rows) |
| search words shorter than 3 characters | - | yes: ignored (the index does not hold them) | the page says so |
| a search matching more than COUNT_CAP drafts | - | yes: every match is listed, the count says "more than 1,000", positions beyond it are not numbered | narrow the search |
| MariaDB down | yes | yes: read only | 503 page |
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..core.rows import FromRow
from ..db import sql
from . import fulltext, service_levels
from .assignment import VIEWS

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


SORTS = ("waiting", "priority", "mailbox", "due")


PAGE_SIZE = 50


# waiting time colours: ok below WARN, warn below LATE, late after (hours since the
# customer sent the mail)
WAITING_WARN_HOURS = 4


WAITING_LATE_HOURS = 24


MIN_WORD = 3  # innodb_ft_min_token_size: shorter words are not in the index


COUNT_CAP = 1_000  # a search counts its matches up to this ("more than 1,000")


# a search is known broad without the FULLTEXT index when its pattern accepts more than
# COUNT_CAP of the first PROBE_ROWS * COUNT_CAP listed drafts; it tries that when it accepts
# more than 1 in PROBE_ROWS of the first PROBE_FIRST
PROBE_FIRST = 100


PROBE_ROWS = 4


@dataclass(frozen=True)
class QueueQuery:
    mailbox: str = ""
    category: str = ""
    search: str = ""
    sort: str = "waiting"
    view: str = "all"  # all | mine | unassigned | snoozed (review/assignment.py)
    me: int = 0  # the user whose "mine" it is
    state: str = ""  # pending_review | stale | flagged (a draft the checks flagged)
    owner: str = ""  # the name of the agent who owns the mail
    since: str = ""  # waiting since this day (YYYY-MM-DD, in ``zone``) ...
    until: str = ""  # ... up to and including this day
    zone: str = "UTC"  # the user's time zone, for the days

    def __post_init__(self) -> None:
        if self.sort not in SORTS:
            object.__setattr__(self, "sort", "waiting")
        if self.view not in VIEWS:
            object.__setattr__(self, "view", "all")
        if self.state not in STATES:
            object.__setattr__(self, "state", "")
        for name in ("since", "until"):
            if _day(getattr(self, name), self.zone) is None:
                object.__setattr__(self, name, "")

    def params(self, scope: frozenset[int] | None) -> dict[str, Any]:
        until = _day(self.until, self.zone)
        return {"mailbox": self.mailbox or None, "category": self.category or None,
                "scope": None if scope is None else ",".join(map(str, sorted(scope))) or "0",
                "search": fulltext_query(self.search),
                "pattern": fulltext.pattern(search_words(self.search)),
                "sort": self.sort, "view": self.view,
                "me": self.me, "state": self.state or None, "owner": self.owner or None,
                "since": _day(self.since, self.zone),
                "until": until + timedelta(days=1) if until else None}

    def url_params(self) -> dict[str, str]:
        values = {"mailbox": self.mailbox, "category": self.category, "q": self.search,
                  "sort": "" if self.sort == "waiting" else self.sort,
                  "view": "" if self.view == "all" else self.view, "state": self.state,
                  "owner": self.owner, "since": self.since, "until": self.until}
        return {k: v for k, v in values.items() if v}


STATES = ("", "pending_review", "stale", "flagged")


# the queue's filters as request parameters (``QueueQuery.url_params``, ``query_of``): the
# queue's links and form, the draft page's links and hidden fields, and saved views
FILTER_KEYS = ("mailbox", "category", "q", "sort", "view", "state", "owner", "since", "until")


MAX_SEARCH = 200


MAX_OWNER = 100


def query_of(params: Mapping[str, object], me: int, zone: str = "UTC") -> QueueQuery:
    """The queue's filters read from a request's parameters (a query string or a form; other
    keys and non-text values ignored): the one reading of them for the queue page, the draft
    page and every action that goes on to the next draft of the same queue."""

    def text(key: str, limit: int = MAX_SEARCH) -> str:
        value = params.get(key)
        return value.strip()[:limit] if isinstance(value, str) else ""

    return QueueQuery(mailbox=text("mailbox"), category=text("category"), search=text("q"),
                      sort=text("sort") or "waiting", view=text("view") or "all", me=me,
                      state=text("state"), owner=text("owner", MAX_OWNER),
                      since=text("since"), until=text("until"), zone=zone)


def _day(text: str, zone: str) -> datetime | None:
    """The start of a typed day (YYYY-MM-DD) in ``zone``, as naive UTC; None when empty
    or not a day."""
    if not text or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return None
    try:
        tz = ZoneInfo(zone or "UTC")
        start = datetime.fromisoformat(text).replace(tzinfo=tz)
    except (ValueError, KeyError, ZoneInfoNotFoundError):
        return None
    return start.astimezone(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class QueueRow(FromRow):
    """A waiting draft as the queue lists it (the view ``review_queue``, its sort key and
    its waiting time ``age_s``)."""

    id: int
    email_id: int
    status: str
    version: int = 1
    check_flags: str | None = None
    created_at: datetime | None = None
    subject: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    category: str | None = None
    priority: str | None = None
    language: str | None = None
    mailbox_id: int | None = None
    received_at: datetime | None = None
    mailbox: str | None = None
    waiting_since: datetime | None = None
    age_s: int | None = None
    sort_key: bytes = b""
    owner: str | None = None  # the agent who owns the mail (review/assignment.py)
    snoozed_until: datetime | None = None  # UTC; set in the Snoozed view (review/snooze.py)
    due_at: datetime | None = None  # the first reply is due (UTC; review/service_levels.py)


@dataclass
class QueuePage:
    rows: list[QueueRow]
    total: int  # COUNT_CAP when capped
    first_position: int | None  # 1-based position of rows[0] (None: beyond a capped count)
    next_cursor: str | None
    prev_cursor: str | None
    capped: bool = False  # a broad search: total is COUNT_CAP, there are more


def search_words(text: str) -> list[str]:
    """The words a search looks for (at most 12; shorter than MIN_WORD: ignored)."""
    return [w for w in re.findall(r"\w+", text or "") if len(w) >= MIN_WORD][:12]


def fulltext_query(text: str) -> str | None:
    """Every word required, as a prefix (``+rechnung* +4711*``); operators typed by the
    user are not passed through. None when nothing searchable is left."""
    return " ".join(f"+{w}*" for w in search_words(text)) or None


def cursor_of(row: QueueRow) -> str:
    return f"{bytes(row.sort_key).hex()}-{row.id}"


def parse_cursor(cursor: str | None) -> tuple[bytes, int] | None:
    m = re.fullmatch(r"([0-9a-f]{0,512})-(\d{1,19})", cursor or "")
    return (bytes.fromhex(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class _Plan:
    """The queries of one queue listing: without a search, or a search driven by the
    index's result (narrow), or the sort order walked and each mail tested (broad)."""

    page: str
    page_before: str
    capped: bool = False  # more matches than COUNT_CAP: the count says "more than"


_PLAIN = _Plan("desk_queue_page", "desk_queue_page_before")


_NARROW = _Plan("desk_queue_search_page", "desk_queue_search_page_before")


_BROAD = _Plan("desk_queue_broad_page", "desk_queue_broad_page_before", capped=True)


def _plan(svc: ServiceContext, params: dict[str, Any]) -> tuple[_Plan, int | None]:
    """A search finding more than COUNT_CAP waiting drafts is broad: its pages walk the
    sort order (the first matches), its count stops at the cap. A word in most mails is
    told by its pattern on the first listed drafts (the FULLTEXT index is not asked); any
    other search by the capped count from the index's result, returned with the plan
    (the total of a narrow search; None: not counted)."""
    if params["search"] is None:
        return _PLAIN, None
    first = svc.db.fetchone(sql("desk_queue_search_sample"), {**params, "probe": PROBE_FIRST})
    if int(first["found"]) * PROBE_ROWS > int(first["listed"]):  # in over 1 of PROBE_ROWS
        probed = svc.db.fetchone(sql("desk_queue_search_probe"), {
            **params, "probe": PROBE_ROWS * COUNT_CAP, "cap": COUNT_CAP + 1})
        if int(probed["found"]) > COUNT_CAP:
            return _BROAD, None
    found = svc.db.fetchone(sql("desk_queue_search_count"), {
        **params, "at_key": None, "at_id": 0, "cap": COUNT_CAP + 1})
    total = int(found["total"])
    return (_BROAD, None) if total > COUNT_CAP else (_NARROW, total)


@dataclass(frozen=True)
class _Count:
    total: int  # COUNT_CAP when capped (there are more)
    here: bool  # the draft at the position is listed (False: or not known, beyond the cap)
    before: int | None  # listed drafts before it (None: not known, beyond the cap)


def _count(svc: ServiceContext, plan: _Plan, params: dict[str, Any], at_key: bytes | None,
           at_id: int) -> _Count:
    """The total and a position's place: one count over the whole listing, or for a broad
    search the first COUNT_CAP matches in order up to the position."""
    at = {**params, "at_key": at_key, "at_id": at_id}
    if plan is _PLAIN:
        found = svc.db.fetchone(sql("desk_queue_count"), at)
    elif plan is _NARROW:
        found = svc.db.fetchone(sql("desk_queue_search_count"), {**at, "cap": COUNT_CAP + 1})
    else:
        if at_key is None:
            return _Count(COUNT_CAP, False, 0)
        found = svc.db.fetchone(sql("desk_queue_broad_count"), {**at, "cap": COUNT_CAP + 1})
        seen = int(found["total"])
        here = bool(found["here"])
        known = seen <= COUNT_CAP
        return _Count(COUNT_CAP, here, seen - here if known else None)
    return _Count(int(found["total"]), bool(found["here"]), int(found["before_n"]))


def queue_page(svc: ServiceContext, scope: frozenset[int] | None, query: QueueQuery,
               after: str | None = None, before: str | None = None,
               limit: int = PAGE_SIZE) -> QueuePage:
    service_levels.compute(svc.db, svc.mailboxes.configs())
    params = query.params(scope)
    plan, counted = _plan(svc, params)
    start, end = parse_cursor(after), parse_cursor(before)
    rows: list[QueueRow] = []
    from_start = False
    if end is not None and start is None:
        rows = QueueRow.from_rows(svc.db.fetchall(sql(plan.page_before), {
            **params, "before_key": end[0], "before_id": end[1], "limit": limit}))[::-1]
        if len(rows) < limit:  # reached the start: a full first page
            rows = []
    if not rows:
        from_start = start is None
        rows = QueueRow.from_rows(svc.db.fetchall(sql(plan.page), {
            **params, "after_key": start[0] if start else None,
            "after_id": start[1] if start else 0, "limit": limit}))
    at = rows[0] if rows else None
    if plan.capped and from_start:  # the first page of a broad search: it starts at 1
        at = None
    if counted is not None and from_start:  # the plan's count: the page starts at 1
        stats = _Count(counted, at is not None, 0)
    else:
        stats = _count(svc, plan, params, bytes(at.sort_key) if at else None, at.id if at else 0)
    first = None if stats.before is None else stats.before + 1
    if first is not None and (not plan.capped or first + len(rows) - 1 <= COUNT_CAP):
        more = first + len(rows) - 1 < stats.total or plan.capped
    else:  # beyond a capped count: is there a next row?
        more = bool(rows) and bool(svc.db.fetchone(sql(plan.page), {
            **params, "after_key": bytes(rows[-1].sort_key), "after_id": rows[-1].id,
            "limit": 1}))
    return QueuePage(rows, stats.total, first,
                     cursor_of(rows[-1]) if rows and more else None,
                     cursor_of(rows[0]) if rows and first != 1 else None, plan.capped)


@dataclass
class Position:
    position: int | None  # 1-based, None when not listed or beyond a capped count
    total: int
    next_id: int | None
    prev_id: int | None
    age_s: int | None
    waiting_since: Any = None
    due_at: datetime | None = None
    listed: bool = False  # the draft is in this (filtered) queue
    capped: bool = False  # total is COUNT_CAP: there are more


def position(svc: ServiceContext, scope: frozenset[int] | None, query: QueueQuery,
             draft_id: int) -> Position:
    """Where a draft stands in the filtered, sorted queue, and its neighbours: "Next"
    goes on from here (not back to the oldest); after the last one it wraps to the first.
    Index reads only (review_queue_keys)."""
    service_levels.compute(svc.db, svc.mailboxes.configs())
    params = query.params(scope)
    plan, _ = _plan(svc, params)
    found = svc.db.fetchone(sql("desk_queue_key"), {"sort": query.sort, "id": draft_id})
    key = bytes(found["sort_key"]) if found else None
    found_row = svc.db.fetchone(sql("desk_queue_row"), {"id": draft_id})
    row = QueueRow.from_row(found_row) if found_row else None
    age = (row.age_s, row.waiting_since, row.due_at) if row else (None, None, None)
    stats = _count(svc, plan, params, key, draft_id)
    first = svc.db.fetchone(sql(plan.page), {**params, "after_key": None, "after_id": 0,
                                             "limit": 1})
    after = prev = None
    if key is not None:
        after = svc.db.fetchone(sql(plan.page),
                                {**params, "after_key": key, "after_id": draft_id, "limit": 1})
        prev = svc.db.fetchone(sql(plan.page_before),
                               {**params, "before_key": key, "before_id": draft_id, "limit": 1})
    # beyond a capped count the count did not reach it: ask whether the listing's next
    # row from just before it is the draft itself
    listed = key is not None and (stats.here or (stats.before is None and _listed(
        svc, plan, params, key, draft_id)))
    if not listed:  # not (or no longer) in this queue
        return Position(None, stats.total, first and first["id"], None, *age,
                        capped=plan.capped)
    following = after["id"] if after else (first["id"] if first and first["id"] != draft_id
                                          else None)
    return Position(None if stats.before is None else stats.before + 1, stats.total,
                    following, prev and prev["id"], *age, listed=True, capped=plan.capped)


def _listed(svc: ServiceContext, plan: _Plan, params: dict[str, Any], key: bytes,
            draft_id: int) -> bool:
    """The draft at ``key`` is itself in the listing (the next listed row from just before
    it is this draft)."""
    found = svc.db.fetchone(sql(plan.page), {**params, "after_key": key,
                                             "after_id": draft_id - 1, "limit": 1})
    return bool(found) and int(found["id"]) == draft_id


def waiting_level(age_s: Any) -> str:
    """ok | warn | late: the colour of a waiting time."""
    if age_s is None:
        return "ok"
    hours = int(age_s) / 3600
    return "late" if hours >= WAITING_LATE_HOURS else "warn" if hours >= WAITING_WARN_HOURS \
        else "ok"


def due_in(due_at: datetime | None, now: datetime | None = None) -> int | None:
    """Seconds until the first reply is due (negative: overdue by that much; None: the
    mailbox has no service level). Stored times are UTC."""
    if due_at is None:
        return None
    now = now or datetime.now(UTC).replace(tzinfo=None)
    return int((due_at.replace(tzinfo=None) - now).total_seconds())
