"""Staff review of drafts: list, show, approve, reject. The CLI and the web UI call these.

Approval is exactly-once: the draft row is locked (SELECT ... FOR UPDATE), so
two terminals or a double click give one approval; the send attempt is unique
per draft and its Message-ID is fixed here, before the first try.

Each action reads its records locked (typed, through ``Stores.rows_of``), asks the pure
decisions of ``sending.rules`` (may it be approved, with which text, is it a repeat) and
writes through the stores: read -> rules -> write.
"""

from __future__ import annotations

import binascii
import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.actors import person
from ..core.errors import (
    ATTACHMENT_CHANGED,
    ATTACHMENT_NOT_STORED,
    DRAFT_MISSING,
    MAIL_OF_DRAFT_MISSING,
    NO_ATTACHMENT,
    NO_SEND_ATTEMPT,
    AttachmentNotFoundError,
    DraftNotFoundError,
)
from ..core.jsonvalue import JsonObject
from ..core.records import Draft, InboundRef, Job, RecordedExample, ReplyMail, SendAttempt
from ..core.rows import FromRow
from ..core.states import DraftStatus, JobKind, MailStatus, ReviewOutcome, SendStatus
from ..db import examples, sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy
from ..jobs.dispatch import enqueue
from ..mail import parts
from ..mail.addresses import ReplyChoice
from ..mail.mime import attachment_bytes, find_part, human_size
from . import rules
from .compose import new_message_id

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext


def seen_token(draft: Draft) -> str:
    """The version of a draft an agent saw: its last change time (any write changes it)."""
    return draft.seen


@dataclass
class ReviewResult:
    draft_id: int
    action: str  # approved | already_approved | rejected | already_rejected
    status: str
    send_attempt_id: int | None = None
    message_id: str | None = None
    job_id: int | None = None
    detail: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class ListedAttachment:
    """An attachment as the parse step listed it (the mail's ``attachments`` JSON), with
    its size for people."""

    filename: str | None = None
    content_type: str | None = None
    size: int = 0
    size_text: str = ""
    part: str = ""
    sha256: str | None = None
    text_status: str | None = None  # extracted / why there is no text
    too_large: bool = False


def listed_attachments(listing: Any) -> list[ListedAttachment]:
    """The JSON listing of a mail's ``attachments`` column (entries that are not objects
    are skipped)."""
    listed = json.loads(listing) if listing else []
    return [ListedAttachment(a.get("filename"), a.get("content_type"), int(a.get("size") or 0),
                             human_size(int(a.get("size") or 0)), str(a.get("part") or ""),
                             a.get("sha256"), a.get("text_status"), bool(a.get("too_large")))
            for a in listed if isinstance(a, dict)]


@dataclass(frozen=True)
class DraftMail(FromRow):
    """The mail a draft answers, for reading (``drafts_show_mail``: never the raw bytes)."""

    id: int
    status: str
    mailbox_id: int | None = None
    mailbox: str | None = None
    status_reason: str | None = None
    subject: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    to_addrs: str | None = None
    reply_addr: str | None = None
    reply_rule: str | None = None
    received_at: datetime | None = None
    thread_key: str | None = None
    summary: str | None = None
    body_text: str | None = None
    body_html: str | None = None
    category: str | None = None
    language: str | None = None
    priority: str | None = None
    classification_defaulted: bool = False


@dataclass(frozen=True)
class ThreadMail(FromRow):
    """Another mail of the thread (``emails_thread_others``)."""

    id: int
    status: str
    subject: str | None = None
    from_addr: str | None = None
    received_at: datetime | None = None


@dataclass(frozen=True)
class DraftView:
    """A draft with what its page (web) and ``drafts show`` (CLI) show around it."""

    draft: Draft
    mail: DraftMail
    thread: list[ThreadMail]
    sources: list[Any]  # JSON values: the retrieval's sources as stored with the draft
    basis: str | None  # "sources" | "no_source" (email_rag.pipeline.draft); None: older drafts
    trace: list[Any]  # JSON values: each line of the draft's body and its source ref
    reply_mail: ReplyMail  # its status, threading headers and reply decision
    send_attempt: SendAttempt | None
    newer_inbound: InboundRef | None
    reply: ReplyChoice
    attachments: list[ListedAttachment]


