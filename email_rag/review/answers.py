"""Saved replies and signatures: a team's reusable answers per mailbox.

Admins keep, per mailbox, saved replies (a title and a body) and one signature; staff
insert them into a draft's editor. Bodies and signatures may hold placeholders, filled on
the server from what is known of the mail when inserted (``fill_values``,
``email_rag.mail.placeholders.render``):

| placeholder | filled from | when there is no value |
|---|---|---|
| ``{customer_name}`` | the sender's display name (bidi and control characters removed; not an address) | stays ``{customer_name}`` |
| ``{order_number}`` | a number the customer labels as an order in the subject or text ("Bestellung 4711", "order #55210", "Bestellnummer: AB-12345"), when exactly one is found | stays ``{order_number}`` |
| ``{agent_name}`` | the logged-in user's name | - |

A placeholder without a value is never replaced by nothing: it stays visible in the text,
and a reply that still holds one is not approved (``unfilled``) until the agent filled it
in. Filling is one pass: a value that itself looks like a placeholder is not expanded.

Failure table of the admins' changes:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| empty or too long title/body | after fixing it | yes: refused, nothing written | the form keeps the text |
| another admin changed the reply meanwhile (version) | after reloading | yes: refused, nothing written | the page shows the current version |
| the reply was deleted meanwhile | no | yes: "does not exist" | - |

Every change keeps the reply's knowledge article (knowledge/saved_replies.py) in step, in the
same transaction: saved replies are sources of drafts. Every change is audited under the admin (``saved_reply_created`` / ``_updated`` /
``_deleted`` on the reply, ``signature_set`` on the mailbox) with the mailbox's name only:
no text of the reply, which may quote customers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..core.errors import BadInputError, DraftNotFoundError
from ..core.rows import FromRow
from ..db import sql
from ..db.audit import AuditEvent, write_events
from ..knowledge.saved_replies import SavedReplySync
from ..mail.placeholders import Rendered, clean_value, customer_name, order_number, render
from .desk import N_

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

MAX_TITLE = 200
MAX_BODY = 20_000
MAX_SIGNATURE = 2_000


def fill_values(svc: ServiceContext, email_id: int, agent: str) -> dict[str, str | None]:
    """The placeholders' values for a reply to this mail, written by ``agent``."""
    row = svc.db.fetchone(sql("answers_mail_facts"), {"id": email_id})
    if row is None:
        return {"agent_name": clean_value(agent)}
    return {
        "customer_name": customer_name(row["from_name"], row["from_addr"]),
        "order_number": order_number(row["subject"], row["body_text"]),
        "agent_name": clean_value(agent),
    }


# --- the store ---


@dataclass(frozen=True)
class SavedReply(FromRow):
    id: int
    mailbox_id: int
    title: str
    body: str
    version: int = 1
    created_by: str | None = None
    updated_by: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Signature(FromRow):
    mailbox_id: int
    body: str
    updated_by: str | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Mailbox(FromRow):
    id: int
    name: str


def mailboxes(svc: ServiceContext) -> list[Mailbox]:
    return Mailbox.from_rows(svc.db.fetchall(sql("answers_mailboxes"), {}))


def replies(svc: ServiceContext, mailbox_id: int) -> list[SavedReply]:
    return SavedReply.from_rows(
        svc.db.fetchall(sql("saved_replies_of_mailbox"), {"mailbox_id": mailbox_id})
    )


def reply(svc: ServiceContext, reply_id: int) -> SavedReply:
    row = svc.db.fetchone(sql("saved_reply_get"), {"id": reply_id})
    if row is None:
        raise DraftNotFoundError(N_("This saved reply does not exist (any more)."))
    return SavedReply.from_row(row)


def signature(svc: ServiceContext, mailbox_id: int) -> Signature | None:
    row = svc.db.fetchone(sql("signature_get"), {"mailbox_id": mailbox_id})
    return None if row is None else Signature.from_row(row)


def _checked(title: str, body: str) -> tuple[str, str]:
    title = " ".join((title or "").split())
    body = (body or "").replace("\r\n", "\n").strip("\n")
    if not title or not body.strip():
        raise BadInputError(N_("A saved reply needs a title and a text."))
    if len(title) > MAX_TITLE or len(body) > MAX_BODY:
        raise BadInputError(N_("The title or the text of the saved reply is too long."))
    return title, body


