"""Full MIME parse of a stored mail: a pure function that never raises.

``parse_mail(raw)`` returns a ``ParsedMail`` whose ``parse_status`` says how
far it got (``states.ParseStatus``) and ``reason`` why not further. Text is
decoded as mail clients do: the label's superset codec (``headers.decode_bytes``),
bytes that do not fit become U+FFFD and are named - never a whole-part fallback to
another charset.

  situation                          | parse_status | what is kept
  -----------------------------------|--------------|-----------------------------------------
  clean single or multipart mail     | ok           | text, html, attachments with their text
  HTML only                          | ok           | html, and text converted with html2text
  bytes that do not fit the charset  | partial      | text with U+FFFD where they were
  unknown / missing charset, 8-bit   | partial      | text read as UTF-8, else windows-1252
  invalid base64 / quoted-printable  | partial      | what decodes; the reason names it
  broken or missing MIME boundary    | partial      | the undivided payload as text
  other parser defects               | partial      | what the lenient parser recovered
  more than max_parts MIME parts     | partial      | the parts before the limit (parse stops)
  nesting deeper than MAX_DEPTH      | partial      | the levels above it
  body above max_body_chars          | partial      | text clipped
  a header longer than its column    | partial      | the row keeps the first characters
  (``headers.STORED_CHARS``)         |              |
  UTF-8 byte order mark before the   | as without   | the mail (the mark is skipped)
  first header                       |              |
  HTML above MAX_HTML_CONVERT_CHARS  | partial      | text of its first part
  attachment above the size limit    | ok           | metadata with too_large, no hash, no text
  more attachments than the limit    | partial      | metadata of the first ones
  mail above max_mail_bytes / headers only | too_large | headers
  no header fields at all (garbage)  | failed       | nothing (the raw bytes stay in emails.raw)
  parser crash (a bug)               | failed       | nothing; reason names the exception

Attachments are content: text/* parts, forwarded messages (message/rfc822, their text
and attachments, at most ``MAX_FORWARD_DEPTH`` levels) and PDF / Office documents
(``documents``) give ``attachment_text``, each entry headed ``[attachment N: name
(type, size)]``; at most ``MAX_ATTACHMENT_TEXT_CHARS`` per attachment and
``MAX_ATTACHMENT_TEXT_TOTAL`` in all. Each attachment records its ``part`` path in the
MIME tree (``find_part`` reads it back for a download) and its ``text_status``.

A missing Date or Message-ID is not a defect of the parse: ``sent_at`` stays
empty and the poller deduplicates on a content hash.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from email import policy
from email.feedparser import BytesFeedParser
from email.message import Message
from typing import Any

import html2text

from ..core.states import ParseStatus
from . import documents
from .headers import (
    MailHeaders,
    clean,
    clipped_fields,
    decode_8bit,
    decode_bytes,
    decode_header_value,
    parse_headers,
    strip_bom,
)

MAX_BODY_CHARS = 2_000_000  # MEDIUMTEXT holds 16 MB; 4 bytes per char at worst
MAX_ATTACHMENTS = 100
MAX_PARTS = 500  # MIME entities parsed per mail (a 20,000-part mail stops here)
MAX_DEPTH = 20
MAX_FORWARD_DEPTH = 3  # forwarded messages inside forwarded messages whose text is used
MAX_HTML_CONVERT_CHARS = 100_000  # html2text is slow (~0.3 s per 100,000 characters)
MAX_ATTACHMENT_TEXT_CHARS = 20_000  # per attachment
MAX_ATTACHMENT_TEXT_TOTAL = 60_000  # all attachments of a mail
FEED_CHUNK = 8_192  # bytes fed to the parser between two checks of parts and depth
_TAGS = re.compile(r"<[^>]*>")
_B64_JUNK = re.compile(rb"[^A-Za-z0-9+/=]")
_WHITESPACE = re.compile(rb"\s+")
_QP_BAD = re.compile(rb"=(?![0-9A-Fa-f]{2}|\r?\n|\r|$)", re.M)


@dataclass
class AttachmentInfo:
    filename: str
    content_type: str
    size: int
    disposition: str = "attachment"
    content_id: str | None = None
    sha256: str | None = None  # None when too large (content not examined)
    too_large: bool = False
    part: str = ""  # path in the MIME tree ("1.0": payload indexes), for find_part
    text_status: str | None = None  # extracted / why there is no text
    text_chars: int = 0


@dataclass
class ParsedMail:
    parse_status: ParseStatus
    reason: str | None
    headers: MailHeaders
    body_text: str | None = None
    body_html: str | None = None
    attachments: list[AttachmentInfo] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    attachment_text: str | None = None

    def attachments_json(self) -> str | None:
        if not self.attachments:
            return None
        return json.dumps([asdict(a) for a in self.attachments], ensure_ascii=False)


def parse_mail(raw: bytes, *, size: int | None = None, headers_only: bool = False,
               max_mail_bytes: int = 25_000_000, max_attachment_bytes: int = 10_000_000,
               max_attachments: int = MAX_ATTACHMENTS,
               max_body_chars: int = MAX_BODY_CHARS, max_parts: int = MAX_PARTS,
               extract: bool = True, headers: MailHeaders | None = None) -> ParsedMail:
    """Parse ``raw`` (never raises). ``size`` is the real size when ``raw`` was cut.
    ``extract`` False: attachments are listed without reading their text (the poller's
    inline parse of mails that get no further processing). ``headers``: ``parse_headers(raw)``
    when the caller has it already (the poller), so it is not parsed twice."""
    size = len(raw) if size is None else size
    try:
        if headers is None:
            headers = parse_headers(raw)
        if not headers.ok:
            return ParsedMail(ParseStatus.FAILED, headers.reason, headers)
        if headers_only or size > max_mail_bytes:
            return ParsedMail(ParseStatus.TOO_LARGE, too_large_reason(size, max_mail_bytes),
                              headers)
        root, cut = parse_tree(raw, max_parts)
        walker = _Walker(headers, max_attachment_bytes, max_attachments, max_body_chars,
                         extract)
        if cut:
            walker.problem(cut)
        return walker.run(root)
    except Exception as e:  # noqa: BLE001 - the contract: never raise on untrusted input
        return ParsedMail(ParseStatus.FAILED, f"parser error: {type(e).__name__}: {e}"[:1000],
                          MailHeaders(ok=False, reason="parser error"))


def parse_tree(raw: bytes, max_parts: int = MAX_PARTS) -> tuple[Message, str | None]:
    """The MIME tree of ``raw`` (the lenient compat32 parser), never beyond ``max_parts``
    entities: the parser is fed in chunks and stops once the limit is passed, so a mail of
    20,000 tiny parts costs what 500 cost. Returns (root, why it stopped early or None)."""
    raw = strip_bom(raw)  # a byte order mark before the first header is not part of it
    count = [0]

    class _Counted(Message):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            count[0] += 1
            super().__init__(*args, **kwargs)

    parser = BytesFeedParser(_factory=_Counted, policy=policy.compat32)
    count[0] = 0
    why = None
    for start in range(0, len(raw), FEED_CHUNK):
        parser.feed(raw[start:start + FEED_CHUNK])
        end = min(len(raw), start + FEED_CHUNK)
        if count[0] > max_parts:
            why = (f"more than {max_parts} MIME parts: parsed up to byte {end} of {len(raw)}, "
                   "the parts after that are not read")
            break
        # the parser's stack of open parts: deep nesting costs it quadratic time
        if len(getattr(parser, "_msgstack", ())) > MAX_DEPTH + 5:
            why = (f"MIME nesting deeper than {MAX_DEPTH + 5} levels: parsed up to byte {end} "
                   f"of {len(raw)}, the rest is not read")
            break
    return parser.close(), why


def find_part(raw: bytes, path: str, max_parts: int = MAX_PARTS) -> Message | None:
    """The MIME part at ``path`` (``AttachmentInfo.part``) of ``raw``, or None."""
    node: Any = parse_tree(raw, max_parts)[0]
    for step in [p for p in path.split(".") if p != ""]:
        payload = node.get_payload() if isinstance(node, Message) else None
        if not isinstance(payload, list) or not step.isdigit() or int(step) >= len(payload):
            return None
        node = payload[int(step)]
    return node if isinstance(node, Message) else None


def too_large_reason(size: int, limit: int) -> str:
    return (f"mail is {size} bytes, above the limit of {limit} bytes: "
            "headers kept, body not stored")


def human_size(n: int) -> str:
    for unit in ("bytes", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


class _Budget:
    """Attachment text left for this mail (shared by forwarded messages)."""

    def __init__(self, total: int) -> None:
        self.left = total


class _Walker:
    def __init__(self, headers: MailHeaders, max_attachment_bytes: int, max_attachments: int,
                 max_body_chars: int, extract: bool = True, parent: _Walker | None = None,
                 forward_depth: int = 0) -> None:
        self.headers = headers
        self.max_attachment_bytes = max_attachment_bytes
        self.max_attachments = max_attachments
        self.max_body_chars = max_body_chars
        self.extract = extract
        self.forward_depth = forward_depth
        self.texts: list[str] = []
        self.htmls: list[str] = []
        # shared with forwarded messages: one list of attachments, problems and budget
        self.attachments: list[AttachmentInfo] = parent.attachments if parent else []
        self.problems: list[str] = parent.problems if parent else []
        self.entries: list[str] = parent.entries if parent else []
        self.budget = parent.budget if parent else _Budget(MAX_ATTACHMENT_TEXT_TOTAL)
        self.skipped = parent.skipped if parent else [0]

    def problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def run(self, msg: Message) -> ParsedMail:
        for clipped in clipped_fields(self.headers):
            self.problem(clipped)
        self.visit(msg, 0, "")
        text, html = self.body()
        if self.skipped[0]:
            self.problem(f"{self.skipped[0]} more attachment(s) beyond the limit of "
                         f"{self.max_attachments} not recorded")
        status = ParseStatus.PARTIAL if self.problems else ParseStatus.OK
        reason = "; ".join(self.problems)[:2000] or None
        attachment_text = clean("\n\n".join(self.entries)) or None
        return ParsedMail(status, reason, self.headers, clean(text), clean(html) or None,
                          self.attachments, self.problems, attachment_text)

    def body(self) -> tuple[str, str | None]:
        text = "\n\n".join(t for t in self.texts if t.strip())
        html = "\n".join(self.htmls) or None
        if not text.strip() and html:
            text = self.html_text(html)
        if len(text) > self.max_body_chars:
            text = text[:self.max_body_chars]
            self.problem(f"body text clipped to {self.max_body_chars} characters")
        if html and len(html) > self.max_body_chars:
            html = html[:self.max_body_chars]
            self.problem(f"HTML body clipped to {self.max_body_chars} characters")
        return text, html

    def html_text(self, html: str) -> str:
        if len(html) > MAX_HTML_CONVERT_CHARS:
            self.problem(f"HTML of {len(html)} characters: only the first "
                         f"{MAX_HTML_CONVERT_CHARS} made into text")
        return html_to_text(html, MAX_HTML_CONVERT_CHARS)

    def visit(self, part: Message, depth: int, path: str) -> None:
        for defect in getattr(part, "defects", []) or []:
            self.problem(f"MIME defect: {type(defect).__name__}")
        if depth > MAX_DEPTH:
            self.problem(f"MIME nesting deeper than {MAX_DEPTH} levels ignored")
            return
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            self.forwarded(part, depth, path)
            return
        if part.is_multipart():
            payload = part.get_payload()
            for i, sub in enumerate(payload if isinstance(payload, list) else []):
                if isinstance(sub, Message):
                    self.visit(sub, depth + 1, f"{path}.{i}" if path else str(i))
            return
        if ctype.startswith("multipart/"):
            # the lenient parser found no usable boundary: keep the undivided text
            self.problem("broken MIME structure: multipart without usable boundary, "
                         "kept as plain text")
            self.texts.append(self.decode_text(part))
            return
        disposition = (part.get_content_disposition() or "").lower()
        filename = part_filename(part)
        if disposition == "attachment" or (filename and ctype not in ("text/plain", "text/html")):
            self.attach(part, ctype, path, filename=filename)
        elif ctype in ("text/plain", "text/html"):
            data, problem = decode_payload(part)
            if binary_content(part, data):  # e.g. an image labelled text/plain: never text
                self.attach(part, ctype, path, filename=filename,
                            disposition=disposition or "inline")
                return
            text = self.decode_text(part, data, problem)
            (self.texts if ctype == "text/plain" else self.htmls).append(text)
        else:
            self.attach(part, ctype, path, filename=filename, disposition=disposition or "inline")

    def decode_text(self, part: Message, data: bytes | None = None,
                    problem: str | None = None) -> str:
        if data is None:
            data, problem = decode_payload(part)
        if problem:
            self.problem(problem)
        text, problem = decode_bytes(data, part.get_content_charset())
        if problem:
            self.problem(problem)
        return text.replace("\r\n", "\n")

    def record(self, info: AttachmentInfo) -> AttachmentInfo | None:
        if len(self.attachments) >= self.max_attachments:
            self.skipped[0] += 1
            return None
        self.attachments.append(info)
        return info

    def attach(self, part: Message, ctype: str, path: str, filename: str = "",
               disposition: str = "attachment") -> None:
        data, problem = decode_payload(part)
        if problem:
            self.problem(f"attachment {filename or ctype}: {problem}")
        too_large = len(data) > self.max_attachment_bytes
        cid = part.get("Content-ID")
        info = self.record(AttachmentInfo(
            filename=filename or "unnamed", content_type=ctype, size=len(data),
            disposition=disposition, content_id=clean(str(cid), 255) if cid else None,
            sha256=None if too_large else hashlib.sha256(data).hexdigest(),
            too_large=too_large, part=path))
        if info is None:
            return
        if too_large:
            info.text_status = "not read: above the attachment size limit"
        elif self.extract:
            text, info.text_status = self.attachment_text(part, ctype, filename, data)
            self.add_entry(info, text)

    def attachment_text(self, part: Message, ctype: str, filename: str,
                        data: bytes) -> tuple[str, str]:
        what = binary_content(part, data)
        if what == "PDF document":  # a PDF is read as one, whatever its label says
            return documents.extract_text("pdf", data, MAX_ATTACHMENT_TEXT_CHARS)
        if what and (ctype.startswith("text/") or ctype in documents.RTF_TYPES):
            return "", f"no text: labelled {ctype} but the content is a {what} (magic bytes)"
        if ctype.startswith(("image/", "audio/", "video/")):
            return "", documents.no_text_reason(ctype, filename, data)
        if ctype in documents.RTF_TYPES or data.lstrip()[:5] == b"{\\rtf":
            return documents.extract_text("rtf", data, MAX_ATTACHMENT_TEXT_CHARS)
        if ctype == "text/html":
            text, _ = decode_bytes(data, part.get_content_charset())
            return html_to_text(text, MAX_HTML_CONVERT_CHARS), "extracted"
        if ctype.startswith("text/"):
            text, problem = decode_bytes(data, part.get_content_charset())
            return text.replace("\r\n", "\n"), ("extracted" + (f" ({problem})" if problem else ""))
        kind = documents.document_kind(ctype, filename, data)
        if kind is None:
            return "", documents.no_text_reason(ctype, filename, data)
        return documents.extract_text(kind, data, MAX_ATTACHMENT_TEXT_CHARS)

    def add_entry(self, info: AttachmentInfo, text: str, heading: str | None = None) -> None:
        text = clean(text).strip()
        if not text:
            return
        if self.budget.left <= 0:
            info.text_status = (f"not used: the attachment text of this mail is limited to "
                                f"{MAX_ATTACHMENT_TEXT_TOTAL} characters")
            return
        limit = min(MAX_ATTACHMENT_TEXT_CHARS, self.budget.left)
        if len(text) > limit:
            text = text[:limit] + "\n[... cut]"
            info.text_status = f"{info.text_status}; clipped to {limit} characters"
        self.budget.left -= len(text)
        info.text_chars = len(text)
        n = self.attachments.index(info) + 1
        head = heading or (f"[attachment {n}: {info.filename} ({info.content_type}, "
                           f"{human_size(info.size)})]")
        self.entries.append(f"{head}\n{text}")

    def forwarded(self, part: Message, depth: int, path: str) -> None:
        """A forwarded message: listed as an .eml attachment; its text and attachments are
        content too (up to MAX_FORWARD_DEPTH levels)."""
        data = attachment_bytes(part)
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        subject = clean(decode_header_value(inner.get("Subject")), 200) if inner else ""
        sender = clean(decode_header_value(inner.get("From")), 200) if inner else ""
        info = self.record(AttachmentInfo(
            filename=part_filename(part) or f"{subject or 'forwarded message'}.eml"[:255],
            content_type="message/rfc822", size=len(data), disposition="attachment",
            sha256=hashlib.sha256(data).hexdigest(), part=path))
        if info is None or not self.extract or not isinstance(inner, Message):
            return
        if self.forward_depth >= MAX_FORWARD_DEPTH:
            info.text_status = f"not read: forwarded more than {MAX_FORWARD_DEPTH} levels deep"
            return
        child = _Walker(self.headers, self.max_attachment_bytes, self.max_attachments,
                        self.max_body_chars, True, parent=self,
                        forward_depth=self.forward_depth + 1)
        at = len(self.entries)
        child.visit(inner, depth + 1, f"{path}.0" if path else "0")
        text, _ = child.body()
        info.text_status = "extracted"
        n = self.attachments.index(info) + 1
        heading = (f"[attachment {n}: forwarded message \"{subject}\" from {sender or '?'}]")
        entries_after = self.entries[at:]
        del self.entries[at:]
        self.add_entry(info, text, heading)
        self.entries.extend(entries_after)


def binary_content(part: Message, data: bytes) -> str | None:
    """What a part's bytes really are when they are binary (``documents.sniff``), else None
    (NUL bytes are text in a part labelled UTF-16/UTF-32)."""
    what = documents.sniff(data)
    if what and "NUL" in what and (part.get_content_charset() or "").startswith(("utf-16",
                                                                               "utf-32")):
        return None
    return what


def part_filename(part: Message) -> str:
    """The part's file name: RFC 2231 and encoded-words decoded, raw 8-bit bytes read as
    UTF-8 (else windows-1252) - never U+FFFD for a name a client can show."""
    raw = {k.lower(): v for k, v in reversed(list(part.raw_items()))}  # first of each
    for header in ("Content-Disposition", "Content-Type"):
        value = raw.get(header.lower())  # as parsed: 8-bit bytes still surrogate escapes
        if value is None:
            continue
        probe = Message()
        probe[header] = decode_8bit(str(value))
        try:
            name = (probe.get_filename() if header == "Content-Disposition"
                    else probe.get_param("name"))
        except Exception:  # noqa: BLE001
            name = None
        if isinstance(name, tuple):  # an RFC 2231 triple get_param did not collapse
            from email.utils import collapse_rfc2231_value

            name = collapse_rfc2231_value(name)
        if name:
            return clean(decode_header_value(str(name)), 255)
    return ""


def decode_payload(part: Message) -> tuple[bytes, str | None]:
    """The part's bytes after its Content-Transfer-Encoding, and the defect found."""
    # the stored payload as parsed (get_payload() would decode 8-bit text with "replace"
    # by the part's charset before we could look at the bytes)
    payload: Any = getattr(part, "_payload", None)
    if isinstance(payload, list):
        return b"", None
    if isinstance(payload, bytes):
        data = payload
    else:
        data = str(payload or "").encode("utf-8", "surrogateescape")
    cte = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
    if cte == "base64":
        return decode_base64(data)
    if cte == "quoted-printable":
        bad = len(_QP_BAD.findall(data))
        out = binascii.a2b_qp(data)
        return out, (f"{bad} invalid quoted-printable escape(s) kept as text" if bad else None)
    if cte in ("", "7bit", "8bit", "binary"):
        return data, None
    if cte in ("x-uuencode", "uuencode", "x-uue", "uue"):
        try:
            decoded = part.get_payload(decode=True)
            return (decoded if isinstance(decoded, bytes) else data), None
        except Exception:  # noqa: BLE001
            return data, "unreadable uuencode: kept as is"
    return data, f"unknown transfer encoding {cte[:40]!r}: kept as is"


