"""The review desk's queue: true counts, keyset paging, sorting, search, mailbox scope.

The queue is the view ``review_queue`` (migration 0185). A page is found by its sort key
and draft id (keyset), so a position survives drafts before it being approved by others,
and "x of N" is one COUNT over the same filters. Every query takes the user's mailbox
scope: staff only see, open and act on the mailboxes they are assigned to
(``require_draft``/``require_mail`` are called before every action); admins see all.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| draft of a mailbox outside the user's scope | no | yes: answered as "not found", nothing changed | an admin assigns the mailbox |
| cursor from an old link points at a draft that left the queue | - | yes | the page starts after that key (keys are values, not rows) |
| search words shorter than 3 characters | - | yes: ignored (the index does not hold them) | the page says so |
| MariaDB down | yes | yes: read only | 503 page |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .app import Services
from .db import sql
from .sending.review import DraftNotFoundError

SORTS = ("waiting", "priority", "mailbox")
PAGE_SIZE = 50
# waiting time colours: ok below WARN, warn below LATE, late after (hours since the
# customer sent the mail)
WAITING_WARN_HOURS = 4
WAITING_LATE_HOURS = 24
MIN_WORD = 3  # innodb_ft_min_token_size: shorter words are not in the index


@dataclass(frozen=True)
class QueueQuery:
    mailbox: str = ""
    category: str = ""
    search: str = ""
    sort: str = "waiting"

    def __post_init__(self) -> None:
        if self.sort not in SORTS:
            object.__setattr__(self, "sort", "waiting")

    def params(self, scope: frozenset[int] | None) -> dict[str, Any]:
        return {"mailbox": self.mailbox or None, "category": self.category or None,
                "scope": None if scope is None else ",".join(map(str, sorted(scope))) or "0",
                "search": fulltext_query(self.search), "sort": self.sort}

    def url_params(self) -> dict[str, str]:
        values = {"mailbox": self.mailbox, "category": self.category, "q": self.search,
                  "sort": "" if self.sort == "waiting" else self.sort}
        return {k: v for k, v in values.items() if v}


@dataclass
class QueuePage:
    rows: list[dict[str, Any]]
    total: int
    first_position: int  # 1-based position of rows[0] in the whole filtered queue
    next_cursor: str | None
    prev_cursor: str | None


def fulltext_query(text: str) -> str | None:
    """Every word required, as a prefix (``+rechnung* +4711*``); operators typed by the
    user are not passed through. None when nothing searchable is left."""
    words = [w for w in re.findall(r"\w+", text or "") if len(w) >= MIN_WORD]
    return " ".join(f"+{w}*" for w in words[:12]) or None


def cursor_of(row: dict[str, Any]) -> str:
    return f"{bytes(row['sort_key']).hex()}-{row['id']}"


def parse_cursor(cursor: str | None) -> tuple[bytes, int] | None:
    m = re.fullmatch(r"([0-9a-f]{0,512})-(\d{1,19})", cursor or "")
    return (bytes.fromhex(m.group(1)), int(m.group(2))) if m else None


def queue_page(svc: Services, scope: frozenset[int] | None, query: QueueQuery,
               after: str | None = None, before: str | None = None,
               limit: int = PAGE_SIZE) -> QueuePage:
    params = query.params(scope)
    start, end = parse_cursor(after), parse_cursor(before)
    if end is not None and start is None:
        rows = svc.db.fetchall(sql("desk_queue_page_before"),
                               {**params, "before_key": end[0], "before_id": end[1],
                                "limit": limit})[::-1]
        if len(rows) < limit:  # reached the start: show a full first page
            rows = svc.db.fetchall(sql("desk_queue_page"),
                                   {**params, "after_key": None, "after_id": 0, "limit": limit})
    else:
        rows = svc.db.fetchall(sql("desk_queue_page"), {
            **params, "after_key": start[0] if start else None,
            "after_id": start[1] if start else 0, "limit": limit + 1})
    more = len(rows) > limit
    rows = rows[:limit]
    at = rows[0] if rows else None
    stats = svc.db.fetchone(sql("desk_queue_count"), {
        **params, "at_key": bytes(at["sort_key"]) if at else None, "at_id": at["id"] if at else 0})
    first = int(stats["before_n"]) + 1
    return QueuePage(rows, int(stats["total"]), first,
                     cursor_of(rows[-1]) if rows and (more or end is not None) and
                     first + len(rows) - 1 < int(stats["total"]) else None,
                     cursor_of(rows[0]) if rows and first > 1 else None)


@dataclass
class Position:
    position: int | None  # 1-based, None when the draft is not in this (filtered) queue
    total: int
    next_id: int | None
    prev_id: int | None
    age_s: int | None
    waiting_since: Any = None


def position(svc: Services, scope: frozenset[int] | None, query: QueueQuery,
             draft_id: int) -> Position:
    """Where a draft stands in the filtered, sorted queue, and its neighbours: "Next"
    goes on from here (not back to the oldest); after the last one it wraps to the first."""
    params = query.params(scope)
    row = svc.db.fetchone(sql("desk_queue_row"), {"id": draft_id, "sort": query.sort})
    key = (bytes(row["sort_key"]), draft_id) if row else None
    stats = svc.db.fetchone(sql("desk_queue_count"), {
        **params, "at_key": key[0] if key else None, "at_id": draft_id})
    total = int(stats["total"])
    if key is None:
        first = svc.db.fetchone(sql("desk_queue_page"),
                                {**params, "after_key": None, "after_id": 0, "limit": 1})
        return Position(None, total, first and first["id"], None, None)
    after = svc.db.fetchone(sql("desk_queue_page"),
                            {**params, "after_key": key[0], "after_id": key[1], "limit": 1})
    if after is None:  # the last one: wrap to the first (if it is not this one)
        after = svc.db.fetchone(sql("desk_queue_page"),
                                {**params, "after_key": None, "after_id": 0, "limit": 1})
        if after is not None and after["id"] == draft_id:
            after = None
    prev = svc.db.fetchone(sql("desk_queue_page_before"),
                           {**params, "before_key": key[0], "before_id": key[1], "limit": 1})
    inside = bool(stats["here"])
    return Position(int(stats["before_n"]) + 1 if inside else None, total,
                    after and after["id"], prev and prev["id"], row["age_s"],
                    row["waiting_since"])


def waiting_level(age_s: Any) -> str:
    """ok | warn | late: the colour of a waiting time."""
    if age_s is None:
        return "ok"
    hours = int(age_s) / 3600
    return "late" if hours >= WAITING_LATE_HOURS else "warn" if hours >= WAITING_WARN_HOURS \
        else "ok"


def require_draft(svc: Services, scope: frozenset[int] | None, draft_id: int) -> None:
    """The draft exists and its mailbox is in the user's scope; otherwise "not found"
    (a staff member does not learn that drafts of other mailboxes exist)."""
    row = svc.db.fetchone(sql("desk_draft_mailbox"), {"id": draft_id})
    if row is None or (scope is not None and int(row["mailbox_id"]) not in scope):
        raise DraftNotFoundError(f"draft {draft_id} does not exist")


def require_mail(svc: Services, scope: frozenset[int] | None, email_id: int) -> None:
    row = svc.db.fetchone(sql("desk_mail_mailbox"), {"id": email_id})
    if row is None or (scope is not None and int(row["mailbox_id"]) not in scope):
        raise DraftNotFoundError(f"mail {email_id} does not exist")


def visible_mailboxes(svc: Services, scope: frozenset[int] | None) -> list[str]:
    """The mailbox names a user may filter by."""
    return [r["name"] for r in svc.db.fetchall(sql("desk_mailboxes"))
            if scope is None or int(r["id"]) in scope]
