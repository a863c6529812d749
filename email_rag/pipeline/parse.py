"""The parse step: full MIME parse of the raw mail the poller stored.

Pure and repeatable: it reads ``emails.raw`` (``ctx.raw``: the runner read it with the
mail at the start of the run; else through its own query) and returns the columns to set;
a repeat after a crash yields the same result. It never raises on bad input
(``email_rag.mail.mime`` never does).

  parse result | mail status          | later steps | index_status
  -------------|----------------------|-------------|-------------
  ok / partial | unchanged (received) | run         | unchanged
  too_large    | manual (a human looks at the headers-only mail) | stop | skipped
  failed       | failed (raw kept, reason in parse_error)         | stop | skipped

A partial parse is audited (``parse_degraded``) with its reason, so an admin
can see why a body looks odd.
"""

from __future__ import annotations

from ..core.states import IndexStatus, MailStatus, ParseStatus
from ..db import sql
from ..mail import mime
from .contract import StepContext, StepOutcome


def run(ctx: StepContext) -> StepOutcome:
    email = ctx.email
    raw = ctx.raw
    if raw is None:
        row = ctx.services.db.fetchone(sql("ingest_email_raw"), {"id": ctx.email_id})
        raw = bytes((row or {}).get("raw") or b"")
    settings = ctx.services.settings
    size = int(email.raw_size or len(raw))
    parsed = mime.parse_mail(
        raw, size=size,
        headers_only=email.parse_status == ParseStatus.TOO_LARGE,
        max_mail_bytes=settings.max_mail_bytes,
        max_attachment_bytes=settings.max_attachment_bytes,
    )
    status = parsed.parse_status
    updates = {
        "body_text": parsed.body_text,
        "body_html": parsed.body_html,
        "attachments": parsed.attachments_json(),
        "attachment_text": parsed.attachment_text,
        "parse_status": str(status),
        "parse_error": parsed.reason,
    }
    if parsed.headers.ok and parsed.headers.sent_at and not email.sent_at:
        updates["sent_at"] = parsed.headers.sent_at
    detail = {
        "parse_status": str(status),
        "text_chars": len(parsed.body_text or ""),
        "html": parsed.body_html is not None,
        "attachments": len(parsed.attachments),
        "attachments_too_large": sum(1 for a in parsed.attachments if a.too_large),
        "attachment_text_chars": len(parsed.attachment_text or ""),
    }
    if parsed.reason:
        detail["reason"] = parsed.reason
    outcome = StepOutcome(detail=detail, email_updates=updates)
    if status == ParseStatus.PARTIAL:
        outcome.events.append(ctx.event("parse_degraded", {"reason": parsed.reason}))
    elif status in (ParseStatus.FAILED, ParseStatus.TOO_LARGE):
        updates["index_status"] = str(IndexStatus.SKIPPED)
        outcome.stop = True
        if status == ParseStatus.FAILED:
            outcome.mail_status = MailStatus.FAILED
            outcome.status_reason = f"unparseable: {parsed.reason}"
        else:
            outcome.mail_status = MailStatus.MANUAL
            outcome.status_reason = f"too large to process automatically: {parsed.reason}"
    return outcome