def show(svc: ServiceContext, draft_id: int) -> DraftView:
    db = svc.db
    rows = svc.stores.rows_of(db)
    draft = rows.draft(draft_id)
    if draft is None:
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
    found = db.fetchone(sql("drafts_show_mail"), {"id": draft.email_id})
    reply_mail = rows.reply_mail(draft.email_id)
    if found is None or reply_mail is None:
        raise DraftNotFoundError(MAIL_OF_DRAFT_MISSING % {"mail": draft.email_id, "id": draft_id})
    thread = ThreadMail.from_rows(db.fetchall(sql("emails_thread_others"), {
        "mailbox_id": reply_mail.mailbox_id, "thread_key": reply_mail.thread_key,
        "id": reply_mail.id})) if reply_mail.thread_key else []
    stored = json.loads(draft.sources) if draft.sources else []
    sources = stored.get("sources", []) if isinstance(stored, dict) else stored
    basis = stored.get("basis") if isinstance(stored, dict) else None
    trace = stored.get("trace", []) if isinstance(stored, dict) else []
    return DraftView(draft, DraftMail.from_row(found), thread, sources, basis, trace, reply_mail,
                     rows.send_of_draft(draft_id),
                     rows.newer_inbound(reply_mail, draft.created_at),
                     rules.reply_choice(reply_mail), listed_attachments(found["attachments"]))


@dataclass(frozen=True)
class AttachmentSource(FromRow):
    """A mail's stored raw source and its attachment listing (``drafts_mail_attachments``)."""

    id: int
    raw: bytes | None = None
    attachments: Any = None  # the column's JSON text


def attachment(svc: ServiceContext, draft_id: int, n: int,
               by: str) -> tuple[ListedAttachment, bytes]:
    """Attachment ``n`` (1-based, as listed on the draft page) of a draft's mail: its
    recorded metadata and its decoded bytes, read from the stored raw mail by the part
    path the parse step recorded and checked against the recorded SHA-256. Audited
    (``attachment_downloaded``)."""
    found = svc.db.fetchone(sql("drafts_mail_attachments"), {"id": draft_id})
    if found is None:
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
    mail = AttachmentSource.from_row(found)
    listed = listed_attachments(mail.attachments)
    if not 1 <= n <= len(listed):
        raise AttachmentNotFoundError(NO_ATTACHMENT % {"mail": mail.id, "n": n})
    info = listed[n - 1]
    part = find_part(bytes(mail.raw or b""), info.part)
    if part is None:
        raise AttachmentNotFoundError(ATTACHMENT_NOT_STORED % {"n": n, "mail": mail.id})
    data = attachment_bytes(part)
    if info.sha256 and hashlib.sha256(data).hexdigest() != info.sha256:
        raise AttachmentNotFoundError(ATTACHMENT_CHANGED % {"n": n, "mail": mail.id})
    _downloaded(svc, mail.id, draft_id, n, info, len(data), by)
    return info, data


@dataclass(frozen=True)
class Download:
    """An attachment ready to be sent: its listing, its decoded size and its bytes in
    pieces (``pieces()`` may be called once)."""

    info: ListedAttachment
    size: int
    pieces: Callable[[], Iterator[bytes]]
    streamed: bool  # read from MariaDB in pieces (False: the mail was read whole)


@dataclass(frozen=True)
class AttachmentListing(FromRow):
    """A mail's attachment listing and the size of its stored source
    (``drafts_mail_attachment_list``)."""

    id: int
    stored_size: int | None = None
    attachments: Any = None  # the column's JSON text


