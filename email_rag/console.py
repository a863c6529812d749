"""The failure console's domain: what needs a human, and the admin's retry/resolve.

The web UI (and anything else) calls these; the decisions themselves are the
queue's (``JobStore.retry`` / ``JobStore.resolve``) and the sender's
(``sending.admin.resolve_unknown``). What this module adds: one list across
mails, queue entries, index state and send attempts, bulk retry that also puts
the entries on Redis, and resolving a mail that has no open queue entry.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| retry of an entry that is not retryable (done, running, gone) | no | yes: refused, listed as refused | - |
| some entries of a bulk retry refused | - | yes: the others are queued | the result names both lists |
| Redis down after a retry | yes | yes: rows queued in MariaDB | re-dispatch enqueues them (result says enqueued=False) |
| resolve of a mail whose send outcome is unknown | no | yes: refused | decide the send attempt (mark sent / resend) |
| resolve with an empty note | no | yes: refused | give a note |
| resolve of a mail with nothing open | no | yes: refused, nothing changed | - |
| MariaDB down | yes | yes: each retry/resolve is one transaction | ask again; a repeat is refused or a no-op |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .app import Services
from .audit import AuditEvent, write_events
from .db import sql
from .errors import BadInputError, PermanentError, QueueUnavailableError
from .jobs import JobStore
from .states import JobState, MailStatus, SendStatus
from .worker import retry_policy

# Kinds of attention, in the order the console shows them.
KINDS = ("failed", "manual", "dead", "send_unknown", "retrying", "partially_indexed")


@dataclass
class RetryResult:
    retried: list[int] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)
    enqueued: bool = False


def _store(svc: Services) -> JobStore:
    return JobStore(svc.db, retry_policy(svc.settings))


def attention_items(svc: Services, kind: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """One row per mail that needs a human or is degraded, oldest first.

    Each row has ``kinds`` (why it is listed), ``last_error``, ``attempts`` and which
    actions apply: ``can_retry`` (job id), ``can_resolve``, ``can_decide_send``.
    """
    rows = svc.db.fetchall(sql("web_attention_items"), {"limit": limit})
    items = [_describe(r) for r in rows]
    if kind:
        items = [i for i in items if kind in i["kinds"]]
    return items


def counts_by_kind(items: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(1 for i in items if k in i["kinds"]) for k in KINDS}


def _describe(r: dict[str, Any]) -> dict[str, Any]:
    kinds = []
    if r["status"] in (MailStatus.FAILED, MailStatus.MANUAL):
        kinds.append(str(r["status"]))
    if r["job_state"] == JobState.DEAD and r["status"] != MailStatus.RESOLVED:
        kinds.append("dead")
    if r["send_status"] == SendStatus.UNKNOWN:
        kinds.append("send_unknown")
    if r["job_state"] == JobState.FAILED:
        kinds.append("retrying")
    if r["index_status"] == "partially_indexed":
        kinds.append("partially_indexed")
    send_unknown = "send_unknown" in kinds
    if send_unknown:
        last_error, attempts = r["send_error"], r["send_tries"]
    elif r["job_state"] in (JobState.DEAD, JobState.FAILED):
        last_error, attempts = r["job_error"] or r["status_reason"], r["attempts"]
    else:
        last_error, attempts = r["status_reason"] or r["job_error"], r["attempts"]
    if not last_error and r["index_status"] == "partially_indexed":
        last_error = f"missing in: {r['index_missing'] or 'unknown store'}"
    open_mail = r["status"] in (MailStatus.FAILED, MailStatus.MANUAL)
    can_retry = bool(r["job_id"]) and not send_unknown and (
        r["job_state"] in (JobState.DEAD, JobState.FAILED)
        or (r["job_state"] == JobState.DONE and open_mail))
    can_resolve = not send_unknown and (
        open_mail or r["job_state"] in (JobState.DEAD, JobState.FAILED))
    return {**r, "kinds": kinds, "last_error": last_error, "attempts": attempts,
            "can_retry": can_retry, "can_resolve": can_resolve, "can_decide_send": send_unknown}


def retry_jobs(svc: Services, job_ids: list[int], actor: str, note: str = "") -> RetryResult:
    """Admin retry of several entries: each resumes at its first unconfirmed step."""
    store = _store(svc)
    result = RetryResult()
    for job_id in dict.fromkeys(job_ids):  # once each, in the given order
        (result.retried if store.retry(job_id, actor, note) else result.refused).append(job_id)
    queued = [row for i in result.retried
              if (row := svc.db.fetchone(sql("web_jobs_by_ids_queue"), {"id": i}))]
    try:
        svc.queue.enqueue([(r["queue"], r["id"]) for r in queued])
        result.enqueued = True
    except QueueUnavailableError:
        result.enqueued = False  # rows are queued in MariaDB; re-dispatch enqueues them
    return result


def resolve_mail(svc: Services, email_id: int, actor: str, note: str) -> dict[str, Any]:
    """Close a failed/manual mail by hand: its dead/failed entries are resolved
    (``JobStore.resolve``); a mail without such an entry is marked resolved here."""
    note = (note or "").strip()
    if not note:
        raise BadInputError("a note is required to resolve (say what was done)")
    db = svc.db
    mail = db.fetchone(sql("emails_get"), {"id": email_id})
    if mail is None:
        raise PermanentError(f"mail {email_id} does not exist")
    if db.fetchall(sql("web_mail_unknown_sends"), {"email_id": email_id}):
        raise PermanentError(f"mail {email_id} has a send attempt with an unknown outcome: "
                             "decide it (mark sent or resend) instead; nothing changed")
    store = _store(svc)
    resolved_jobs = []
    for job in db.fetchall(sql("web_mail_open_jobs"), {"email_id": email_id}):
        if store.resolve(job["id"], actor, note):
            resolved_jobs.append(job["id"])
    mail_resolved = False
    with db.transaction() as cur:
        row = cur.fetchone(sql("emails_get_for_update"), {"id": email_id})
        if cur.execute(sql("web_mail_resolve"), {"id": email_id, "note": note[:4000]}) == 1:
            mail_resolved = True
            write_events(cur, [AuditEvent(actor, "email", email_id, "state_changed",
                                          row["status"], MailStatus.RESOLVED,
                                          detail={"note": note, "reason": "admin resolve"})])
    if not resolved_jobs and not mail_resolved:
        raise PermanentError(f"mail {email_id} is {mail['status']} with no failed or dead queue "
                             "entry: nothing to resolve; nothing changed")
    status = db.fetchone(sql("emails_get"), {"id": email_id})["status"]
    return {"email_id": email_id, "resolved_jobs": resolved_jobs, "mail_status": status}


def review_filters(svc: Services) -> dict[str, list[str]]:
    """Mailbox names and categories for the review queue's filters."""
    return {"mailboxes": [r["name"] for r in svc.db.fetchall(sql("web_mailbox_names"))],
            "categories": [r["category"] for r in svc.db.fetchall(sql("web_categories"))]}
