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
| a search matching more than COUNT_CAP drafts | - | yes: every match is listed, the count says "more than 1,000", positions beyond it are not numbered | narrow the search |
| MariaDB down | yes | yes: read only | 503 page |
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..core.actors import shown
from ..core.catalog import N_
from ..core.errors import DRAFT_MISSING, MAIL_MISSING, NO_SOURCE, DraftNotFoundError
from ..core.records import Draft, ReplyMail
from ..core.rows import FromRow
from ..core.states import DraftStatus
from ..db import examples, figures, sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy, written_when_busy
from ..sending.review import listed_attachments
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


def draft_mailbox(svc: ServiceContext, draft_id: int) -> int | None:
    """The mailbox of a draft's mail (None: no such draft)."""
    return _mailbox_of(svc, "desk_draft_mailbox", draft_id)


def mail_mailbox(svc: ServiceContext, email_id: int) -> int | None:
    """The mailbox of a mail (None: no such mail)."""
    return _mailbox_of(svc, "desk_mail_mailbox", email_id)


def require_draft(svc: ServiceContext, scope: frozenset[int] | None, draft_id: int) -> None:
    """The draft exists and its mailbox is in the user's scope; otherwise "not found"
    (a staff member does not learn that drafts of other mailboxes exist)."""
    if not in_scope(scope, _mailbox_of(svc, "desk_draft_mailbox", draft_id)):
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})


def require_mail(svc: ServiceContext, scope: frozenset[int] | None, email_id: int) -> None:
    if not in_scope(scope, _mailbox_of(svc, "desk_mail_mailbox", email_id)):
        raise DraftNotFoundError(MAIL_MISSING % {"id": email_id})


def in_scope(scope: frozenset[int] | None, mailbox_id: int | None) -> bool:
    """A record of this mailbox (None: no such record) may be seen by a user of ``scope``
    (None: an admin, every mailbox)."""
    return mailbox_id is not None and (scope is None or mailbox_id in scope)


def _mailbox_of(svc: ServiceContext, query: str, record_id: int) -> int | None:
    found = svc.db.fetchone(sql(query), {"id": record_id})
    return None if found is None else int(found["mailbox_id"])


@dataclass(frozen=True)
class MailView(FromRow):
    """One mail as staff and admins read it, never its raw source: the draft page and the
    mail page (``desk_mail_read``) and the admin timeline (``web_timeline_mail``) each select
    the columns they show; the others stay None."""

    id: int
    status: str
    subject: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    to_addrs: str | None = None
    cc_addrs: str | None = None
    received_at: datetime | None = None
    status_reason: str | None = None
    category: str | None = None
    priority: str | None = None
    language: str | None = None
    classification_defaulted: bool = False
    summary: str | None = None
    body_text: str | None = None
    body_html: str | None = None
    mailbox: str | None = None
    attachments: Any = None  # the column's JSON text; ``read_mail``: ListedAttachments
    index_status: str | None = None
    index_missing: str | None = None
    parse_status: str | None = None
    parse_error: str | None = None
    message_id: str | None = None


def read_mail(svc: ServiceContext, scope: frozenset[int] | None, email_id: int) -> MailView:
    """One mail for reading (its text, the sanitised HTML part is the page's business,
    its attachments as listed by the parse step), if the user may see its mailbox."""
    require_mail(svc, scope, email_id)
    row = svc.db.fetchone(sql("desk_mail_read"), {"id": email_id})
    if row is None:
        raise DraftNotFoundError(MAIL_MISSING % {"id": email_id})
    mail = MailView.from_row(row)
    return replace(mail, attachments=listed_attachments(mail.attachments))


def raw_source(svc: ServiceContext, scope: frozenset[int] | None, email_id: int,
               actor: str) -> bytes:
    """The mail as it was received (every header, every part), for a user who may see its
    mailbox; the view is audited (it shows what the parsed page does not)."""
    require_mail(svc, scope, email_id)
    row = svc.db.fetchone(sql("desk_mail_raw"), {"id": email_id})
    if row is None or row["raw"] is None:
        raise DraftNotFoundError(NO_SOURCE % {"id": email_id})
    raw = bytes(row["raw"])
    svc.audit.record(AuditEvent(actor, "email", email_id, "raw_source_viewed",
                                detail={"size": len(raw)}))
    return raw


def visible_mailboxes(svc: ServiceContext, scope: frozenset[int] | None) -> list[str]:
    """The mailbox names a user may filter by."""
    return [r["name"] for r in svc.db.fetchall(sql("desk_mailboxes"))
            if scope is None or int(r["id"]) in scope]


# --- edits saved as the agent types (draft_edits) ---

EDITING_WINDOW_S = 600  # another agent's edit younger than this shows "being edited by X"
MAX_EDIT_CHARS = 100_000


