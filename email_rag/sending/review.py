"""Staff review of drafts: list, show, approve, reject. The CLI and the web UI call these.

Approval is exactly-once: the draft row is locked (SELECT ... FOR UPDATE), so
two terminals or a double click give one approval; the send attempt is unique
per draft and its Message-ID is fixed here, before the first try.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.actors import person
from ..core.errors import (
    AttachmentNotFoundError,
    BadInputError,
    DraftConflictError,
    DraftNotFoundError,
    StateRefused,
)
from ..core.records import Job
from ..core.states import DraftStatus, JobKind, MailStatus, SendStatus
from ..db import sql
from ..db.audit import AuditEvent, write_events
from ..jobs.dispatch import enqueue
from ..mail.addresses import stored_reply
from ..mail.mime import attachment_bytes, find_part, human_size
from .compose import new_message_id

if TYPE_CHECKING:
    from ..wiring.services import Services


def seen_token(draft: dict[str, Any]) -> str:
    """The version of a draft an agent saw: its last change time (any write changes it)."""
    return str(draft["updated_at"].isoformat() if hasattr(draft["updated_at"], "isoformat")
               else draft["updated_at"])


def check_seen(draft: dict[str, Any], seen: str | None) -> None:
    """Optimistic concurrency for approve/reject: ``seen`` is the version the agent's page
    showed (None: no check, e.g. the CLI). Called with the row locked."""
    if seen is not None and seen_token(draft) != seen:
        raise DraftConflictError(draft)


@dataclass
class ReviewResult:
    draft_id: int
    action: str  # approved | already_approved | rejected | already_rejected
    status: str
    send_attempt_id: int | None = None
    message_id: str | None = None
    job_id: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def show(svc: Services, draft_id: int) -> dict[str, Any]:
    db = svc.db
    draft = db.fetchone(sql("drafts_get"), {"id": draft_id})
    if draft is None:
        raise DraftNotFoundError(f"draft {draft_id} does not exist")
    mail = db.fetchone(sql("emails_with_mailbox"), {"id": draft["email_id"]})
    thread = db.fetchall(sql("emails_thread_others"), {
        "mailbox_id": mail["mailbox_id"], "thread_key": mail["thread_key"],
        "id": mail["id"]}) if mail.get("thread_key") else []
    send = db.fetchone(sql("sends_by_draft"), {"draft_id": draft_id})
    stored = json.loads(draft["sources"]) if draft.get("sources") else []
    sources = stored.get("sources", []) if isinstance(stored, dict) else stored
    newer = _newer_inbound(db, mail, draft["created_at"])
    mail.pop("raw", None)
    attachments = json.loads(mail["attachments"]) if mail.get("attachments") else []
    for a in attachments:
        a["size_text"] = human_size(int(a.get("size") or 0))
    return {"draft": draft, "mail": mail, "thread": thread, "sources": sources,
            "send_attempt": send, "newer_inbound": newer, "reply": stored_reply(mail),
            "attachments": attachments}


def attachment(svc: Services, draft_id: int, n: int, by: str) -> tuple[dict[str, Any], bytes]:
    """Attachment ``n`` (1-based, as listed on the draft page) of a draft's mail: its
    recorded metadata and its decoded bytes, read from the stored raw mail by the part
    path the parse step recorded and checked against the recorded SHA-256. Audited
    (``attachment_downloaded``)."""
    row = svc.db.fetchone(sql("drafts_mail_attachments"), {"id": draft_id})
    if row is None:
        raise DraftNotFoundError(f"draft {draft_id} does not exist")
    listed = json.loads(row["attachments"]) if row.get("attachments") else []
    if not 1 <= n <= len(listed):
        raise AttachmentNotFoundError(f"mail {row['id']} has no attachment {n}")
    info = listed[n - 1]
    part = find_part(bytes(row["raw"] or b""), str(info.get("part", "")))
    if part is None:
        raise AttachmentNotFoundError(f"attachment {n} of mail {row['id']} is not in the "
                                      "stored mail (headers only?)")
    data = attachment_bytes(part)
    if info.get("sha256") and hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise AttachmentNotFoundError(f"attachment {n} of mail {row['id']} does not match the "
                                      "recorded checksum; not served")
    svc.audit.record(AuditEvent(person(by), "email", row["id"], "attachment_downloaded",
                                detail={"draft_id": draft_id, "attachment": n,
                                        "filename": info.get("filename"),
                                        "size": len(data)}))
    return info, data


def _newer_inbound(db_or_cur: Any, mail: dict[str, Any], since: Any) -> dict[str, Any] | None:
    if not mail.get("thread_key") or since is None:
        return None
    return db_or_cur.fetchone(sql("drafts_newer_inbound"), {
        "mailbox_id": mail["mailbox_id"], "thread_key": mail["thread_key"],
        "email_id": mail["id"], "since": since})


def approve(svc: Services, draft_id: int, by: str, edited_body: str | None = None,
            seen: str | None = None) -> ReviewResult:
    by = person(by)
    stores = svc.stores
    with svc.db.transaction() as cur:
        draft = cur.fetchone(sql(stores.drafts.lock_query), {"id": draft_id})
        if draft is None:
            raise DraftNotFoundError(f"draft {draft_id} does not exist")
        check_seen(draft, seen)
        # the draft's transition table decides: only a pending or stale draft is approved
        if not stores.drafts.allowed(draft["status"], DraftStatus.APPROVED):
            if draft["status"] in (DraftStatus.APPROVED, DraftStatus.SENT):
                send = cur.fetchone(sql("sends_by_draft"), {"draft_id": draft_id})
                return ReviewResult(draft_id, "already_approved", draft["status"],
                                    send and send["id"], send and send["message_id"],
                                    detail={"approved_by": draft["approved_by"]})
            raise StateRefused(f"draft {draft_id} is {draft['status']}; only a pending or "
                                  "stale draft can be approved")
        mail = cur.fetchone(sql("emails_get_whole_for_update"), {"id": draft["email_id"]})
        reply = stored_reply(mail)
        if not reply.ok:
            raise BadInputError(f"nobody to send the reply to ({reply.rule}); nothing approved")
        body_final = draft["body_draft"] if edited_body is None else edited_body
        if not body_final.strip():
            raise BadInputError("the reply text is empty; nothing approved")
        diff = _diff(draft["body_draft"], body_final)
        if draft.get("check_flags") and not diff:
            raise StateRefused(
                f"draft {draft_id} is FLAGGED ({draft['check_flags'][:200]}); it cannot be "
                "approved unchanged: edit the reply (or regenerate or reject it)")
        mailbox = cur.fetchone(sql("mailboxes_name"), {"id": mail["mailbox_id"]})
        events: list[AuditEvent] = []  # written in one round trip before the commit
        stores.drafts.move(cur, draft_id, DraftStatus.APPROVED, actor=by, event="approved",
                           query="drafts_approve", row=draft, events=events,
                           detail={"edited": bool(diff), "mailbox": mailbox and mailbox["name"]},
                           by=by, body_final=body_final, edit_diff=diff or None)
        send, created = _send_attempt(svc, cur, draft_id, reply.addr, by)
        job = _send_job(svc, cur, mail["id"], draft_id, by)
        stores.mails.move(cur, mail["id"], MailStatus.APPROVED, actor=by, row=mail,
                          detail={"draft_id": draft_id}, events=events)
        if created:
            events.append(AuditEvent(
                by, "send_attempt", send["id"], "created", None, send["status"],
                detail={"draft_id": draft_id, "message_id": send["message_id"],
                        "job_id": job.id}))
        write_events(cur, events)
    enqueue(svc, [job], by)
    return ReviewResult(draft_id, "approved", DraftStatus.APPROVED, send["id"],
                        send["message_id"], job.id, {"edited": bool(diff)})


def _send_attempt(svc: Services, cur: Any, draft_id: int, recipient: str,
                  by: str) -> tuple[dict[str, Any], bool]:
    """The draft's one send attempt: created with its Message-ID on the first approval;
    an attempt the relay refused (the draft came back to review) is armed again, one that
    bounced with a new Message-ID."""
    message_id = new_message_id(draft_id, svc.settings.message_id_domain)
    created = cur.execute(sql(svc.stores.sends.insert_query),
                          {"draft_id": draft_id, "message_id": message_id,
                           "recipients": recipient}) == 1
    send = cur.fetchone(sql("sends_by_draft_for_update"), {"draft_id": draft_id})
    if send["status"] == SendStatus.FAILED:
        svc.stores.sends.move(cur, send["id"], SendStatus.PENDING, actor=by, event="rearmed",
                              query="sends_rearm", row=send, recipients=recipient,
                              detail={"draft_id": draft_id, "why": "approved again after "
                                      "the relay refused it"})
        send = {**send, "status": SendStatus.PENDING}
    elif send["status"] == SendStatus.BOUNCED:  # the copy that bounced is in the Sent folder
        # under its Message-ID: a new one, so reconciliation can never mistake it for this send
        svc.stores.sends.move(cur, send["id"], SendStatus.PENDING, actor=by, event="rearmed",
                              query="sends_rearm_new_id", row=send, recipients=recipient,
                              message_id=message_id,
                              detail={"draft_id": draft_id, "why": "approved again after "
                                      "the reply bounced", "old_message_id": send["message_id"],
                                      "message_id": message_id})
        send = {**send, "status": SendStatus.PENDING, "message_id": message_id}
    return send, created


def _send_job(svc: Services, cur: Any, email_id: int, draft_id: int, by: str) -> Job:
    """The draft's send_draft entry, queued: created, or a fresh cycle of the existing one
    (even while its previous run is finishing: see ``JobStore.requeue``)."""
    return svc.jobs.queue_work(cur, JobKind.SEND_DRAFT, draft_id, actor=by,
                               event="queued_for_send", queue=svc.settings.queue_name,
                               email_id=email_id, draft_id=draft_id,
                               detail={"draft_id": draft_id})


def reject(svc: Services, draft_id: int, by: str, reason: str,
           seen: str | None = None) -> ReviewResult:
    by = person(by)
    if not reason.strip():
        raise BadInputError("a reason is required to reject a draft")
    with svc.db.transaction() as cur:
        draft = cur.fetchone(sql("drafts_get_for_update"), {"id": draft_id})
        if draft is None:
            raise DraftNotFoundError(f"draft {draft_id} does not exist")
        check_seen(draft, seen)
        if draft["status"] == DraftStatus.REJECTED:
            return ReviewResult(draft_id, "already_rejected", draft["status"])
        if draft["status"] not in (DraftStatus.PENDING_REVIEW, DraftStatus.STALE):
            raise StateRefused(f"draft {draft_id} is {draft['status']}; only a pending or "
                                  "stale draft can be rejected")
        svc.stores.drafts.move(cur, draft_id, DraftStatus.REJECTED, actor=by, event="rejected",
                               query="drafts_reject", row=draft, detail={"reason": reason},
                               by=by, reject_reason=reason[:2000])
        svc.stores.mails.move(cur, int(draft["email_id"]), MailStatus.REJECTED, actor=by,
                              reason=reason[:2000], detail={"draft_id": draft_id})
    return ReviewResult(draft_id, "rejected", DraftStatus.REJECTED)


def _diff(before: str, after: str) -> str:
    if before == after:
        return ""
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        "draft", "sent", n=1))


