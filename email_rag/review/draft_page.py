"""The draft page's cards: the conversation around a draft, the sender's earlier mails, the
draft's lines with the source each came from, and the sources as readable cards."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.records import ReplyMail
from ..core.rows import FromRow
from ..db import sql

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


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
