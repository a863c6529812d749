"""Who owns a mail on the desk, and who has its draft open.

A mail has at most one owner (``mail_assignments``). The first agent who opens one of its
drafts owns it (self-assign on open); anyone who may see the mailbox can give it to a
colleague who may see it too, or unassign it. Every change is audited under the person
(``user:NAME``). The queue's views (mine, unassigned, all) read the same table.

Presence (``draft_presence``) is written when an agent opens a draft page and refreshed
by its autosave, so a second agent is warned from the moment the first one opened it,
not only once she has typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..core.errors import BadInputError
from ..core.rows import FromRow
from ..db import slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.busy import repeated_when_busy, written_when_busy

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

PRESENCE_WINDOW_S = 900  # an open page younger than this counts as "has it open"
VIEWS = ("all", "mine", "unassigned", "snoozed")  # snoozed: review/snooze.py


@dataclass(frozen=True)
class Owner(FromRow):
    """The agent who owns a mail."""

    user_id: int
    name: str
    assigned_by: str | None = None
    assigned_at: datetime | None = None


@dataclass(frozen=True)
class Present(FromRow):
    """Another agent who has the draft open."""

    name: str
    seen_at: datetime | None = None
    ago_s: int | None = None


@dataclass(frozen=True)
class Colleague(FromRow):
    id: int
    name: str


def owner(svc: ServiceContext, email_id: int) -> Owner | None:
    row = svc.db.fetchone(sql("assign_get"), {"email_id": email_id})
    return None if row is None else Owner.from_row(row)


def claim(svc: ServiceContext, email_id: int, user_id: int, actor: str) -> Owner | None:
    """Opening a draft: the mail becomes this agent's when nobody owns it; the owner
    either way."""

    def take(repeats: list[AuditEvent]) -> None:
        with svc.db.transaction() as cur:
            params = {"email_id": email_id, "user_id": user_id, "by": actor}
            events = [AuditEvent(actor, "email", email_id, "assigned",
                                 detail={"to": actor, "how": "opened"})
                      ] if cur.execute(sql("assign_claim"), params) > 0 else []
            write_events(cur, repeats + events)

    repeated_when_busy("claim", actor, "email", email_id, take)
    return owner(svc, email_id)


def colleagues(svc: ServiceContext, mailbox_id: int) -> list[Colleague]:
    """Who may own a mail of this mailbox: admins and the staff who see it (its own, and
    those with no mailbox while ``web_staff_see_unassigned`` lets them see all)."""
    see_all = int(bool(svc.settings.web_staff_see_unassigned))
    return Colleague.from_rows(
        svc.db.fetchall(sql("assign_colleagues"), {"mailbox_id": mailbox_id, "see_all": see_all})
    )


def assign(
    svc: ServiceContext, email_id: int, mailbox_id: int, to: str | None, actor: str
) -> tuple[str | None, str | None]:
    """Give the mail to ``to`` (a user name who may see its mailbox), or nobody (None);
    returns (previous owner, new owner); audited when something changed."""
    target = None
    if to:
        target = next((c for c in colleagues(svc, mailbox_id) if c.name == to), None)
        if target is None:
            raise BadInputError("that user cannot work on this mailbox; nothing changed")

    def give(repeats: list[AuditEvent]) -> tuple[str | None, str | None]:
        with svc.db.transaction() as cur:
            write_events(cur, repeats)
            row = cur.fetchone(sql("assign_get_for_update"), {"email_id": email_id})
            before = None if row is None else Owner.from_row(row).name
            after = target.name if target else None
            if before == after:
                return before, after
            if target is None:
                cur.execute(sql("assign_delete"), {"email_id": email_id})
            else:
                cur.execute(sql("assign_set"),
                            {"email_id": email_id, "user_id": target.id, "by": actor})
            write_events(cur, [AuditEvent(
                actor, "email", email_id, "assigned" if after else "unassigned",
                detail={"from": before and f"user:{before}", "to": after and f"user:{after}"})])
        return before, after

    return repeated_when_busy("assign", actor, "email", email_id, give)


def here(svc: ServiceContext, draft_id: int, user_id: int, by: str) -> None:
    """This agent (``by``: its actor) has the draft open (now)."""
    written_when_busy(svc.db, "here", by, "draft", draft_id, "presence_touch",
                      {"draft_id": draft_id, "user_id": user_id})


def others_here(svc: ServiceContext, draft_id: int, user_id: int) -> list[Present]:
    return Present.from_rows(
        svc.db.fetchall(
            sql("presence_others"),
            {"draft_id": draft_id, "user_id": user_id, "window_s": PRESENCE_WINDOW_S},
        )
    )


def open_elsewhere(svc: ServiceContext, draft_ids: list[int], user_id: int) -> dict[int, list[str]]:
    """For the queue: which of these drafts other agents have open, and who."""
    if not draft_ids:
        return {}
    found: dict[int, list[str]] = {}
    rows = svc.db.fetchall(
        sql("presence_of_drafts", ids=len(draft_ids)),
        {**slot_params(ids=draft_ids), "user_id": user_id, "window_s": PRESENCE_WINDOW_S},
    )
    for r in rows:
        found.setdefault(int(r["draft_id"]), []).append(r["name"])
    return found


def left(svc: ServiceContext, draft_id: int, user_id: int, by: str) -> None:
    """This agent is done with the draft (approved or rejected it)."""
    written_when_busy(svc.db, "left", by, "draft", draft_id, "presence_leave",
                      {"draft_id": draft_id, "user_id": user_id})
