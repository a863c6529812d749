"""Pending: a mail put aside until a date (``mail_snoozes``).

Staff who wait for something (the customer's answer, a parcel) snooze the mail until a
date: its drafts leave the queue's views (All, Mine, Unassigned) and are listed under
Snoozed with the date; once the date has passed they are back in the queue by themselves
(the queue reads the date), and the next wake pass ends the snooze with an audit event
(``snooze_ended``, actor ``system:scheduler`` or ``system:web``). Snoozing and waking by
hand are audited under the person (``snoozed`` / ``unsnoozed``). The mail's status does
not change: it is still the case in review it was.

| situation | outcome |
|---|---|
| a date in the past, or further than ``MAX_DAYS`` ahead, or not a date | refused (BadInputError), nothing written |
| the mail is not waiting for staff (draft ready or manual) | refused (StateRefused), nothing written |
| snoozed again | the new date replaces the old one (audited with both) |
| two processes wake the same snooze | one deletes it and writes the event; the other finds nothing |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..core.actors import person
from ..core.errors import MAIL_MISSING, BadInputError, DraftNotFoundError, StateRefused
from ..core.rows import FromRow
from ..core.states import MailStatus
from ..db import sql
from ..db.audit import AuditEvent, write_events
from ..db.busy import repeated_when_busy

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_DAYS = 366
SNOOZABLE = frozenset({MailStatus.DRAFT_READY, MailStatus.MANUAL})
DATE_ONLY_HOUR = 8  # "until 12 March" means the morning of that day, in the user's zone


@dataclass(frozen=True)
class Snooze(FromRow):
    email_id: int
    until_at: datetime  # UTC, naive as stored
    snoozed_by: str
    snoozed_at: datetime | None = None


def parse_until(typed: str, zone: Any, now: datetime | None = None) -> datetime:
    """A typed date (``2026-12-24``) or date and time (``2026-12-24T14:30``) in the user's
    time zone ``zone``, as a naive UTC datetime; refused when it is not a date, not in the
    future or more than ``MAX_DAYS`` ahead."""
    text = (typed or "").strip()
    try:
        if len(text) == 10:
            local = datetime.fromisoformat(text).replace(hour=DATE_ONLY_HOUR)
        else:
            local = datetime.fromisoformat(text)
    except ValueError:
        raise BadInputError("not a date: type it as 2026-12-24 or 2026-12-24 14:30") from None
    tz = zone if zone is not None else UTC
    if isinstance(tz, str):
        tz = ZoneInfo(tz)
    if local.tzinfo is None:
        local = local.replace(tzinfo=tz)
    until = local.astimezone(UTC).replace(tzinfo=None)
    now = now or datetime.now(UTC).replace(tzinfo=None)
    if until <= now:
        raise BadInputError("the date has passed already: choose one in the future")
    if until > now + timedelta(days=MAX_DAYS):
        raise BadInputError(f"that is more than {MAX_DAYS} days ahead")
    return until


def current(svc: ServiceContext, email_id: int) -> Snooze | None:
    """The mail's snooze while its date has not passed (None: not snoozed)."""
    row = svc.db.fetchone(sql("snooze_get"), {"email_id": email_id})
    snooze = None if row is None else Snooze.from_row(row)
    if snooze is None or snooze.until_at <= datetime.now(UTC).replace(tzinfo=None):
        return None
    return snooze


def snooze(svc: ServiceContext, email_id: int, until: datetime, by: str) -> Snooze:
    """Put the mail aside until ``until`` (naive UTC; ``parse_until``). The caller checked
    that the user may see the mail's mailbox."""
    by = person(by)

    def put_aside(repeats: list[AuditEvent]) -> None:
        with svc.db.transaction() as cur:
            mail = svc.stores.rows_of(cur).reply_mail(email_id, lock=True)
            if mail is None:
                raise DraftNotFoundError(MAIL_MISSING % {"id": email_id})
            if mail.status not in SNOOZABLE:
                raise StateRefused(f"mail {email_id} is {mail.status}; only a mail waiting "
                                   "for staff (draft ready or manual) can be put aside")
            before = cur.fetchone(sql("snooze_get_for_update"), {"email_id": email_id})
            cur.execute(sql("snooze_set"), {"email_id": email_id, "until": until, "by": by})
            detail: dict[str, Any] = {"until": until.isoformat(timespec="minutes") + "Z"}
            if before is not None:
                detail["before"] = before["until_at"].isoformat(timespec="minutes") + "Z"
            write_events(cur, [*repeats, AuditEvent(by, "email", email_id, "snoozed",
                                                    detail=detail)])

    repeated_when_busy("snooze", by, "email", email_id, put_aside)
    return Snooze(email_id, until, by)


def unsnooze(svc: ServiceContext, email_id: int, by: str) -> bool:
    """Back into the queue now; False when the mail was not snoozed."""
    by = person(by)

    def back(repeats: list[AuditEvent]) -> bool:
        with svc.db.transaction() as cur:
            write_events(cur, repeats)
            row = cur.fetchone(sql("snooze_get_for_update"), {"email_id": email_id})
            if row is None:
                return False
            cur.execute(sql("snooze_delete"), {"email_id": email_id})
            write_events(cur, [AuditEvent(by, "email", email_id, "unsnoozed", detail={
                "until": row["until_at"].isoformat(timespec="minutes") + "Z"})])
        return True

    return repeated_when_busy("unsnooze", by, "email", email_id, back)


def wake_due(svc: ServiceContext, actor: str, limit: int = 200) -> list[int]:
    """End every snooze whose date has passed, each with its audit event (``snooze_ended``);
    the mails whose snooze this call ended."""
    due = Snooze.from_rows(svc.db.fetchall(sql("snooze_due"), {"limit": limit}))
    ended: list[int] = []
    for s in due:
        with svc.db.transaction() as cur:
            if cur.execute(sql("snooze_end_due"), {"email_id": s.email_id,
                                                   "until": s.until_at}) != 1:
                continue  # another process ended it, or it was snoozed again
            write_events(cur, [AuditEvent(actor, "email", s.email_id, "snooze_ended", detail={
                "until": s.until_at.isoformat(timespec="minutes") + "Z",
                "snoozed_by": s.snoozed_by})])
        ended.append(s.email_id)
    return ended
