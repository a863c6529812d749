"""Reading the audit log: one mail's timeline, and a search over all events.

A mail's timeline merges the events of the mail itself, its queue entries,
its drafts and their send attempts, in time order. Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING

from ..core.errors import BadInputError, PermanentError
from ..core.records import Draft, Job, SendAttempt
from ..db import sql
from ..db.audit import AuditEntry
from .desk import MailView

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

ENTITY_TYPES = ("email", "job", "draft", "send_attempt", "mailbox", "saved_reply", "user",
                "system")


@dataclass(frozen=True)
class MailTimeline:
    mail: MailView
    jobs: list[Job]
    drafts: list[Draft]
    sends: list[SendAttempt]
    events: list[AuditEntry]  # oldest first


def mail_timeline(svc: ServiceContext, email_id: int) -> MailTimeline:
    db = svc.db
    row = db.fetchone(sql("web_timeline_mail"), {"id": email_id})
    if row is None:
        raise PermanentError(f"mail {email_id} does not exist")
    jobs = Job.from_rows(db.fetchall(sql("web_timeline_jobs"), {"id": email_id}))
    drafts = [Draft.from_row(r) for r in db.fetchall(sql("web_timeline_drafts"), {"id": email_id})]
    sends = [SendAttempt.from_row(r)
             for r in db.fetchall(sql("web_timeline_sends"), {"id": email_id})]
    entities = ([("email", email_id)] + [("job", j.id) for j in jobs]
                + [("draft", d.id) for d in drafts] + [("send_attempt", s.id) for s in sends])
    events: list[AuditEntry] = []
    with db.transaction() as cur:
        for kind, ident in entities:
            events += AuditEntry.from_rows(
                cur.fetchall(sql("web_audit_of_entity"), {"type": kind, "id": str(ident)}))
    events.sort(key=lambda e: (e.at, e.id))
    return MailTimeline(MailView.from_row(row), jobs, drafts, sends, events)


def deleted_mail_events(svc: ServiceContext, email_id: int) -> list[AuditEntry]:
    """What the audit log still says about a mail that no longer exists: its own events and
    the retention batch events that deleted it (their detail names it); oldest first. Empty
    for an id that never was a mail."""
    from ..privacy.retention import erased_in

    events = AuditEntry.from_rows(svc.db.fetchall(sql("web_audit_of_entity"),
                                                  {"type": "email", "id": str(email_id)}))
    events += erased_in(svc, email_id)
    return sorted(events, key=lambda e: (e.at, e.id))


def search_audit(svc: ServiceContext, entity_type: str | None = None, entity_id: str | None = None,
                 event: str | None = None, actor: str | None = None,
                 since: datetime | str | None = None, until: datetime | str | None = None,
                 limit: int = 200, zone: tzinfo = UTC) -> list[AuditEntry]:
    """Newest first. ``actor`` matches as a prefix; ``since``/``until`` are ISO times, read
    in ``zone`` (the reader's time zone, as the page shows every time) unless they carry an
    offset of their own."""
    params = {
        "entity_type": entity_type or None, "entity_id": entity_id or None,
        "event": event or None, "actor": _like_prefix(actor) if actor else None,
        "since": _time(since, "since", zone), "until": _time(until, "until", zone),
        "limit": max(1, min(int(limit), 1000)),
    }
    return AuditEntry.from_rows(svc.db.fetchall(sql("web_audit_search"), params))


def event_names(svc: ServiceContext) -> list[str]:
    return [r["event"] for r in svc.db.fetchall(sql("web_audit_event_names"))]


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _time(value: datetime | str | None, name: str, zone: tzinfo) -> datetime | None:
    """An ISO time as the database stores it: UTC without tzinfo."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value  # a caller's datetime is UTC without tzinfo already
    try:
        parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError as e:
        raise BadInputError(f"{name}: {value!r} is not a time like 2026-11-30T09:00") from e
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    return parsed.astimezone(UTC).replace(tzinfo=None)
