"""Fast, robust header parsing for the poller: pure functions that never raise.

The poller reads only the header block of each mail (Message-ID, addresses,
subject, date, threading and auto-reply headers); the full MIME parse happens
later in the pipeline (``email_rag.ingest.mime``). Everything here is
untrusted input: values are decoded with fallbacks (RFC 2047, raw 8-bit,
unknown charsets), cleaned of control characters and clipped to the column
sizes of the ``emails`` table.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.header import Header, decode_header
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

LOOP_HEADER = "X-Email-RAG"  # set on every mail we send; its presence marks our own mail
AUTO_PRECEDENCE = {"bulk", "junk", "list", "auto_reply"}
AUTO_REPLY_HEADERS = ("X-Autoreply", "X-Autorespond", "X-Autoresponder")
BOUNCE_LOCALPARTS = {"mailer-daemon", "postmaster"}

_SEPARATOR = re.compile(rb"\r?\n\r?\n")
_MSGID = re.compile(r"<([^<>\s]+)>")
_WS = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


# --- decoding helpers (shared with mime.py) ---
def charset_codec(charset: str | None) -> str | None:
    """The Python codec for a MIME charset name, or None when it is unknown."""
    if not charset:
        return None
    name = charset.strip().strip('"').lower()
    if name in ("unknown-8bit", "x-unknown", "8bit", "default"):
        return None
    try:
        return codecs.lookup(name).name
    except (LookupError, ValueError):
        return None


def decode_bytes(data: bytes, charset: str | None = None) -> tuple[str, str | None]:
    """Text of ``data`` and a problem description (None when the charset fitted).

    Tries the declared charset, then UTF-8, then Windows-1252 (which decodes
    any byte, so this never fails).
    """
    codec = charset_codec(charset)
    problem = None
    if codec:
        try:
            return data.decode(codec), None
        except (UnicodeDecodeError, LookupError):
            problem = f"declared charset {charset!r} does not fit the bytes"
    elif charset and charset.strip().lower() not in ("unknown-8bit", "x-unknown"):
        problem = f"unknown charset {charset!r}"
    for fallback in ("utf-8", "cp1252"):
        try:
            text = data.decode(fallback)
            return text, problem
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1"), problem


def clean(text: str | None, max_chars: int | None = None) -> str:
    """Printable text: no surrogates, no control characters, clipped to ``max_chars``."""
    if not text:
        return ""
    if _SURROGATE.search(text):
        text = text.encode("utf-8", "replace").decode("utf-8", "replace")
    text = _CONTROL.sub("", text)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars]
    return text


def clip_bytes(text: str, max_bytes: int) -> str:
    """Clip to at most ``max_bytes`` of UTF-8 (TEXT columns count bytes)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def decode_header_value(value: Any) -> str:
    """A header value as readable text: RFC 2047 words and raw 8-bit bytes decoded."""
    if value is None:
        return ""
    try:
        if isinstance(value, Header):
            parts = decode_header(value)
        else:
            text = str(value)
            if _SURROGATE.search(text):  # raw 8-bit bytes in the header
                text, _ = decode_bytes(text.encode("utf-8", "surrogateescape"))
            if "=?" not in text:  # no RFC 2047 words: nothing to decode (fast path)
                return _WS.sub(" ", clean(text)).strip()
            parts = decode_header(text)
        out: list[str] = []
        last_encoded: bool | None = None
        for chunk, charset in parts:
            piece = decode_bytes(chunk, charset)[0] if isinstance(chunk, bytes) else chunk
            encoded = charset is not None
            # decode_header strips plain words: the space between an encoded word and
            # plain text is significant, between two encoded words it is not (RFC 2047)
            if out and last_encoded is not None and encoded != last_encoded and piece:
                out.append(" ")
            out.append(piece)
            last_encoded = encoded
        text = "".join(out)
    except Exception:  # noqa: BLE001 - a header must never stop the poller
        text = str(value)
    return _WS.sub(" ", clean(text)).strip()


def normalise_message_id(value: str | None) -> str | None:
    """``<local@domain>`` with the domain lower-cased, or None when there is none."""
    if not value:
        return None
    value = clean(value).strip()
    m = _MSGID.search(value)
    token = m.group(1) if m else _WS.sub("", value).strip("<>")
    if not token:
        return None
    local, at, domain = token.rpartition("@")
    token = f"{local}@{domain.lower()}" if at else token
    return f"<{token}>"


def message_ids(value: str | None) -> list[str]:
    """All Message-IDs in a References / In-Reply-To value, in order."""
    if not value:
        return []
    found = [f"<{t}>" for t in _MSGID.findall(value)]
    if not found:
        found = [f"<{t.strip('<>')}>" for t in value.split() if t.strip("<>")]
    return [n for n in (normalise_message_id(f) for f in found) if n]


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape") if isinstance(text, str)
                          else text).hexdigest()


