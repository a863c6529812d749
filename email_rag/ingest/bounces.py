"""Bounces linked back to the send attempt they report.

A reply the relay accepted can still fail later: the receiving side sends a bounce. The
poller stores every bounce as a ``no_reply`` mail (loop guard); in the same transaction,
``link_bounces`` reads it and, when it names one of our send attempts, moves that attempt
to ``bounced`` with the diagnostic, its draft to ``stale`` (reason: the bounce) and its mail
back to ``draft_ready`` - staff see it in the review queue with the reason, admins in the
timeline and in ``sends list --status bounced``.

What a bounce is read from (``read_bounce``, pure):
- a DSN (RFC 3464: ``multipart/report; report-type=delivery-status``): the
  ``message/delivery-status`` part's per-recipient blocks (Final-Recipient, Action,
  Status, Diagnostic-Code) and the original message (``message/rfc822``) or its headers
  (``text/rfc822-headers``) for the original Message-ID; a DSN whose every recipient
  says ``Action: delayed`` (or delivered, relayed, expanded) is no bounce;
- a common non-standard bounce (from MAILER-DAEMON / postmaster, null Return-Path): a
  ``Message-ID:`` line of our own domain quoted in its text, else the recipient addresses
  it quotes.

Which attempt: the original Message-ID (only ids of our own domain), else the newest
``sent`` or ``unknown`` attempt to a quoted recipient within ``bounce_match_days``.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| bounce names a sent / unknown attempt | - | yes | attempt bounced, draft stale, mail draft_ready (in the poll's transaction) |
| the same bounce delivered twice | - | yes | the second is a duplicate mail row (dedup) or finds the attempt bounced: nothing changes |
| names an attempt in another status (pending, failed...) | - | yes | audited ``bounce_not_applied`` on the bounce mail; nothing changes |
| names nothing of ours | - | yes | stays a no_reply bounce mail (as before) |
| MariaDB lost mid-poll | the poll | yes: rolled back with the batch | the next poll stores and links it |
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass, field
from email.message import Message
from enum import StrEnum
from typing import TYPE_CHECKING

from ..core.rows import FromRow, set_field
from ..core.settings import Settings
from ..core.states import Actor, DraftStatus, MailStatus, SendStatus
from ..db import sql
from ..db.audit import AuditEvent
from ..db.connection import Cursor
from ..mail.headers import BOUNCE_LOCALPARTS

if TYPE_CHECKING:
    from ..db.stores import Stores
    from .store import PreparedMail

_MSGID_LINE = re.compile(r"^\s*(?:Original-)?Message-ID:\s*(<[^>\s]+>)", re.I | re.M)
_ADDRESS = re.compile(r"<?([A-Za-z0-9._%+\-=]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,})>?")
_NOT_FAILED = {"delayed", "delivered", "relayed", "expanded"}


@dataclass
class Bounce:
    message_ids: list[str] = field(default_factory=list)  # original Message-IDs, ours only
    recipients: list[str] = field(default_factory=list)  # failed recipients, lower case
    diagnostic: str = ""
    standard: bool = False  # a DSN (multipart/report) rather than a free-text bounce


def _text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return payload.decode(part.get_content_charset() or "utf-8", "replace")
    return str(part.get_payload() or "")


def _addr(value: str) -> str:
    value = value.split(";", 1)[1] if ";" in value else value  # "rfc822; a@b"
    m = _ADDRESS.search(value)
    return m.group(1).lower() if m else ""


def read_bounce(raw: bytes, message_id_domain: str) -> Bounce | None:
    """What a bounce says about which of our messages failed, or None (not a failure)."""
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    ours = "@" + message_id_domain.lower().strip() + ">"
    out = Bounce()
    texts: list[str] = []
    actions: list[str] = []
    diagnostics: list[str] = []
    for part in msg.walk():
        ctype = part.get_content_type()
        if ctype == "message/delivery-status":
            out.standard = True
            blocks = part.get_payload()
            if not isinstance(blocks, list):  # some parsers leave it as text: read it as such
                blocks = [email.message_from_string(b) for b in str(blocks).split("\n\n")]
            for block in blocks:
                for key in ("Original-Message-ID", "X-Original-Message-ID"):
                    if block.get(key):
                        out.message_ids.append(str(block[key]).strip())
                if block.get("Action"):
                    actions.append(str(block["Action"]).strip().lower())
                    if str(block["Action"]).strip().lower() in _NOT_FAILED:
                        continue
                rcpt = _addr(str(block.get("Final-Recipient") or block.get("Original-Recipient")
                                 or ""))
                if rcpt:
                    out.recipients.append(rcpt)
                diag = " ".join(filter(None, (str(block.get("Status") or "").strip(),
                                              str(block.get("Diagnostic-Code") or "").strip())))
                if diag:
                    diagnostics.append(f"{rcpt or 'recipient'}: {diag}" if rcpt else diag)
        elif ctype == "message/rfc822":
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(inner, Message) and inner.get("Message-ID"):
                out.message_ids.append(str(inner["Message-ID"]).strip())
        elif ctype in ("text/rfc822-headers", "text/plain") and not part.is_multipart():
            texts.append(_text(part))
    if not msg.is_multipart():
        texts.append(_text(msg))
    if actions and all(a in _NOT_FAILED for a in actions):
        return None  # a delay warning or a success notice, not a bounce
    for text in texts:
        out.message_ids += _MSGID_LINE.findall(text)
    out.message_ids = list(dict.fromkeys(m for m in out.message_ids if m.lower().endswith(ours)))
    if not out.recipients and not out.standard:
        quoted = {_addr(a) for a in _ADDRESS.findall("\n".join(texts))}
        sender = _addr(str(msg.get("From") or ""))
        out.recipients = sorted(a for a in quoted if a and a != sender
                                and not a.endswith(ours[:-1]))
    out.recipients = list(dict.fromkeys(out.recipients))
    if diagnostics:
        out.diagnostic = "; ".join(diagnostics)
    else:
        out.diagnostic = _free_text_reason(texts)
    out.diagnostic = (out.diagnostic or "the bounce gives no reason")[:500]
    if not out.message_ids and not out.recipients:
        return None
    return out


def is_bounce(p: PreparedMail) -> bool:
    """A stored no-reply mail that looks like a bounce (a DSN also carries Auto-Submitted,
    which the loop guard names first)."""
    if p.kind != "no_reply":
        return False
    if str(p.auto_reason or "").startswith("bounce:"):
        return True
    h = p.headers
    local = (h.from_addr or "").lower().partition("@")[0]
    return ((h.content_type == "multipart/report" and h.report_type == "delivery-status")
            or local in BOUNCE_LOCALPARTS
            or (h.return_path is not None and h.return_path.strip() in ("<>", "")))


_COPY_MARKER = re.compile(r"below this line|original message|this is a copy|message headers "
                          r"follow|undelivered message", re.I)


def _free_text_reason(texts: list[str]) -> str:
    """A free-text bounce's reason: the failed address's line and the line after it (as
    qmail, Exim and Sendmail write them), else its first lines - never the quoted copy."""
    lines: list[str] = []
    for t in texts:
        for ln in t.splitlines():
            if _COPY_MARKER.search(ln):
                break
            if ln.strip():
                lines.append(ln.strip())
    for i, ln in enumerate(lines):
        if _ADDRESS.search(ln) and (ln.endswith(":") or "@" in ln.split(":", 1)[0]):
            return " ".join(lines[i:i + 2])
    return " ".join(lines[:3])


@dataclass(frozen=True)
class NamedAttempt(FromRow):
    """The send attempt a bounce names, locked (``sends_by_message_id_for_update``,
    ``sends_last_to_recipient``): with the mail it replied to."""

    id: int
    draft_id: int
    email_id: int
    status: SendStatus
    message_id: str = ""

    def __post_init__(self) -> None:
        set_field(self, "status", SendStatus(self.status))
        for name in ("id", "draft_id", "email_id"):
            set_field(self, name, int(getattr(self, name)))


class BounceAction(StrEnum):
    APPLY = "apply"  # sent / unknown: the attempt bounced (draft stale, mail draft_ready)
    ALREADY = "already"  # bounced before (the same bounce again): nothing changes
    NOT_APPLIED = "not_applied"  # any other status: nothing changes, audited on the bounce


@dataclass(frozen=True)
class BounceMatch:
    action: BounceAction
    matched_by: str  # "original Message-ID" or "recipient"


def match(attempt: NamedAttempt, bounce: Bounce) -> BounceMatch:
    """What a bounce does to the send attempt it names."""
    how = "original Message-ID" if attempt.message_id in bounce.message_ids else "recipient"
    if attempt.status in (SendStatus.SENT, SendStatus.UNKNOWN):
        return BounceMatch(BounceAction.APPLY, how)
    if attempt.status == SendStatus.BOUNCED:
        return BounceMatch(BounceAction.ALREADY, how)
    return BounceMatch(BounceAction.NOT_APPLIED, how)


def link_bounces(cur: Cursor, stores: Stores, settings: Settings,
                 new: list[tuple[int, PreparedMail]]) -> list[AuditEvent]:
    """For each newly stored bounce mail (``(email id, PreparedMail)``, see ``is_bounce``),
    move the send attempt it names; returns the audit events (written by the caller with
    its batch)."""
    events: list[AuditEvent] = []
    for email_id, p in new:
        if not is_bounce(p):
            continue
        bounce = read_bounce(p.raw, settings.message_id_domain)
        if bounce is None:
            continue
        attempt = _attempt_named(cur, bounce, settings.bounce_match_days)
        if attempt is None:
            continue
        events += _apply(cur, stores, email_id, attempt, bounce)
    return events


def _attempt_named(cur: Cursor, bounce: Bounce, days: int) -> NamedAttempt | None:
    for message_id in bounce.message_ids:
        row = cur.fetchone(sql("sends_by_message_id_for_update"), {"message_id": message_id})
        if row is not None:
            return NamedAttempt.from_row(row)
    for rcpt in bounce.recipients:
        row = cur.fetchone(sql("sends_last_to_recipient"), {"recipient": rcpt, "days": days})
        if row is not None:
            return NamedAttempt.from_row(row)
    return None


def _apply(cur: Cursor, stores: Stores, email_id: int, attempt: NamedAttempt, bounce: Bounce
           ) -> list[AuditEvent]:
    events: list[AuditEvent] = []
    found = match(attempt, bounce)
    how = found.matched_by
    if found.action == BounceAction.NOT_APPLIED:
        events.append(AuditEvent(Actor.POLLER, "email", email_id, "bounce_not_applied",
                                 detail={"send_attempt": attempt.id,
                                         "status": str(attempt.status), "matched_by": how}))
    if found.action != BounceAction.APPLY:
        return events
    reason = f"the reply bounced (bounce mail {email_id}): {bounce.diagnostic}"[:2000]
    detail = {"bounce_email_id": email_id, "matched_by": how, "diagnostic": bounce.diagnostic}
    stores.sends.move(cur, attempt.id, SendStatus.BOUNCED, actor=Actor.POLLER,
                      event="bounced", query="sends_bounce", current=attempt.status,
                      detail=detail, events=events,
                      diagnostic=f"bounce: {bounce.diagnostic}"[:2000], bounce_email_id=email_id)
    draft = stores.drafts.locked(cur, attempt.draft_id)
    if draft is not None and draft.source == "forward":
        # a forward to a colleague bounced: its attempt says so; the case is not touched
        # and nothing comes back to review
        events.append(AuditEvent(Actor.POLLER, "email", email_id, "bounce_linked",
                                 detail={"send_attempt": attempt.id, "matched_by": how,
                                         "forward_of": attempt.email_id}))
        return events
    if draft is not None and draft.status in (DraftStatus.SENT, DraftStatus.APPROVED):
        stores.drafts.move(cur, draft.id, DraftStatus.STALE, actor=Actor.POLLER,
                           event="bounced", query="drafts_mark_stale", reason=reason,
                           current=draft.status, detail=detail, events=events)
    mail = stores.mails.get(cur, attempt.email_id)
    if mail.status in (MailStatus.SENT, MailStatus.MANUAL):
        stores.mails.move(cur, mail.id, MailStatus.DRAFT_READY, actor=Actor.POLLER,
                          event="reply_bounced", reason=reason, current=mail.status,
                          detail=detail, events=events)
    events.append(AuditEvent(Actor.POLLER, "email", email_id, "bounce_linked",
                             detail={"send_attempt": attempt.id, "matched_by": how,
                                     "replied_mail": attempt.email_id}))
    return events