def download(current: Callable[[], ServiceContext], draft_id: int, n: int, by: str,
             whole_slots: threading.Semaphore) -> Download:
    """Attachment ``n`` of a draft's mail, read from the stored raw mail in pieces of
    ``parts.PIECE`` (``SUBSTRING`` over the LONGBLOB): located, decoded and checked
    against the recorded SHA-256 in a first pass, sent in a second, so at most a piece and
    a line are in memory. A part the piece reader does not follow (``parts.locate`` gives
    None, or its bytes differ from the recorded checksum) is read whole by ``attachment``
    while holding one of ``whole_slots``. Audited (``attachment_downloaded``).
    ``current()``: the calling thread's ServiceContext (the pieces may be sent from another
    thread than the one that checked them)."""
    svc = current()
    found = svc.db.fetchone(sql("drafts_mail_attachment_list"), {"id": draft_id})
    if found is None:
        raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
    mail = AttachmentListing.from_row(found)
    listed = listed_attachments(mail.attachments)
    if not 1 <= n <= len(listed):
        raise AttachmentNotFoundError(NO_ATTACHMENT % {"mail": mail.id, "n": n})
    info = listed[n - 1]

    def read(offset: int, length: int) -> bytes:
        row = current().db.fetchone(sql("emails_raw_piece"), {"id": mail.id, "start": offset + 1,
                                                        "length": length})
        return bytes(row["piece"] or b"") if row else b""

    where = parts.locate(read, int(mail.stored_size or 0), info.part)         if mail.stored_size else None
    if where is not None:
        digest, size = hashlib.sha256(), 0
        try:
            for piece in parts.decoded(read, where):
                digest.update(piece)
                size += len(piece)
        except binascii.Error:
            where = None
        if where is not None and (not info.sha256 or digest.hexdigest() == info.sha256):
            _downloaded(svc, mail.id, draft_id, n, info, size, by)
            located = where
            return Download(info, size, lambda: parts.decoded(read, located), True)
    with whole_slots:
        info, data = attachment(svc, draft_id, n, by)
    view = memoryview(data)
    return Download(info, len(data), lambda: (bytes(view[at:at + parts.PIECE])
                                              for at in range(0, len(view), parts.PIECE)),
                    False)


def _downloaded(svc: ServiceContext, email_id: int, draft_id: int, n: int, info: ListedAttachment,
                size: int, by: str) -> None:
    svc.audit.record(AuditEvent(person(by), "email", email_id, "attachment_downloaded",
                                detail={"draft_id": draft_id, "attachment": n,
                                        "filename": info.filename, "size": size}))


def approve(svc: ServiceContext, draft_id: int, by: str, edited_body: str | None = None,
            seen: str | None = None) -> ReviewResult:
    """Approve the draft (with the agent's ``edited_body``): one transaction, repeated when
    MariaDB rolled it back as busy (``busy``); the send job is put on Redis after it."""
    by = person(by)
    done = repeated_when_busy("approve", by, "draft", draft_id, lambda repeats: _approve(
        svc, draft_id, by, edited_body, seen, repeats))
    if isinstance(done, ReviewResult):
        return done
    send, job, edited, example = done
    enqueue(svc, [job], by)
    examples.embed_recorded(svc.db, svc, example)
    return ReviewResult(draft_id, "approved", DraftStatus.APPROVED, send.id,
                        send.message_id, job.id, {"edited": edited})


def _approve(svc: ServiceContext, draft_id: int, by: str, edited_body: str | None, seen: str | None,
             repeats: list[AuditEvent]
             ) -> ReviewResult | tuple[SendAttempt, Job, bool, RecordedExample | None]:
    """The approval's transaction: the answer to a repeat, or the send attempt, the queued
    send job, whether the body was edited and the example to embed after the commit."""
    stores = svc.stores
    with svc.db.transaction() as cur:
        rows = stores.rows_of(cur)
        draft = stores.drafts.locked(cur, draft_id)
        if draft is None:
            raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
        if rules.already_approved(draft, seen,
                                  stores.drafts.allowed(draft.status, DraftStatus.APPROVED)):
            send = rows.send_of_draft(draft_id)
            rows.audit(repeats)
            return ReviewResult(draft_id, "already_approved", draft.status,
                                send and send.id, send and send.message_id,
                                detail={"approved_by": draft.approved_by})
        mail = rows.reply_mail(draft.email_id, lock=True)
        if mail is None:
            raise DraftNotFoundError(MAIL_OF_DRAFT_MISSING % {"mail": draft.email_id, "id": draft_id})
        ok = rules.approval(draft, rules.reply_choice(mail), edited_body)
        mailbox = rows.mailbox(mail.mailbox_id)
        events: list[AuditEvent] = list(repeats)  # written in one round trip before the commit
        stores.drafts.move(cur, draft_id, DraftStatus.APPROVED, actor=by, event="approved",
                           query="drafts_approve", row=draft, events=events,
                           detail={"edited": bool(ok.diff), "mailbox": mailbox and mailbox[0],
                                   "edit": str(ok.outcome), "edit_distance": ok.distance},
                           by=by, body_final=ok.body_final, edit_diff=ok.diff or None)
        send, created = _send_attempt(svc, cur, draft_id, ok.recipient, by)
        job = _send_job(svc, cur, mail.id, draft_id, by)
        stores.mails.move(cur, mail.id, MailStatus.APPROVED, actor=by, row=mail,
                          detail={"draft_id": draft_id}, events=events)
        example = rows.labelled(mail.id, "approval")
        rows.reviewed(draft_id, ok.outcome, ok.distance, by)
        if created:
            events.append(AuditEvent(
                by, "send_attempt", send.id, "created", None, send.status,
                detail={"draft_id": draft_id, "message_id": send.message_id,
                        "job_id": job.id}))
        rows.audit(events)
    return send, job, bool(ok.diff), example