@dataclass
class MailHeaders:
    """What the poller needs from a mail's header block."""

    ok: bool = True
    reason: str | None = None  # why the headers could not be parsed (ok False)
    header_count: int = 0
    message_id: str | None = None
    from_addr: str = ""
    from_name: str = ""
    to_addrs: list[str] = field(default_factory=list)
    cc_addrs: list[str] = field(default_factory=list)
    subject: str = ""
    sent_at: datetime | None = None  # UTC, naive
    in_reply_to: str | None = None
    references: list[str] = field(default_factory=list)
    auto_submitted: str = ""
    precedence: str = ""
    loop_header: str | None = None  # value of X-Email-RAG when present
    auto_reply_header: str | None = None  # name of an X-Autoreply-style header when present
    return_path: str | None = None
    content_type: str = ""
    report_type: str = ""
    stable: bytes = b""  # raw From/To/Cc/Subject/Date, for the content hash

    @property
    def thread_root(self) -> str | None:
        """The thread's first Message-ID: first of References, else In-Reply-To, else own."""
        if self.references:
            return self.references[0]
        return self.in_reply_to or self.message_id


def split_header_block(raw: bytes) -> tuple[bytes, bytes]:
    m = _SEPARATOR.search(raw)
    if not m:
        return raw, b""
    return raw[:m.start()] + b"\r\n", raw[m.end():]


_FIELD = re.compile(r"^([\x21-\x39\x3b-\x7e]+)[ \t]*:(.*)$", re.DOTALL)
_REPORT_TYPE = re.compile(r"""report-type\s*=\s*"?([\w.+-]+)""", re.I)


def header_fields(head: bytes) -> dict[str, list[str]]:
    """Header fields of a header block: lower-cased name -> raw values, in order.

    Unfolds continuation lines; a line that is no field (no name, no colon)
    is skipped, as a lenient MIME parser would. 8-bit bytes are kept as
    surrogate escapes for ``decode_header_value``.
    """
    text = head.decode("ascii", "surrogateescape")
    fields: dict[str, list[str]] = {}
    name: str | None = None
    parts: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line[:1] in (" ", "\t") and name is not None:
            parts.append(line)
            continue
        if name is not None:
            fields.setdefault(name, []).append("\n".join(parts).strip())
            name = None
        m = _FIELD.match(line)
        if m:
            name, parts = m.group(1).lower(), [m.group(2)]
    if name is not None:
        fields.setdefault(name, []).append("\n".join(parts).strip())
    return fields


def parse_headers(raw: bytes) -> MailHeaders:
    """Headers of ``raw`` (a whole mail or only its header block). Never raises."""
    try:
        head, _ = split_header_block(raw)
        return _from_fields(header_fields(head))
    except Exception as e:  # noqa: BLE001 - untrusted input must never stop the poller
        return MailHeaders(ok=False, reason=f"header block unreadable: {type(e).__name__}: {e}"[:500])


def _from_fields(fields: dict[str, list[str]]) -> MailHeaders:
    if not fields:
        return MailHeaders(ok=False, reason="no header fields found (not a mail?)")
    h = MailHeaders(header_count=sum(len(v) for v in fields.values()))

    def get(name: str) -> str:
        values = fields.get(name.lower())
        return decode_header_value(values[0]) if values else ""

    h.message_id = normalise_message_id(get("Message-ID"))
    addrs = _addresses(fields.get("from"))
    if addrs:
        h.from_name, h.from_addr = addrs[0]
    h.to_addrs = [a for _, a in _addresses(fields.get("to"))]
    h.cc_addrs = [a for _, a in _addresses(fields.get("cc"))]
    h.subject = get("Subject")
    h.sent_at = parse_date(get("Date"))
    irt = message_ids(get("In-Reply-To"))
    h.in_reply_to = irt[0] if irt else None
    h.references = message_ids(get("References"))
    h.auto_submitted = get("Auto-Submitted").lower()
    h.precedence = get("Precedence").lower()
    if LOOP_HEADER.lower() in fields:
        h.loop_header = get(LOOP_HEADER) or "present"
    for name in AUTO_REPLY_HEADERS:
        if name.lower() in fields:
            h.auto_reply_header = name.lower()
            break
    if "return-path" in fields:
        h.return_path = get("Return-Path")
    ctype = get("Content-Type")
    main = ctype.split(";", 1)[0].strip().lower()
    h.content_type = main if main.count("/") == 1 else "text/plain"
    m = _REPORT_TYPE.search(ctype)
    h.report_type = m.group(1).lower() if m else ""
    h.stable = b"\n".join(
        fields.get(n, [""])[0].encode("utf-8", "surrogateescape")
        for n in ("from", "to", "cc", "subject", "date"))
    return h


