"""The send decision: what an admin decides about a send attempt whose outcome is unknown.

An ``unknown`` attempt is never resent automatically, and never by a job retry
(``failed retry`` refuses it and points here). An admin checks (the customer's
inbox, the relay's logs) and decides:

| decision | attempt | draft | mail | queue entry |
|---|---|---|---|---|
| ``mark_sent`` (it arrived) | sent | sent | sent | unchanged |
| ``resend`` (it did not arrive) | pending, same Message-ID | approved | approved | queued again |
| ``give_up`` (send nothing more) | failed | failed | resolved, with the note | unchanged |

Any other status of the attempt is refused (``TransitionRefused``), saying which it is.
"""

from __future__ import annotations

from typing import Any

from ..app import Services
from ..db import sql
from ..dispatch import enqueue
from ..errors import PermanentError, TransitionRefused
from ..routing import job_key
from ..states import DraftStatus, JobKind, MailStatus, SendStatus

DECISIONS = {  # decision -> (attempt, draft, mail)
    "mark_sent": (SendStatus.SENT, DraftStatus.SENT, MailStatus.SENT),
    "resend": (SendStatus.PENDING, None, MailStatus.APPROVED),
    "give_up": (SendStatus.FAILED, DraftStatus.FAILED, MailStatus.RESOLVED),
}


def list_attempts(svc: Services, status: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
    return svc.db.fetchall(sql("sends_list"), {"status": status, "limit": limit})


def resolve_unknown(svc: Services, attempt_id: int, by: str, decision: str, note: str = "") -> str:
    """decision: 'mark_sent', 'resend' or 'give_up'. Returns the new attempt status."""
    if decision not in DECISIONS:
        raise PermanentError("decision must be mark_sent, resend or give_up")
    by = by if ":" in by else f"user:{by}"
    send_to, draft_to, mail_to = DECISIONS[decision]
    reason = f"admin {decision}: {note}"[:2000]
    stores = svc.stores
    job = None
    with svc.db.transaction() as cur:
        attempt = stores.sends.lock(cur, attempt_id)
        if attempt["status"] != SendStatus.UNKNOWN:
            raise TransitionRefused("send_attempt", attempt_id, attempt["status"], send_to,
                                    f"it is {attempt['status']}, not unknown: there is "
                                    "nothing to decide")
        stores.sends.move(cur, attempt_id, send_to, actor=by, event=f"admin_{decision}",
                          query="sends_move", row=attempt, detail={"note": note},
                          error=reason, response=None, reconciled=0)
        draft = stores.drafts.lock(cur, attempt["draft_id"])
        if draft_to is not None:
            stores.drafts.move(cur, draft["id"], draft_to, actor=by, row=draft, reason=reason)
        stores.mails.move(cur, int(draft["email_id"]), mail_to, actor=by, reason=reason,
                          detail={"send_attempt": attempt_id})
        if decision == "resend":
            job = cur.fetchone(sql("jobs_by_key_for_update"),
                               {"job_key": job_key(JobKind.SEND_DRAFT, draft["id"])})
            if job is not None:
                svc.jobs.requeue(cur, job, by, "admin_resend", detail={"send_attempt": attempt_id})
                job = cur.fetchone(sql("jobs_get"), {"id": job["id"]})
    if job is not None:
        enqueue(svc, [job], by)
    return str(send_to)
