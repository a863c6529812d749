"""Fast, robust header parsing for the poller: pure functions that never raise.

The poller reads only the header block of each mail (Message-ID, addresses,
subject, date, threading and auto-reply headers); the full MIME parse happens
later in the pipeline (``email_rag.mail.mime``). Everything here is
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
from email.utils import parsedate_to_datetime
from typing import Any

from .addresses import parse_addresses

LOOP_HEADER = "X-Email-RAG"  # set on every mail we send; its presence marks our own mail
AUTO_PRECEDENCE = {"bulk", "junk", "list", "auto_reply"}
AUTO_REPLY_HEADERS = ("X-Autoreply", "X-Autorespond", "X-Autoresponder", "X-Autoreply-From",
                      "X-Mail-Autoreply")
# a mailing list's mail (RFC 2369 / 2919): answering it would answer the list
LIST_HEADERS = ("list-id", "list-unsubscribe", "list-post", "list-help")
BOUNCE_LOCALPARTS = {"mailer-daemon", "postmaster"}

_SEPARATOR = re.compile(rb"\r?\n\r?\n")
_MSGID = re.compile(r"<([^<>\s]+)>")
_WS = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


# --- decoding helpers (shared with mime.py) ---
# Labels mail clients (and the WHATWG encoding standard) read as a superset codec: the
# label names the smaller charset, the text uses the larger one (curly quotes and the
# euro sign in "iso-8859-1" mail, GBK characters in "gb2312" mail, ...).
SUPERSET_CODECS = {
    "iso8859-1": "cp1252", "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949",
    "shift_jis": "cp932", "big5": "big5hkscs", "iso8859-9": "cp1254", "tis-620": "cp874",
    "iso8859-11": "cp874",
}
_LABEL_ALIASES = {"x-sjis": "cp932", "sjis": "cp932", "windows-31j": "cp932",
                  "x-gbk": "gb18030", "ks_c_5601": "cp949", "x-windows-949": "cp949",
                  "utf8mb4": "utf-8", "x-unicode20utf8": "utf-8"}
_NO_LABEL = ("unknown-8bit", "x-unknown", "8bit", "default", "")


def charset_codec(charset: str | None) -> str | None:
    """The Python codec that decodes text labelled ``charset`` as mail clients do (the
    superset of the label), or None when the label is missing or unknown."""
    if not charset:
        return None
    name = charset.strip().strip('"').strip("'").lower()
    if name in _NO_LABEL:
        return None
    name = _LABEL_ALIASES.get(name, name)
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):  # rot13, base64, zlib: not charsets
        return None
    return SUPERSET_CODECS.get(info.name, info.name)


def _undeclared(data: bytes) -> tuple[str, str]:
    """8-bit text without a usable label: UTF-8 when it is valid UTF-8, else windows-1252."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace"), "windows-1252"


def decode_bytes(data: bytes, charset: str | None = None) -> tuple[str, str | None]:
    """Text of ``data`` and the defect found (None when the bytes fit the label).

    A known label is decoded with its superset codec and ``errors="replace"``: bytes
    that do not fit become U+FFFD and are named in the defect - the part is never
    decoded with another charset. Without a label (or a 7-bit / unknown one) ASCII is
    ASCII and 8-bit text is read as UTF-8 when valid, else as windows-1252.
    """
    label = (charset or "").strip().strip('"')
    codec = charset_codec(charset)
    if codec is None or codec == "ascii":
        unknown = bool(label) and codec is None and label.lower() not in _NO_LABEL
        if data.isascii():
            return data.decode("ascii"), (f"unknown charset {label!r}" if unknown else None)
        text, how = _undeclared(data)
        if unknown:
            return text, f"unknown charset {label!r}: 8-bit text decoded as {how}"
        if codec == "ascii":
            return text, f"8-bit bytes in a part labelled {label!r}: decoded as {how}"
        return text, (None if how == "utf-8" else
                      "no charset declared: 8-bit text decoded as windows-1252")
    try:
        return data.decode(codec), None
    except UnicodeDecodeError:
        text = data.decode(codec, "replace")
    except LookupError:
        text, how = _undeclared(data)
        return text, f"charset {label!r} cannot be decoded here: 8-bit text decoded as {how}"
    bad = text.count("\ufffd")
    return text, (f"part labelled {label!r}: {bad} byte sequence(s) not valid {codec}, "
                  "replaced by U+FFFD")