_SIMPLE_ADDRESS = re.compile(
    r"^\s*(?:([^\"<>,;:@()\\]*?)\s*<([^<>\s,;:\"()\\]+@[^<>\s,;:\"()\\]+)>"
    r"|([^<>\s,;:\"()\\]+@[^<>\s,;:\"()\\]+))\s*$")


def _simple_addresses(value: str) -> list[tuple[str, str]] | None:
    """Fast path for the common forms (``a@b``, ``Name <a@b>``, comma lists of them)."""
    out = []
    for part in value.split(","):
        m = _SIMPLE_ADDRESS.match(part)
        if not m:
            return None
        out.append((m.group(1) or "", m.group(2) or m.group(3)))
    return out


def _addresses(values: list[Any] | None) -> list[tuple[str, str]]:
    if not values:
        return []
    pairs: list[tuple[str, str]] = []
    for value in values:
        # parse the still-encoded value: a decoded display name may contain commas
        text = str(value)
        if _SURROGATE.search(text):  # raw 8-bit bytes
            text = decode_bytes(text.encode("utf-8", "surrogateescape"))[0]
        text = _WS.sub(" ", clean(text)).strip()
        simple = _simple_addresses(text) if text else []
        if simple is None:
            try:
                simple = getaddresses([text])
            except Exception:  # noqa: BLE001
                simple = [("", text)]
        pairs.extend(simple)
    if any("@" in a for _, a in pairs):  # drop debris of malformed lists, keep real addresses
        pairs = [(d, a) for d, a in pairs if "@" in a]
    out = []
    for display, addr in pairs:
        addr = clean(addr).strip()
        if addr:
            out.append((decode_header_value(display) if display else "", addr))
    return out


def parse_date(value: str) -> datetime | None:
    """The Date header in UTC (naive), or None when missing, unreadable or out of range."""
    if not value:
        return None
    try:
        dt = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if dt is None:
        return None
    if dt.tzinfo is not None:
        try:
            dt = dt.astimezone(UTC).replace(tzinfo=None)
        except (OverflowError, ValueError):
            return None
    if not 1970 <= dt.year <= 9999:
        return None
    return dt


def dedup_key(headers: MailHeaders, raw: bytes, size: int | None = None) -> str:
    """sha256 of the normalised Message-ID, or of the content when it is missing.

    The content hash covers From/To/Cc/Subject/Date and the body, not the
    whole raw mail, so trace headers added per delivery (Received, Delivered-To)
    do not make a redelivered mail look new.
    """
    if headers.ok and headers.message_id:
        return sha256("mid:" + headers.message_id)
    if not headers.ok:
        return sha256(b"raw:" + raw)
    _, body = split_header_block(raw)
    tail = body if body else f"size:{size if size is not None else len(raw)}".encode()
    return sha256(b"content:" + headers.stable + b"\n\n" + tail)


def thread_key(headers: MailHeaders, fallback: str) -> str:
    root = headers.thread_root if headers.ok else None
    return sha256("mid:" + root) if root else fallback


def loop_guard(headers: MailHeaders, message_id_domain: str,
               own_addresses: set[str] | frozenset[str] = frozenset()) -> str | None:
    """Why no reply may be drafted for this mail (our own, automatic, a bounce), or None."""
    if not headers.ok:
        return None
    if headers.loop_header is not None:
        return "own_mail:x-email-rag"
    domain = message_id_domain.lower().strip()
    if domain and headers.message_id and headers.message_id.rstrip(">").endswith("@" + domain):
        return "own_mail:message_id"
    if headers.from_addr and headers.from_addr.lower() in own_addresses:
        return "own_mail:from_address"
    if headers.auto_submitted and headers.auto_submitted.split(";")[0].strip() != "no":
        return f"auto_submitted:{headers.auto_submitted[:60]}"
    if headers.precedence in AUTO_PRECEDENCE:
        return f"precedence:{headers.precedence}"
    if headers.auto_reply_header:
        return f"auto_reply_header:{headers.auto_reply_header}"
    local = headers.from_addr.lower().partition("@")[0]
    if local in BOUNCE_LOCALPARTS:
        return f"bounce:{local}"
    if headers.content_type == "multipart/report" and headers.report_type == "delivery-status":
        return "bounce:delivery-status"
    if headers.return_path is not None and headers.return_path.strip() in ("<>", ""):
        return "bounce:null_return_path"
    return None
