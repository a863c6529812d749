"""One mail as staff and admins read it on the desk, and its raw source for the mailbox's staff
(audited)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import MAIL_MISSING, NO_SOURCE, DraftNotFoundError
from ..core.rows import FromRow
from ..db import sql
from ..db.audit import AuditEvent
from ..sending.review import listed_attachments
from .access import require_mail

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


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
