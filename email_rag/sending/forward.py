"""Forward a mail to an address (a colleague, another department, a supplier).

A forward is a draft of source ``forward``, approved at once by the person who forwards it,
with the one send attempt of every approved draft (its Message-ID fixed here) and a
``send_draft`` queue entry: the send job (``sending.sender``) sends it exactly once like a
reply, to the attempt's recipient, as our own message (``Fwd:``, not in the customer's
thread), and reconciles an unknown outcome the same way. Unlike a reply it leaves the case
alone: the mail's status does not change when the forward is made, sent, refused or bounces.

Its text is the person's note, then the customer's mail quoted with its From, Date,
Subject and To as received (text only; attachments are not forwarded).

| situation | outcome |
|---|---|
| recipient with a line break, several addresses, none | refused (BadInputError), nothing written |
| the same forward (mail, recipient, note) again within ``REPEAT_WINDOW_S`` (a double click) | the first one is answered (``already_forwarded``), nothing more is sent |
| Redis refuses the enqueue | the entry stays queued for re-dispatch (``enqueue``), audited |
| deadlock / lock wait timeout | the transaction runs again at once (``busy``), audited ``action_repeated`` |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.actors import person
from ..core.errors import MAIL_MISSING, BadInputError, DraftNotFoundError
from ..core.records import Job, SendAttempt
from ..core.rows import FromRow
from ..db import sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy
from ..jobs.dispatch import enqueue
from .compose import forward_subject, strip_bidi_controls
from .handwrite import recipient
from .review import _send_attempt, _send_job

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_NOTE_CHARS = 10_000
REPEAT_WINDOW_S = 600
SEPARATOR = "---------- Forwarded message ----------"


@dataclass(frozen=True)
class Forwarded:
    draft_id: int
    recipient: str
    action: str  # forwarded | already_forwarded
    message_id: str | None = None


@dataclass(frozen=True)
class QuotedMail(FromRow):
    """What a forward quotes of a mail (``forward_mail``): headers as received, the text."""
    id: int
    subject: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    to_addrs: str | None = None
    sent_at: datetime | None = None
    body_text: str | None = None


def forward_text(note: str, mail: QuotedMail) -> str:
    """The forward's text: the note, then the mail quoted with its headers as received."""
    sender = mail.from_addr or "?"
    if mail.from_name:
        sender = f"{mail.from_name} <{sender}>"
    head = [SEPARATOR, f"From: {strip_bidi_controls(sender)}"]
    if mail.sent_at is not None:
        head.append(f"Date: {mail.sent_at:%Y-%m-%d %H:%M} UTC")
    head.append(f"Subject: {strip_bidi_controls(mail.subject or '')}")
    if mail.to_addrs:
        head.append(f"To: {strip_bidi_controls(mail.to_addrs)}")
    quoted = "\n".join(head) + "\n\n" + (mail.body_text or "")
    return (note.strip() + "\n\n" + quoted) if note.strip() else quoted


def forward(svc: ServiceContext, email_id: int, by: str, typed_to: str,
            note: str = "") -> Forwarded:
    """Forward the mail to ``typed_to`` with ``note`` (the caller checked that the user may
    see the mail's mailbox)."""
    by = person(by)
    addr = recipient(typed_to)
    note = (note or "").replace("\r\n", "\n")
    if len(note) > MAX_NOTE_CHARS:
        raise BadInputError(f"the note has {len(note)} characters, more than the "
                            f"{MAX_NOTE_CHARS} a forward's note may have")
    done = repeated_when_busy("forward", by, "email", email_id, lambda repeats: _forward(
        svc, email_id, by, addr, note, repeats))
    if isinstance(done, Forwarded):
        return done
    draft_id, send, job = done
    enqueue(svc, [job], by)
    return Forwarded(draft_id, addr, "forwarded", send.message_id)


def _forward(svc: ServiceContext, email_id: int, by: str, addr: str, note: str,
             repeats: list[AuditEvent]) -> Forwarded | tuple[int, SendAttempt, Job]:
    """The transaction (repeated when busy): the answer to a double click, or the new
    draft, its send attempt and its queued send job."""
    with svc.db.transaction() as cur:
        row = cur.fetchone(sql("forward_mail"), {"id": email_id})  # locked: one at a time
        if row is None:
            raise DraftNotFoundError(MAIL_MISSING % {"id": email_id})
        mail = QuotedMail.from_row(row)
        body = forward_text(note, mail)
        again = cur.fetchone(sql("forward_recent"), {
            "email_id": email_id, "recipient": addr, "body": body, "window_s": REPEAT_WINDOW_S})
        if again is not None:
            svc.stores.rows_of(cur).audit(repeats)
            return Forwarded(int(again["draft_id"]), addr, "already_forwarded")
        version = cur.fetchone(sql("drafts_next_version"), {"email_id": email_id})["v"]
        cur.execute(sql("drafts_insert_forward"), {
            "email_id": email_id, "version": version, "by": by, "body": body,
            "subject": forward_subject(mail.subject)[:990]})
        draft_id = int(cur.lastrowid)
        send, _created = _send_attempt(svc, cur, draft_id, addr, by)
        job = _send_job(svc, cur, email_id, draft_id, by)
        # the address is personal data: the audit log keeps the draft and attempt ids
        svc.stores.rows_of(cur).audit([
            *repeats,
            AuditEvent(by, "email", email_id, "forwarded",
                       detail={"draft_id": draft_id, "send_attempt": send.id,
                               "note_chars": len(note.strip())}),
            AuditEvent(by, "draft", draft_id, "created", None, "approved",
                       detail={"source": "forward"}),
            AuditEvent(by, "send_attempt", send.id, "created", None, send.status,
                       detail={"draft_id": draft_id, "message_id": send.message_id,
                               "job_id": job.id}),
        ])
    return draft_id, send, job


@dataclass(frozen=True)
class ForwardRow:
    draft_id: int
    by: str | None
    at: Any
    send_status: str | None
    recipient: str | None


def of_mail(svc: ServiceContext, email_id: int) -> list[ForwardRow]:
    """The mail's forwards with their send state (oldest first)."""
    return [ForwardRow(int(r["draft_id"]), r["approved_by"], r["created_at"], r["send_status"],
                       r["recipients"])
            for r in svc.db.fetchall(sql("forwards_of_mail"), {"email_id": email_id})]