def decode_base64(data: bytes) -> tuple[bytes, str | None]:
    """Base64 as a lenient client reads it, with the defects named: characters outside
    the alphabet are dropped, data after padding is decoded on its own, a lone last
    character is dropped."""
    compact = _WHITESPACE.sub(b"", data)
    junk = len(_B64_JUNK.findall(compact))
    cleaned = _B64_JUNK.sub(b"", compact) if junk else compact
    problems = []
    if junk:
        problems.append(f"{junk} character(s) outside the base64 alphabet dropped")
    segments = [s for s in re.split(rb"=+", cleaned) if s]
    if len(segments) > 1:
        problems.append("base64 data continues after its padding")
    out = bytearray()
    for seg in segments:
        if len(seg) % 4 == 1:
            seg = seg[:-1]
            problems.append("base64 data ends in a lone character (dropped)")
        try:
            out += binascii.a2b_base64(seg + b"=" * (-len(seg) % 4))
        except binascii.Error as e:
            problems.append(f"invalid base64: {e}")
    return bytes(out), ("invalid base64: " + "; ".join(problems)) if problems else None


def attachment_bytes(part: Message) -> bytes:
    """The bytes of an attachment as a download gives them: the decoded payload, or for a
    forwarded message (message/rfc822) the message itself (an .eml file)."""
    if part.get_content_type() != "message/rfc822":
        return decode_payload(part)[0]
    payload = part.get_payload()
    node = payload[0] if isinstance(payload, list) and payload else part
    try:
        return node.as_bytes()
    except Exception:  # noqa: BLE001
        return str(node.get_payload()).encode("utf-8", "replace")


def html_to_text(html: str, max_chars: int = MAX_BODY_CHARS) -> str:
    """Readable text of an HTML body (html2text; tag stripping if that fails)."""
    html = html[:max_chars]
    try:
        conv = html2text.HTML2Text()
        conv.body_width = 0
        conv.ignore_images = True
        conv.unicode_snob = True
        return conv.handle(html).strip()
    except Exception:  # noqa: BLE001
        return re.sub(r"\s+", " ", _TAGS.sub(" ", html)).strip()
