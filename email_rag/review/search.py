"""Search over every mail and every reply (not only the waiting drafts), and the customer
page: all mails of one sender address, our replies to them, the open items.

Both read only the user's mailboxes (``scope``: None for admins). The mails are found by
the desk's FULLTEXT index (``ft_email_search``: subject, sender, text) and our replies by
the same kind of index on their text (``ft_draft_text``, migration 0370), with the queue's
query form (``desk.fulltext_query``: every word required, as a prefix). A hit carries a
snippet around the first matching word as parts (text, matched?), so the page escapes
every part and marks the matches itself: mail text is never trusted as markup.

| situation | outcome |
|---|---|
| only words under 3 characters | nothing searched; the page says why |
| a mail of a mailbox outside the scope | not found (it is neither listed nor counted) |
| a match beyond the first 20,000 characters of a text | listed, its snippet is the text's start |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from ..core.rows import FromRow
from ..core.states import MAIL_TERMINAL
from ..db import sql
from .desk import MIN_WORD, fulltext_query

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

LIMIT = 50
CUSTOMER_LIMIT = 200
TEXT_READ = 20_000  # characters of a text the search reads (search.sql)
SNIPPET_CONTEXT = 80  # characters before the first match (and about twice that after)

Part = tuple[str, bool]  # a piece of a snippet, and whether it is a matched word


@dataclass(frozen=True)
class Hit(FromRow):
    """A mail (``kind`` mail) or one of our replies (``reply``) that matched."""

    email_id: int
    status: str
    draft_id: int | None = None
    subject: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    at: datetime | None = None
    mailbox: str | None = None
    text: str | None = None
    kind: str = "mail"
    snippet: tuple[Part, ...] = field(default=())

    @property
    def is_reply(self) -> bool:
        return self.kind == "reply"

    @property
    def anchor(self) -> str:
        """The hit's element id on the page (``hit-mail-ID`` / ``hit-reply-DRAFT``)."""
        return f"hit-reply-{self.draft_id}" if self.is_reply else f"hit-mail-{self.email_id}"


@dataclass
class Results:
    hits: list[Hit]
    mails: int  # on this page
    replies: int
    searched: bool  # False: nothing searchable was typed
    next_cursor: str | None = None  # the next (older) page, None: this is the last


def _key(hit: Hit) -> tuple[datetime, int, int]:
    """A hit's place in the search's order (descending): when, mail before reply, id."""
    return (hit.at or datetime.min, 0 if hit.is_reply else 1,
            (hit.draft_id or 0) if hit.is_reply else hit.email_id)


def cursor_of(key: tuple[datetime, int, int]) -> str:
    return f"{key[0].isoformat()}~{key[1]}~{key[2]}"


def parse_cursor(cursor: str | None) -> tuple[datetime, int, int] | None:
    m = re.fullmatch(r"([0-9T:.\-]{10,32})~([01])~(\d{1,19})", cursor or "")
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1)), int(m.group(2)), int(m.group(3))
    except ValueError:
        return None


def words_of(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text or "") if len(w) >= MIN_WORD][:12]


def snippet(text: str | None, words: list[str], context: int = SNIPPET_CONTEXT
            ) -> tuple[Part, ...]:
    """A short piece of ``text`` around the first word that starts with one of ``words``
    (as the index matches: a prefix, any case), split into parts with the matched words
    marked; whitespace collapsed, "…" where it was cut."""
    flat = " ".join((text or "").split())
    if not flat:
        return ()
    if not words:
        return ((flat[: 2 * context] + ("…" if len(flat) > 2 * context else ""), False),)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")\w*",
                         re.IGNORECASE)
    first = pattern.search(flat)
    start = 0 if first is None else max(0, first.start() - context)
    if start:  # begin at a word
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < (first.start() if first else start) else start
    end = min(len(flat), start + 3 * context)
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > (first.end() if first else start) else end
    piece = flat[start:end]
    parts: list[Part] = [("…", False)] if start else []
    at = 0
    for m in pattern.finditer(piece):
        if m.start() > at:
            parts.append((piece[at:m.start()], False))
        parts.append((m.group(0), True))
        at = m.end()
    if at < len(piece):
        parts.append((piece[at:], False))
    if end < len(flat):
        parts.append(("…", False))
    return tuple(parts)


