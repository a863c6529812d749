"""Admin decisions on send attempts whose outcome is unknown.

An ``unknown`` attempt is never resent automatically. An admin checks (the
customer's inbox, the relay's logs) and either marks it sent, or allows one
resend (the attempt goes back to pending and its job is queued again; the
Message-ID stays the same, so a receiver that already has it can drop the copy).
"""

from __future__ import annotations

from typing import Any

from ..app import Services
from ..audit import AuditEvent, write_events
from ..db import sql
from ..errors import PermanentError
from ..states import DraftStatus, JobKind, MailStatus, SendStatus


def list_attempts(svc: Services, status: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    return svc.db.fetchall(
        "SELECT s.id, s.draft_id, d.email_id, s.status, s.tries, s.message_id, s.recipients,"
        " s.last_error, s.updated_at FROM send_attempts s JOIN drafts d ON d.id = s.draft_id"
        " WHERE (%s IS NULL OR s.status = %s) ORDER BY s.id LIMIT %s", (status, status, limit))


def resolve_unknown(svc: Services, attempt_id: int, by: str, decision: str, note: str = "") -> str:
    """decision: 'mark_sent' or 'resend'. Returns the new attempt status."""
    if decision not in ("mark_sent", "resend"):
        raise PermanentError("decision must be mark_sent or resend")
    by = by if ":" in by else f"user:{by}"
    with svc.db.transaction() as cur:
        attempt = cur.fetchone("SELECT * FROM send_attempts WHERE id = %s FOR UPDATE", (attempt_id,))
        if attempt is None:
            raise PermanentError(f"send attempt {attempt_id} does not exist")
        if attempt["status"] != SendStatus.UNKNOWN:
            raise PermanentError(f"send attempt {attempt_id} is {attempt['status']}, not unknown")
        draft = cur.fetchone(sql("drafts_get_for_update"), {"id": attempt["draft_id"]})
        mail = cur.fetchone("SELECT id, status FROM emails WHERE id = %s FOR UPDATE",
                            (draft["email_id"],))
        new = SendStatus.SENT if decision == "mark_sent" else SendStatus.PENDING
        cur.execute(sql("sends_set_status"), {"id": attempt_id, "status": new,
                                               "error": f"admin {decision}: {note}"[:2000],
                                               "response": None, "reconciled": 0})
        events = [AuditEvent(by, "send_attempt", attempt_id, f"admin_{decision}",
                             SendStatus.UNKNOWN, new, detail={"note": note})]
        if decision == "mark_sent":
            cur.execute("UPDATE drafts SET status = %s WHERE id = %s", (DraftStatus.SENT, draft["id"]))
            mail_status = MailStatus.SENT
        else:
            cur.execute(sql("sends_requeue_job"), {"job_key": f"{JobKind.SEND_DRAFT}:{draft['id']}"})
            mail_status = MailStatus.APPROVED
        cur.execute("UPDATE emails SET status = %s, status_reason = %s WHERE id = %s",
                    (mail_status, f"admin {decision}: {note}"[:2000], mail["id"]))
        events.append(AuditEvent(by, "email", mail["id"], "state_changed", mail["status"],
                                 mail_status, detail={"send_attempt": attempt_id}))
        write_events(cur, events)
        job = cur.fetchone(sql("jobs_by_key"), {"job_key": f"{JobKind.SEND_DRAFT}:{draft['id']}"})
    if decision == "resend" and job:
        from .review import _enqueue

        _enqueue(svc, job)
    return str(new)
