"""Internal notes on a mail, and the @mentions in them.

Staff who may see a mail's mailbox can add a note to it: text for the team, never sent to
the customer, shown on the mail's page and its draft page in time order. ``@name`` in a
note notifies that user when they are a user of the mail's mailbox (admins, its staff,
staff without mailboxes while those see every mailbox: ``assignment.colleagues``); the
mention is listed for them ("Mentions" in the desk's header, with the unread count) until
they open the mail. Mentioning someone who cannot see the mailbox notifies nobody and
says so; the author is never notified of their own note.

Every note is audited (``note_added`` on the mail, actor ``user:NAME``, detail: the note's
id and whom it mentions), never with its text.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| empty or too long note | after fixing it | yes: refused, nothing written | the form keeps the text |
| mail of a mailbox outside the user's scope | no | yes: "does not exist", nothing written | an admin assigns the mailbox |
| ``@name`` of nobody of this mailbox | - | yes: the note is saved, that name is not notified, the author is told | mention a user of the mailbox |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..core.errors import BadInputError
from ..core.rows import FromRow
from ..db import sql
from ..db.audit import AuditEvent, write_events
from . import assignment
from .desk import N_, in_scope

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_NOTE = 5_000
MENTIONS_LISTED = 100
# "@" at the start or after a character that cannot end a name or an address, then a user
# name as users.NAME_RE allows it (letters, digits, . _ @ -)
_MENTION = re.compile(r"(?<![\w.@-])@([A-Za-z0-9][A-Za-z0-9._@-]{0,99})")
_SEPARATORS = "._@-"


def mention_candidates(text: str) -> list[str]:
    """Every ``@word`` of a note as written (the longest name it could be)."""
    return [m.group(1) for m in _MENTION.finditer(text or "")]


def parse_mentions(text: str, names: list[str]) -> tuple[list[str], list[str]]:
    """(users mentioned, in the order first written, as their names are spelt; words after
    an "@" that name none of ``names``). A name is matched without regard to case, and a
    mention may be followed by punctuation: "@bob." and "@bob's" mention bob, "@bob.smith"
    mentions bob.smith when that user exists, else bob."""
    known = {n.casefold(): n for n in names}
    found: list[str] = []
    unknown: list[str] = []
    for word in mention_candidates(text):
        match = None
        cut = len(word)
        while cut > 0:
            candidate = known.get(word[:cut].casefold())
            if candidate is not None:
                match = candidate
                break
            # try the word up to its previous separator ("bob.smith." -> "bob.smith" -> "bob")
            cut = max((word.rfind(s, 0, cut) for s in _SEPARATORS), default=-1)
        if match is None:
            bare = word.rstrip(_SEPARATORS)
            if bare and bare not in unknown:
                unknown.append(bare)
        elif match not in found:
            found.append(match)
    return found, unknown


@dataclass(frozen=True)
class Note(FromRow):
    id: int
    author: str
    body: str
    created_at: datetime | None = None
    mentioned: str | None = None  # the names it mentions, space-separated


@dataclass(frozen=True)
class Added:
    note_id: int
    mentioned: list[str]  # users notified
    not_notified: list[str]  # words after "@" that are no user of this mailbox


@dataclass(frozen=True)
class Mention(FromRow):
    note_id: int
    email_id: int
    author: str
    mailbox_id: int
    mailbox: str
    subject: str | None = None
    created_at: datetime | None = None
    read_at: datetime | None = None


def add(svc: ServiceContext, email_id: int, mailbox_id: int, user_id: int, user_name: str,
        body: str) -> Added:
    """A note on the mail by this user; its mentions notify the mailbox's users named."""
    text = (body or "").replace("\r\n", "\n").strip()
    if not text:
        raise BadInputError(N_("A note needs some text."))
    if len(text) > MAX_NOTE:
        raise BadInputError(N_("A note may have at most 5,000 characters."))
    people = {c.name: c.id for c in assignment.colleagues(svc, mailbox_id)}
    mentioned, unknown = parse_mentions(text, list(people))
    notify = [n for n in mentioned if people[n] != user_id]
    actor = f"user:{user_name}"
    with svc.db.transaction() as cur:
        cur.execute(sql("note_insert"), {"email_id": email_id, "user_id": user_id,
                                         "author": user_name, "body": text})
        note_id = cur.lastrowid
        for name in notify:
            cur.execute(sql("mention_insert"),
                        {"note_id": note_id, "user_id": people[name], "email_id": email_id})
        write_events(cur, [AuditEvent(actor, "email", email_id, "note_added", detail={
            "note_id": note_id, "mentioned": [f"user:{n}" for n in notify]})])
    return Added(note_id, notify, unknown)


def of_mail(svc: ServiceContext, email_id: int) -> list[Note]:
    return Note.from_rows(svc.db.fetchall(sql("notes_of_mail"), {"email_id": email_id}))


def opened(svc: ServiceContext, email_id: int, user_id: int) -> None:
    """The user opened the mail: their mentions on it are read."""
    svc.db.execute(sql("mentions_mark_read"), {"user_id": user_id, "email_id": email_id})


def unread_count(svc: ServiceContext, user_id: int, scope: frozenset[int] | None) -> int:
    rows = svc.db.fetchall(sql("mentions_unread_count"), {"user_id": user_id})
    return sum(int(r["n"]) for r in rows if in_scope(scope, int(r["mailbox_id"])))


def of_user(svc: ServiceContext, user_id: int, scope: frozenset[int] | None) -> list[Mention]:
    """The user's mentions on mails they may see: unread first, then the latest read."""
    rows = svc.db.fetchall(sql("mentions_of_user"),
                           {"user_id": user_id, "limit": MENTIONS_LISTED})
    return [m for m in Mention.from_rows(rows) if in_scope(scope, m.mailbox_id)]
