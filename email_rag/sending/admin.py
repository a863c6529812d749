"""The send decision: what an admin decides about a send attempt whose outcome is unknown.

An ``unknown`` attempt is never resent automatically, and never by a job retry
(``failed retry`` refuses it and points here). An admin checks (the customer's
inbox, the relay's logs) and decides:

| decision | attempt | draft | mail | queue entry |
|---|---|---|---|---|
| ``mark_sent`` (it arrived) | sent (verified_by admin: "marked sent by X, not verified") | sent | sent | unchanged |
| ``resend`` (it did not arrive) | pending, same Message-ID | approved | approved | queued again |
| ``give_up`` (send nothing more) | failed (verified_by admin) | failed | resolved, with the note | unchanged |

Any other status of the attempt is refused (``TransitionRefused``), saying which it is.
A deadlock or lock wait timeout repeats the decision's transaction at once (``busy``).

A resend is refused (``DeliveryEvidenceError``, nothing changed) while there is evidence
that the reply may have arrived - the whole message was handed to the relay and only its
answer was lost, a late worker saw a 250, the send journal holds a 250, or the Sent folder
shows the Message-ID now - unless the admin confirms with ``despite_evidence`` (CLI
``--despite-evidence``); the evidence is listed and audited with the decision.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..core.actors import person
from ..core.errors import BadInputError, PermanentError
from ..core.records import Job, SendAttempt
from ..core.routing import job_key
from ..core.states import JobKind, SendStatus, SendVerifiedBy
from ..db import sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy
from ..jobs.dispatch import enqueue
from . import rules
from .journal import SendJournal

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)


def delivery_evidence(svc: ServiceContext, attempt: SendAttempt) -> list[str]:
    """What speaks for delivery of an attempt whose outcome is unknown (empty: nothing)."""
    found: list[str] = []
    for e in svc.db.fetchall(sql("audit_of_entity"), {"type": "send_attempt",
                                                      "id": str(attempt.id)}):
        if e["event"] == "send_outcome_unknown":
            found.append(f"{e['at']}: the whole message was handed to the relay and its "
                         "answer was lost (timeout or dropped connection after the body)")
        elif e["event"] == "late_outcome" and '"wanted": "sent"' in (e["detail"] or ""):
            found.append(f"{e['at']}: a late worker saw the relay accept it")
    if str(attempt.smtp_response or "").startswith("250"):
        found.append(f"the relay answered: {attempt.smtp_response}")
    if SendJournal(svc.settings.send_journal_dir).get(attempt.id, attempt.message_id):
        found.append("this host's send journal holds the relay's 250 for it")
    mailbox = svc.db.fetchone(sql("sends_mailbox_of_attempt"), {"id": attempt.id})
    if mailbox is not None and svc.settings.reconcile_sent_folder:
        try:
            folder = svc.sent_folder(mailbox["name"])
            try:
                if folder.contains(attempt.message_id):
                    found.append(f"{attempt.message_id} is in the Sent folder now")
            finally:
                getattr(folder, "close", lambda: None)()
        except Exception as e:  # noqa: BLE001 - evidence is best effort; say it was not checked
            log.warning("Sent folder not searched for attempt %s: %s", attempt.id, e)
    return found


def list_attempts(svc: ServiceContext, status: str | None = None,
                  limit: int = 200) -> list[SendAttempt]:
    return [SendAttempt.from_row(r)
            for r in svc.db.fetchall(sql("sends_list"), {"status": status, "limit": limit})]


def get_attempt(svc: ServiceContext, attempt_id: int) -> SendAttempt | None:
    return svc.stores.rows_of(svc.db).send(attempt_id)


def resolve_unknown(svc: ServiceContext, attempt_id: int, by: str, decision: str, note: str = "",
                    despite_evidence: bool = False) -> str:
    """decision: 'mark_sent', 'resend' or 'give_up' (``rules.send_decision``). Returns the
    new attempt status."""
    if decision not in rules.DECISIONS:
        raise BadInputError("decision must be mark_sent, resend or give_up")
    by = person(by)
    evidence: list[str] = []
    if decision == "resend":
        seen = get_attempt(svc, attempt_id)
        if seen is not None and seen.status == SendStatus.UNKNOWN:
            evidence = delivery_evidence(svc, seen)
            rules.check_resend(seen, evidence, despite_evidence)
    send_to, job = repeated_when_busy(f"admin_{decision}", by, "send_attempt", attempt_id,
                                      lambda repeats: _decide(svc, attempt_id, by, decision,
                                                              note, evidence, repeats))
    if job is not None:
        enqueue(svc, [job], by)
    return str(send_to)


def _decide(svc: ServiceContext, attempt_id: int, by: str, decision: str, note: str,
            evidence: list[str], repeats: list[AuditEvent]) -> tuple[SendStatus, Job | None]:
    """The decision's transaction (repeated when busy): the attempt's new status and the
    send job queued again (a resend)."""
    reason = f"admin {decision}: {note}"[:2000]
    stores = svc.stores
    job: Job | None = None
    with svc.db.transaction() as cur:
        attempt = stores.sends.locked(cur, attempt_id)
        if attempt is None:
            raise PermanentError(f"send_attempt {attempt_id} does not exist")
        stores.rows_of(cur).audit(repeats)
        send_to, draft_to, mail_to = rules.send_decision(attempt, decision)
        stores.sends.move(cur, attempt_id, send_to, actor=by, event=f"admin_{decision}",
                          query="sends_move", row=attempt,
                          detail={"note": note, **({"evidence": evidence} if evidence else {})},
                          error=reason, response=None, reconciled=0, accepted_at=None,
                          verified_by=None if decision == "resend" else str(SendVerifiedBy.ADMIN),
                          decided_by=by)
        draft = stores.drafts.locked(cur, attempt.draft_id)
        if draft is None:
            raise PermanentError(f"draft {attempt.draft_id} does not exist")
        if draft_to is not None:
            stores.drafts.move(cur, draft.id, draft_to, actor=by, row=draft, reason=reason)
        if draft.source != "forward":  # a forward's outcome is not the case's
            stores.mails.move(cur, draft.email_id, mail_to, actor=by, reason=reason,
                              detail={"send_attempt": attempt_id})
        if decision == "resend":
            row = cur.fetchone(sql("jobs_by_key_for_update"),
                               {"job_key": job_key(JobKind.SEND_DRAFT, draft.id)})
            if row is not None:
                job = svc.jobs.requeue(cur, Job.from_row(row), by, "admin_resend",
                                       detail={"send_attempt": attempt_id})
    return send_to, job
