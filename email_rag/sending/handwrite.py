"""A reply staff write by hand for a mail (any mail a reply may still go to, the ones kept
for a human included): it becomes a draft of source ``manual``, pending review, and goes
through the same approval and exactly-once send as a generated draft (``review.approve``).

The recipient is the mail's stored reply decision (``addresses.stored_reply``) when it has
a usable address; otherwise, or when staff type another one, the typed address becomes the
mail's reply decision (rule ``typed by user:NAME``), so the draft page, the approval and
the send path read it from the one place they always read it from.

| situation | outcome |
|---|---|
| typed recipient with a line break, a control character, several addresses or none | refused (BadInputError), nothing written |
| empty text, or above ``MAX_REPLY_CHARS`` | refused, nothing written |
| mail approved (a send under way), sent, closed (no reply, rejected, resolved), or still in the pipeline | refused (StateRefused), nothing written |
| mail with an open draft (draft ready) | that draft is superseded by the hand-written one |
| manual or failed mail | moves to draft_ready (audited ``reply_written_by_hand``) |
| deadlock / lock wait timeout | the transaction runs again at once (``busy``), audited ``action_repeated`` |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.actors import person
from ..core.errors import MAIL_MISSING, BadInputError, DraftNotFoundError, StateRefused
from ..core.states import MailStatus
from ..db import sql
from ..db.audit import AuditEvent
from ..db.busy import repeated_when_busy
from ..mail.addresses import parse_addresses, valid_address
from . import rules
from .compose import reply_subject

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_REPLY_CHARS = 100_000
# the mail statuses a hand-written reply may start from (each may move to draft_ready)
WRITABLE = frozenset({MailStatus.MANUAL, MailStatus.FAILED, MailStatus.DRAFT_READY})


@dataclass(frozen=True)
class Written:
    draft_id: int
    recipient: str
    superseded: list[int]


def recipient(typed: str) -> str:
    """The one address of ``typed`` (``Name <addr>`` or ``addr``), or BadInputError with
    what is wrong: a line break or control character (header injection), several
    addresses, none."""
    if any(ord(c) < 32 or ord(c) == 127 or c in "\u2028\u2029\u0085" for c in typed):
        raise BadInputError(
            "the recipient contains a line break or control character; type one address"
        )
    value = typed.strip()
    if not value:
        raise BadInputError("no recipient: type the address the reply goes to")
    found = parse_addresses(value)
    if len(found) != 1 or "," in value or ";" in value:
        raise BadInputError("the recipient must be exactly one address")
    addr = found[0][1].strip()
    if not valid_address(addr):
        raise BadInputError("the recipient is not a valid address (name@example.org)")
    return addr


def write(svc: ServiceContext, email_id: int, by: str, typed_to: str, body: str) -> Written:
    """Write the hand-written reply as a pending draft of source ``manual`` (the caller
    checked the user may see the mail's mailbox)."""
    by = person(by)
    addr = recipient(typed_to)
    text = body.replace("\r\n", "\n")
    if not text.strip():
        raise BadInputError("the reply text is empty")
    if len(text) > MAX_REPLY_CHARS:
        raise BadInputError(
            f"the reply has {len(text)} characters, more than the "
            f"{MAX_REPLY_CHARS} a reply may have"
        )
    return repeated_when_busy("write_by_hand", by, "email", email_id, lambda repeats: _write(
        svc, email_id, by, addr, text, repeats))


def _write(svc: ServiceContext, email_id: int, by: str, addr: str, text: str,
           repeats: list[AuditEvent]) -> Written:
    """The transaction (repeated when busy)."""
    stores = svc.stores
    with svc.db.transaction() as cur:
        rows = stores.rows_of(cur)
        mail = rows.reply_mail(email_id, lock=True)
        if mail is None:
            raise DraftNotFoundError(MAIL_MISSING % {"id": email_id})
        if mail.status not in WRITABLE:
            raise StateRefused(
                f"mail {email_id} is {mail.status}; a reply by hand is written "
                "for a mail kept for a human, a failed one or one in review"
            )
        events: list[AuditEvent] = list(repeats)
        stored = rules.reply_choice(mail)
        if not (stored.ok and stored.addr == addr):
            cur.execute(
                sql("emails_set_reply"),
                {"id": email_id, "reply_addr": addr, "reply_rule": f"typed by {by}"},
            )
            # the address itself is personal data: the audit log says that it was typed
            events.append(
                AuditEvent(
                    by, "email", email_id, "reply_address_typed", detail={"had_address": stored.ok}
                )
            )
        superseded = stores.drafts.supersede_open(cur, email_id, by, "a reply was written by hand")
        version = cur.fetchone(sql("drafts_next_version"), {"email_id": email_id})["v"]
        cur.execute(
            sql("drafts_insert_manual"),
            {
                "email_id": email_id,
                "version": version,
                "subject": reply_subject(mail.subject)[:990],
                "body": text,
                "language": None,
            },
        )
        draft_id = int(cur.lastrowid)
        detail = {"draft_id": draft_id, "chars": len(text), "superseded": superseded}
        if mail.status != MailStatus.DRAFT_READY:
            stores.mails.move(
                cur,
                email_id,
                MailStatus.DRAFT_READY,
                actor=by,
                event="reply_written_by_hand",
                row=mail,
                detail=detail,
                events=events,
            )
        else:
            events.append(AuditEvent(by, "email", email_id, "reply_written_by_hand", detail=detail))
        events.append(
            AuditEvent(
                by,
                "draft",
                draft_id,
                "created",
                None,
                "pending_review",
                detail={"source": "manual"},
            )
        )
        rows.audit(events)
    return Written(draft_id, addr, superseded)