def _has_all(text: str | None, words: list[str]) -> bool:
    """Every word starts a word of ``text`` (as the index matches), or the text was cut
    (the match may lie beyond what was read)."""
    text = text or ""
    if len(text) >= TEXT_READ:
        return True
    return all(re.search(r"(?<!\w)" + re.escape(w), text, re.IGNORECASE) for w in words)


def _scope(scope: frozenset[int] | None) -> str | None:
    return None if scope is None else ",".join(map(str, sorted(scope))) or "0"


def search(svc: ServiceContext, scope: frozenset[int] | None, text: str,
           limit: int = LIMIT, before: str | None = None) -> Results:
    """Mails and replies matching every word of ``text``, newest first, ``limit`` hits a
    page (after the hit ``before``, a page's ``next_cursor``), each with its snippet."""
    query = fulltext_query(text)
    if query is None:
        return Results([], 0, 0, False)
    words = words_of(text)
    after = parse_cursor(before)
    params = {"search": query, "scope": _scope(scope), "limit": limit + 1,
              "c_at": after[0] if after else None, "c_kind": after[1] if after else 0,
              "c_id": after[2] if after else 0}
    mails = [replace(h, kind="mail", snippet=snippet(h.text, words), text=None)
             for h in Hit.from_rows(svc.db.fetchall(sql("search_mails"), params))]
    # a reply is found by the text it has now (what went out, once approved): the index
    # holds the generated text as well, so a hit only there is dropped
    read = [replace(h, kind="reply")
            for h in Hit.from_rows(svc.db.fetchall(sql("search_replies"), params))]
    replies = [replace(h, snippet=snippet(h.text, words), text=None)
               for h in read if _has_all(h.text, words)]
    # what lies after a kind's last row read is unknown while that kind has more rows:
    # the page ends there at the latest
    ends = [_key(rows[-1]) for rows in (mails, read) if len(rows) > limit]
    end = max(ends) if ends else None
    hits = sorted((h for h in mails + replies if end is None or _key(h) >= end),
                  key=_key, reverse=True)
    more = len(hits) > limit or end is not None
    hits = hits[:limit]
    last = _key(hits[-1]) if hits else end
    return Results(hits, sum(not h.is_reply for h in hits), sum(h.is_reply for h in hits), True,
                   cursor_of(last) if more and last is not None else None)


@dataclass(frozen=True)
class CustomerMail(FromRow):
    id: int
    status: str
    subject: str | None = None
    from_name: str | None = None
    category: str | None = None
    at: datetime | None = None
    mailbox: str | None = None
    open_draft: int | None = None

    @property
    def is_open(self) -> bool:
        """Still work for us: not closed (sent, rejected, no reply, resolved) nor a past
        case (history)."""
        return self.status not in MAIL_TERMINAL


@dataclass(frozen=True)
class CustomerReply(FromRow):
    draft_id: int
    email_id: int
    status: str
    subject: str | None = None
    approved_by: str | None = None
    at: datetime | None = None
    send_status: str | None = None
    text: str | None = None


@dataclass
class Customer:
    addr: str
    names: list[str]
    mails: list[CustomerMail]
    replies: list[CustomerReply]

    @property
    def open_items(self) -> list[CustomerMail]:
        return [m for m in self.mails if m.is_open]


def customer(svc: ServiceContext, scope: frozenset[int] | None, addr: str,
             limit: int = CUSTOMER_LIMIT) -> Customer:
    """Every mail of ``addr`` in the user's mailboxes (newest first), our replies to them
    and the ones still open; empty lists when there are none (a sender of another mailbox
    is not told apart from an unknown one)."""
    addr = (addr or "").strip()[:320]
    params = {"addr": addr, "scope": _scope(scope), "limit": limit}
    mails = CustomerMail.from_rows(svc.db.fetchall(sql("customer_mails"), params))
    replies = CustomerReply.from_rows(svc.db.fetchall(sql("customer_replies"), params))
    names = sorted({m.from_name for m in mails if m.from_name})
    return Customer(addr, names, mails, replies)


__all__ = ["Customer", "Hit", "Results", "customer", "search", "snippet"]