def decode_8bit(text: str) -> str:
    """A header value with raw 8-bit bytes (surrogate escapes) as text."""
    if not _SURROGATE.search(text):
        return text
    return decode_bytes(text.encode("utf-8", "surrogateescape"))[0]


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
    from_addrs: list[str] = field(default_factory=list)  # every address the From names
    reply_to: list[str] = field(default_factory=list)
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
    auto_response_suppress: str = ""  # X-Auto-Response-Suppress (Exchange)
    list_header: str | None = None  # name of a List-* header when present (mailing list)
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
        h.from_addrs = [a for _, a in addrs]
    h.reply_to = [a for _, a in _addresses(fields.get("reply-to"))]
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
    h.auto_response_suppress = get("X-Auto-Response-Suppress").lower()
    h.list_header = next((n for n in LIST_HEADERS if n in fields), None)
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


def _addresses(values: list[Any] | None) -> list[tuple[str, str]]:
    """(display name, address) of every address in these header values
    (``addresses.parse_addresses``: never an address taken from a display name)."""
    out: list[tuple[str, str]] = []
    for value in values or []:
        text = _WS.sub(" ", clean(decode_8bit(str(value)))).strip()
        for display, addr in parse_addresses(text, decode_header_value):
            addr = clean(addr).strip()
            if addr:
                out.append((display, addr))
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


def content_hash(headers: MailHeaders, raw: bytes, size: int | None = None) -> str:
    """sha256 of what a mail says: raw From/To/Cc/Subject/Date and the body.

    Trace headers added per delivery (Received, Delivered-To) are not covered, so a
    redelivered mail has the same hash; a different mail under the same Message-ID has
    another one.
    """
    if not headers.ok:
        return sha256(b"raw:" + raw)
    _, body = split_header_block(raw)
    tail = body if body else f"size:{size if size is not None else len(raw)}".encode()
    return sha256(b"content:" + headers.stable + b"\n\n" + tail)


def dedup_key(headers: MailHeaders, raw: bytes, size: int | None = None) -> str:
    """sha256 of the normalised Message-ID, or the content hash when it is missing.

    A mail is a duplicate when both its dedup key and its content hash are stored
    already (``ingest.store``); the same key with another content hash is a different
    mail reusing a Message-ID.
    """
    if headers.ok and headers.message_id:
        return sha256("mid:" + headers.message_id)
    return content_hash(headers, raw, size)


def thread_key(headers: MailHeaders, fallback: str) -> str:
    root = headers.thread_root if headers.ok else None
    return sha256("mid:" + root) if root else fallback


_CALENDAR = re.compile(rb"text/calendar", re.I)
_CAL_METHOD = re.compile(rb"(?:\bmethod\s*=\s*\"?|^METHOD:)\s*([A-Za-z]+)", re.I | re.M)
CALENDAR_METHODS = {"request", "reply", "cancel", "counter", "declinecounter", "refresh", "add"}
AUTO_RESPONSE_SUPPRESS = {"all", "oof", "autoreply", "dr", "ndr", "rn", "nrn"}


def calendar_method(raw: bytes) -> str | None:
    """The iTIP method (request, reply, cancel, ...) of a calendar part in the mail, or None.

    Read from the text/calendar part's ``method=`` parameter or its ``METHOD:`` line (a
    byte search, no MIME parse: the poller reads headers only)."""
    m = _CALENDAR.search(raw)
    if not m:
        return None
    for found in _CAL_METHOD.finditer(raw, max(0, m.start() - 2000)):
        method = found.group(1).decode("ascii", "replace").lower()
        if method in CALENDAR_METHODS:
            return method
    return None


def loop_guard(headers: MailHeaders, message_id_domain: str,
               own_addresses: set[str] | frozenset[str] = frozenset(), raw: bytes = b"",
               list_headers: bool = True) -> str | None:
    """Why no reply may be drafted for this mail, or None.

    Our own mail; RFC 3834 (Auto-Submitted); the vendor headers of auto-responders
    (X-Autoreply, X-Autorespond, Exchange's X-Auto-Response-Suppress), Precedence
    bulk/junk/list/auto_reply, mailing lists (List-*; ``list_headers`` False when the
    support address itself is a list); bounces; calendar scheduling (iTIP REQUEST, REPLY,
    CANCEL, ...: an invitation or its answer is not a support request).
    """
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
    suppress = {v.strip() for v in headers.auto_response_suppress.split(",")}
    if suppress & AUTO_RESPONSE_SUPPRESS:
        return f"x-auto-response-suppress:{headers.auto_response_suppress[:50]}"
    local = headers.from_addr.lower().partition("@")[0]
    if local in BOUNCE_LOCALPARTS:
        return f"bounce:{local}"
    if headers.content_type == "multipart/report" and headers.report_type == "delivery-status":
        return "bounce:delivery-status"
    if headers.return_path is not None and headers.return_path.strip() in ("<>", ""):
        return "bounce:null_return_path"
    if list_headers and headers.list_header:
        return f"mailing_list:{headers.list_header}"
    method = calendar_method(raw) if raw else None
    if method:
        return f"calendar:{method}"
    return None