def _send_attempt(svc: ServiceContext, cur: Any, draft_id: int, recipient: str,
                  by: str) -> tuple[SendAttempt, bool]:
    """The draft's one send attempt: created with its Message-ID on the first approval;
    an attempt the relay refused (the draft came back to review) is armed again, one that
    bounced with a new Message-ID (``rules.rearm``)."""
    message_id = new_message_id(draft_id, svc.settings.message_id_domain)
    sends = svc.stores.sends
    created = sends.create(cur, draft_id, message_id, recipient)
    send = svc.stores.rows_of(cur).send_of_draft(draft_id, lock=True)
    if send is None:
        raise DraftNotFoundError(NO_SEND_ATTEMPT % {"id": draft_id})
    again = rules.rearm(send)
    if again is None:
        return send, created
    new_id = message_id if again.new_message_id else send.message_id
    detail: dict[str, object] = {"draft_id": draft_id, "why": again.why}
    if again.new_message_id:
        detail.update(old_message_id=send.message_id, message_id=new_id)
    sends.move(cur, send.id, SendStatus.PENDING, actor=by, event="rearmed", query=again.query,
               row=send, recipients=recipient, detail=detail,
               **({"message_id": new_id} if again.new_message_id else {}))
    return dataclasses.replace(send, status=SendStatus.PENDING, message_id=new_id), created


def _send_job(svc: ServiceContext, cur: Any, email_id: int, draft_id: int, by: str) -> Job:
    """The draft's send_draft entry, queued: created, or a fresh cycle of the existing one
    (even while its previous run is finishing: see ``JobStore.requeue``)."""
    return svc.jobs.queue_work(cur, JobKind.SEND_DRAFT, draft_id, actor=by,
                               event="queued_for_send", queue=svc.settings.queue_name,
                               email_id=email_id, draft_id=draft_id,
                               detail={"draft_id": draft_id})


def reject(svc: ServiceContext, draft_id: int, by: str, reason: str,
           seen: str | None = None) -> ReviewResult:
    """Reject the draft and close its mail: one transaction, repeated when MariaDB rolled it
    back as busy (``busy``)."""
    by = person(by)
    return repeated_when_busy("reject", by, "draft", draft_id, lambda repeats: _reject(
        svc, draft_id, by, reason, seen, repeats))


def _reject(svc: ServiceContext, draft_id: int, by: str, reason: str, seen: str | None,
            repeats: list[AuditEvent]) -> ReviewResult:
    stores = svc.stores
    with svc.db.transaction() as cur:
        draft = stores.drafts.locked(cur, draft_id)
        if draft is None:
            raise DraftNotFoundError(DRAFT_MISSING % {"id": draft_id})
        stores.rows_of(cur).audit(repeats)
        if rules.already_rejected(draft, seen, reason):
            return ReviewResult(draft_id, "already_rejected", draft.status)
        stores.drafts.move(cur, draft_id, DraftStatus.REJECTED, actor=by, event="rejected",
                           query="drafts_reject", row=draft, detail={"reason": reason},
                           by=by, reject_reason=reason[:2000])
        stores.mails.move(cur, draft.email_id, MailStatus.REJECTED, actor=by,
                          reason=reason[:2000], detail={"draft_id": draft_id})
        stores.rows_of(cur).reviewed(draft_id, ReviewOutcome.REJECTED, by=by)
    return ReviewResult(draft_id, "rejected", DraftStatus.REJECTED)