def save_edit(svc: ServiceContext, draft_id: int, user_id: int, body: str, by: str) -> None:
    """The agent's autosave (``by``: the agent's actor, for an audited repeat)."""
    written_when_busy(svc.db, "save_edit", by, "draft", draft_id, "desk_edit_save",
                      {"draft_id": draft_id, "user_id": user_id, "body": body[:MAX_EDIT_CHARS]})


@dataclass(frozen=True)
class OwnEdit(FromRow):
    """The agent's own autosaved text of a draft."""

    body: str
    saved_at: datetime | None = None


@dataclass(frozen=True)
class OtherEditor(FromRow):
    """Another agent who saved an edit of the draft recently."""

    name: str
    saved_at: datetime | None = None
    ago_s: int | None = None


def own_edit(svc: ServiceContext, draft_id: int, user_id: int) -> OwnEdit | None:
    row = svc.db.fetchone(sql("desk_edit_get"), {"draft_id": draft_id, "user_id": user_id})
    return None if row is None else OwnEdit.from_row(row)


def discard_edit(svc: ServiceContext, draft_id: int, user_id: int, by: str) -> None:
    written_when_busy(svc.db, "discard_edit", by, "draft", draft_id, "desk_edit_discard",
                      {"draft_id": draft_id, "user_id": user_id})


def others_editing(svc: ServiceContext, draft_id: int, user_id: int) -> list[OtherEditor]:
    return OtherEditor.from_rows(svc.db.fetchall(sql("desk_edit_others"), {
        "draft_id": draft_id, "user_id": user_id, "window_s": EDITING_WINDOW_S}))


def draft_state(svc: ServiceContext, draft_id: int) -> Draft | None:
    """The draft's status and who moved it (no texts): what an open page polls."""
    row = svc.db.fetchone(sql("desk_draft_state"), {"id": draft_id})
    return None if row is None else Draft.from_row(row)



def what_happened(draft: Draft, zone: Any = None) -> tuple[str, dict[str, str]]:
    """The other agent's action on a draft, as a message with its values (for a conflict;
    the web UI translates it); times in ``zone``."""
    status = draft.status
    if status in (DraftStatus.APPROVED, DraftStatus.SENT):
        return N_("%(who)s approved it at %(at)s"), {
            "who": _who(draft.approved_by), "at": _at(draft.approved_at, zone)}
    if status == DraftStatus.REJECTED:
        return N_("%(who)s rejected it (%(reason)s)"), {
            "who": _who(draft.rejected_by), "reason": str(draft.reject_reason or "")}
    if status == DraftStatus.SUPERSEDED:
        return N_("it was replaced by a regenerated draft"), {}
    if status == DraftStatus.STALE:
        return N_("it was marked stale (%(reason)s)"), {
            "reason": str(draft.stale_reason or "a newer mail arrived")}
    return N_("it changed (now %(status)s)"), {"status": str(status)}


def _who(actor: Any) -> str:
    return shown(actor, "someone")


def _at(value: Any, zone: Any = None) -> str:
    if not hasattr(value, "strftime"):
        return str(value or "")
    if zone is not None and value.tzinfo is None:  # stored as UTC without tzinfo
        from datetime import UTC

        value = value.replace(tzinfo=UTC).astimezone(zone)
    return value.strftime("%H:%M")


# --- classification corrected by a human ---

def classification_choices() -> dict[str, list[str]]:
    from ..classification.values import Category, Language, Priority

    return {"categories": [c.value for c in Category], "languages": [c.value for c in Language],
            "priorities": [c.value for c in Priority]}


def correct_classification(svc: ServiceContext, draft_id: int, by: str, category: str,
                           language: str, priority: str) -> dict[str, Any]:
    """Set the mail's category, language and priority by hand, with an audit event
    (``classification_corrected``, before and after). Values outside the enums are refused.
    Returns the changes (empty when nothing differed)."""
    from ..core.errors import BadInputError
    from ..db.audit import write_events

    choices = classification_choices()
    new = {"category": category, "language": language, "priority": priority}
    lists = {"category": "categories", "language": "languages", "priority": "priorities"}
    for field, value in new.items():
        if value not in choices[lists[field]]:
            raise BadInputError(f"{field} {value!r} is not one of the known values")

    def correct(repeats: list[AuditEvent]) -> tuple[dict[str, Any], Any]:
        with svc.db.transaction() as cur:
            mail = cur.fetchone(sql("desk_classification_for_update"), {"draft_id": draft_id})
            if mail is None:
                raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
            changes = {k: [mail[k], v] for k, v in new.items() if mail[k] != v}
            if changes:
                cur.execute(sql("desk_classification_set"), {"id": mail["id"], **new})
                write_events(cur, [AuditEvent(by, "email", mail["id"],
                                              "classification_corrected",
                                              detail={"draft_id": draft_id,
                                                      "changes": changes})])
                figures.corrected(cur, mail["id"])
            example = examples.record(cur, mail["id"], "correction")
            write_events(cur, repeats)
        return changes, example

    changes, example = repeated_when_busy("correct_classification", by, "draft", draft_id,
                                          correct)
    examples.embed_recorded(svc.db, svc, example)
    return changes