def _mailbox_name(cur, mailbox_id: int) -> str:
    row = cur.fetchone(sql("answers_mailbox_name"), {"mailbox_id": mailbox_id})
    if row is None:
        raise BadInputError(N_("There is no such mailbox."))
    return str(row["name"])


def create(svc: ServiceContext, mailbox_id: int, title: str, body: str, actor: str) -> int:
    title, body = _checked(title, body)
    knowledge = SavedReplySync(svc.db, svc.embedder)
    prepared = knowledge.prepare(title, body)
    with svc.db.transaction() as cur:
        name = _mailbox_name(cur, mailbox_id)
        cur.execute(
            sql("saved_reply_insert"),
            {"mailbox_id": mailbox_id, "title": title, "body": body, "by": actor},
        )
        reply_id = cur.lastrowid
        knowledge.upsert_in(cur, reply_id, mailbox_id, prepared, actor)
        write_events(
            cur,
            [AuditEvent(actor, "saved_reply", reply_id, "saved_reply_created",
                        detail={"mailbox": name})],
        )
    return reply_id


def update(svc: ServiceContext, reply_id: int, version: int, title: str, body: str,
           actor: str) -> None:
    """Change the reply an admin saw at ``version``; refused when it changed meanwhile."""
    title, body = _checked(title, body)
    knowledge = SavedReplySync(svc.db, svc.embedder)
    prepared = knowledge.prepare(title, body)
    with svc.db.transaction() as cur:
        row = cur.fetchone(sql("saved_reply_get"), {"id": reply_id})
        if row is None:
            raise DraftNotFoundError(N_("This saved reply does not exist (any more)."))
        current = SavedReply.from_row(row)
        if current.title == title and current.body == body:
            return
        if not cur.execute(
            sql("saved_reply_update"),
            {"id": reply_id, "version": version, "title": title, "body": body, "by": actor},
        ):
            raise BadInputError(N_("Someone changed this saved reply meanwhile; nothing was "
                                   "saved. Reload the page and edit the current version."))
        knowledge.upsert_in(cur, reply_id, current.mailbox_id, prepared, actor)
        write_events(
            cur,
            [AuditEvent(actor, "saved_reply", reply_id, "saved_reply_updated",
                        detail={"mailbox": _mailbox_name(cur, current.mailbox_id),
                                "version": version + 1})],
        )


def delete(svc: ServiceContext, reply_id: int, actor: str) -> None:
    with svc.db.transaction() as cur:
        row = cur.fetchone(sql("saved_reply_get"), {"id": reply_id})
        if row is None:
            raise DraftNotFoundError(N_("This saved reply does not exist (any more)."))
        mailbox_id = int(row["mailbox_id"])
        cur.execute(sql("saved_reply_delete"), {"id": reply_id})
        SavedReplySync(svc.db, svc.embedder).delete_in(cur, reply_id, mailbox_id, actor)
        write_events(
            cur,
            [AuditEvent(actor, "saved_reply", reply_id, "saved_reply_deleted",
                        detail={"mailbox": _mailbox_name(cur, mailbox_id)})],
        )


def set_signature(svc: ServiceContext, mailbox_id: int, body: str, actor: str) -> bool:
    """The mailbox's signature (empty: none); True when it changed (audited)."""
    body = (body or "").replace("\r\n", "\n").strip("\n")
    if len(body) > MAX_SIGNATURE:
        raise BadInputError(N_("The signature is too long."))
    with svc.db.transaction() as cur:
        name = _mailbox_name(cur, mailbox_id)
        row = cur.fetchone(sql("signature_get"), {"mailbox_id": mailbox_id})
        before = "" if row is None else row["body"]
        if before == body:
            return False
        if body.strip():
            cur.execute(sql("signature_set"),
                        {"mailbox_id": mailbox_id, "body": body, "by": actor})
        else:
            cur.execute(sql("signature_delete"), {"mailbox_id": mailbox_id})
        write_events(
            cur,
            [AuditEvent(actor, "mailbox", mailbox_id, "signature_set",
                        detail={"mailbox": name, "removed": not body.strip()})],
        )
    return True


def for_mail(svc: ServiceContext, mailbox_id: int, email_id: int, agent: str
             ) -> tuple[list[tuple[SavedReply, Rendered]], Rendered | None]:
    """The mailbox's saved replies and signature, filled for a reply to this mail."""
    values = fill_values(svc, email_id, agent)
    sig = signature(svc, mailbox_id)
    return ([(r, render(r.body, values)) for r in replies(svc, mailbox_id)],
            render(sig.body, values) if sig else None)
