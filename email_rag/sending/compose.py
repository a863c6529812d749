"""Build the reply message: threading headers, fixed Message-ID, no header injection."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, formataddr, parseaddr

from ..core.errors import HeaderInjectionError
from ..mail.placeholders import BIDI_CONTROLS

LOOP_GUARD_HEADER = "X-Email-RAG"


def new_message_id(draft_id: int, domain: str) -> str:
    """Fixed once per draft, before the first try (stored in send_attempts)."""
    return f"<draft-{draft_id}.{uuid.uuid4().hex}@{domain}>"


# Unicode bidi embeddings, overrides and isolates (LRE RLE PDF LRO RLO, LRI RLI FSI PDI):
# they make a text read differently from its characters (``Rechnung<U+202E>fdp.exe`` shows
# as ``Rechnungexe.pdf``). The marks (LRM, RLM, ALM) only place neutral characters.
# LRM, RLM, ALM: invisible, yet they move the neutral characters around them (a dot, an
# extension's separator); the desk shows them as markers like the controls above
BIDI_MARKS = frozenset("\u200e\u200f\u061c")
_NO_BIDI = {ord(c): None for c in BIDI_CONTROLS}


def strip_bidi_controls(text: str) -> str:
    return text.translate(_NO_BIDI)


def reply_subject(subject: str | None) -> str:
    """Our reply's Subject: the customer's, without bidi controls, with one "Re:"."""
    subject = strip_bidi_controls(subject or "").strip()
    return subject if subject.lower().startswith(("re:", "aw:", "sv:")) else f"Re: {subject}".strip()


def forward_subject(subject: str | None) -> str:
    """A forward's Subject: the customer's, without bidi controls, with one "Fwd:"."""
    subject = strip_bidi_controls(subject or "").strip()
    return subject if subject.lower().startswith(("fwd:", "fw:", "wg:")) \
        else f"Fwd: {subject}".strip()


def references(original_references: str | None, original_message_id: str | None) -> str:
    refs = (original_references or "").split()
    if original_message_id and original_message_id not in refs:
        refs.append(original_message_id)
    return " ".join(refs[-20:])  # keep the header bounded


def check_header(name: str, value: str) -> str:
    if "\r" in value or "\n" in value or "\0" in value:
        raise HeaderInjectionError(f"header {name} contains a line break; refused")
    return value


def build_reply(*, message_id: str, from_addr: str, from_name: str, to_addr: str,
                subject: str | None, body: str, in_reply_to: str | None,
                original_references: str | None, draft_id: int) -> EmailMessage:
    """Our reply in the customer's thread (In-Reply-To, References)."""
    thread = {"In-Reply-To": in_reply_to,
              "References": references(original_references, in_reply_to)} if in_reply_to else {}
    return _message(message_id, from_addr, from_name, to_addr, reply_subject(subject), body,
                    draft_id, thread)


def build_forward(*, message_id: str, from_addr: str, from_name: str, to_addr: str,
                  subject: str | None, body: str, draft_id: int) -> EmailMessage:
    """A mail forwarded to an address: our own message (not a reply in the customer's
    thread), its text quoting the customer's mail (``sending.forward.forward_text``)."""
    return _message(message_id, from_addr, from_name, to_addr, forward_subject(subject), body,
                    draft_id, {})


def _message(message_id: str, from_addr: str, from_name: str, to_addr: str, subject: str,
             body: str, draft_id: int, thread: dict[str, str]) -> EmailMessage:
    name, addr = parseaddr(to_addr)
    if not addr or "@" not in addr:
        raise HeaderInjectionError(f"recipient {to_addr!r} is not a valid address")
    headers = {
        "Message-ID": message_id,
        "From": formataddr((from_name, from_addr)) if from_name else from_addr,
        "Reply-To": from_addr,
        "To": formataddr((name, addr)),
        "Subject": subject,
        "Date": format_datetime(datetime.now(UTC)),
        LOOP_GUARD_HEADER: f"draft={draft_id}",
        **thread,
    }
    msg = EmailMessage()
    for key, value in headers.items():
        msg[key] = check_header(key, value)
    msg.set_content(body)
    return msg