# --- the conversation around a draft ---

@dataclass(frozen=True)
class ThreadItem(FromRow):
    """A mail of the thread (``kind`` inbound: ``desk_thread_mails``) or one of our replies
    (``ours``: ``desk_thread_replies``); ``current``: the mail this draft answers."""

    status: str
    at: datetime | None = None
    id: int | None = None  # the inbound mail's id
    email_id: int | None = None  # ours: the mail it answered
    draft_id: int | None = None
    subject: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    body_text: str | None = None
    approved_by: str | None = None
    send_status: str | None = None
    kind: str = "inbound"
    current: bool = False


@dataclass(frozen=True)
class HistoryItem(FromRow):
    """Another mail of the sender in this mailbox (``desk_sender_history``)."""

    id: int
    status: str
    subject: str | None = None
    category: str | None = None
    at: datetime | None = None
    draft_id: int | None = None


def conversation(svc: ServiceContext, mail: ReplyMail) -> list[ThreadItem]:
    """The whole thread in time order: the customer's mails (this one marked) and our
    replies that were approved or sent, each with ``kind`` inbound | ours."""
    if not mail.thread_key:
        return []
    key = {"mailbox_id": mail.mailbox_id, "thread_key": mail.thread_key}
    items = [replace(m, kind="inbound", current=m.id == mail.id)
             for m in ThreadItem.from_rows(svc.db.fetchall(sql("desk_thread_mails"), key))]
    items += [replace(r, kind="ours")
              for r in ThreadItem.from_rows(svc.db.fetchall(sql("desk_thread_replies"), key))]
    items.sort(key=lambda i: (i.at is None, i.at or datetime.min, i.kind == "ours"))
    return items if len(items) > 1 else []


def sender_history(svc: ServiceContext, mail: ReplyMail) -> list[HistoryItem]:
    if not mail.from_addr:
        return []
    return HistoryItem.from_rows(svc.db.fetchall(sql("desk_sender_history"), {
        "mailbox_id": mail.mailbox_id, "from_addr": mail.from_addr, "id": mail.id,
        "thread_key": mail.thread_key}))


SOURCE_TEXT_KEYS = ("snippet", "text", "excerpt", "summary", "body")


@dataclass(frozen=True)
class SourceCard:
    """A retrieved source as the draft page shows it."""

    title: str
    text: str = ""
    score: Any = None
    email_id: Any = None
    at: Any = None
    category: Any = None
    reply: str = ""
    ref: str = ""  # S1, S2 ...: the label the draft's lines point to
    link: str = ""  # the article passage (/admin/knowledge/<id>#p<n>) or the past mail
    kind: str = ""  # article | saved_reply | case | past_reply
    vouched_by: str = ""  # the past mail (/mails/<id>) whose reply states this passage's facts


@dataclass(frozen=True)
class TracedLine:
    text: str
    ref: str | None  # the source the line came from; None: written by the product


@dataclass(frozen=True)
class Written:
    """How the draft was written, as its page shows it: the basis, each line of the body
    with its source, and the sources themselves."""

    basis: str | None  # "sources" | "no_source"; None: a draft of an older version
    lines: list[TracedLine]
    sources: list[SourceCard]

    @property
    def no_source(self) -> bool:
        return self.basis == "no_source"


def written(basis: str | None, trace: list[Any], sources: list[Any]) -> Written:
    lines = [TracedLine(str(t.get("text") or ""), t.get("ref") or None)
             for t in trace if isinstance(t, dict)]
    return Written(basis, lines, source_cards(sources))


def _mail_link(origin: Any) -> str:
    """``mail:<id>`` as the page of that mail, else ""."""
    kind, _, number = str(origin or "").partition(":")
    return f"/mails/{int(number)}" if kind == "mail" and number.isdigit() else ""


def source_cards(sources: list[Any]) -> list[SourceCard]:
    """Retrieved sources (JSON values of the draft's retrieval detail) as readable cards:
    title, score, the customer's text and our reply then - never a raw dict dump."""
    cards = []
    for s in sources:
        if not isinstance(s, dict):
            cards.append(SourceCard("source", str(s)[:1500]))
            continue
        reply = s.get("reply")
        reply_text = reply.get("text") if isinstance(reply, dict) else reply
        text = next((s[k] for k in SOURCE_TEXT_KEYS if s.get(k)), "")
        email_id = s.get("email_id")
        link = str(s.get("link") or "")
        cards.append(SourceCard(
            title=s.get("subject") or s.get("title") or
            (f"mail #{email_id}" if email_id is not None else "source"),
            score=s.get("score"), email_id=email_id,
            at=s.get("received_at") or s.get("date"), category=s.get("category"),
            text=str(text)[:1500], reply=str(reply_text or "")[:1500],
            ref=str(s.get("ref") or ""), kind=str(s.get("kind") or ""),
            link=link if link.startswith("/") and not link.startswith("//") else "",
            vouched_by=_mail_link(s.get("vouched_by"))))
    return cards
