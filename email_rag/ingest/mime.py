"""Full MIME parse of a stored mail: a pure function that never raises.

``parse_mail(raw)`` returns a ``ParsedMail`` whose ``parse_status`` says how
far it got (``states.ParseStatus``) and ``reason`` why not further:

  situation                          | parse_status | what is kept
  -----------------------------------|--------------|-----------------------------------------
  clean single or multipart mail     | ok           | text, html, attachment metadata
  HTML only                          | ok           | html, and text converted with html2text
  wrong / unknown charset declared   | partial      | text decoded with UTF-8 / cp1252 fallback
  broken or missing MIME boundary    | partial      | the undivided payload as text
  other parser defects               | partial      | what the lenient parser recovered
  body above max_body_chars          | partial      | text clipped
  attachment above the size limit    | ok           | metadata with too_large, no hash
  more attachments than the limit    | partial      | metadata of the first ones
  mail above max_mail_bytes / headers only | too_large | headers
  no header fields at all (garbage)  | failed       | nothing (the raw bytes stay in emails.raw)
  parser crash (a bug)               | failed       | nothing; reason names the exception

A missing Date or Message-ID is not a defect of the parse: ``sent_at`` stays
empty and the poller deduplicates on a content hash.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from email import policy
from email.message import Message
from email.parser import BytesParser
from typing import Any

import html2text

from ..states import ParseStatus
from .headers import (
    MailHeaders,
    clean,
    decode_bytes,
    decode_header_value,
    parse_headers,
)

MAX_BODY_CHARS = 2_000_000  # MEDIUMTEXT holds 16 MB; 4 bytes per char at worst
MAX_ATTACHMENTS = 100
MAX_DEPTH = 20
_PARSER = BytesParser(policy=policy.compat32)
_TAGS = re.compile(r"<[^>]*>")


@dataclass
class AttachmentInfo:
    filename: str
    content_type: str
    size: int
    disposition: str = "attachment"
    content_id: str | None = None
    sha256: str | None = None  # None when too large (content not examined)
    too_large: bool = False


@dataclass
class ParsedMail:
    parse_status: ParseStatus
    reason: str | None
    headers: MailHeaders
    body_text: str | None = None
    body_html: str | None = None
    attachments: list[AttachmentInfo] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def attachments_json(self) -> str | None:
        if not self.attachments:
            return None
        return json.dumps([asdict(a) for a in self.attachments], ensure_ascii=False)


def parse_mail(raw: bytes, *, size: int | None = None, headers_only: bool = False,
               max_mail_bytes: int = 25_000_000, max_attachment_bytes: int = 10_000_000,
               max_attachments: int = MAX_ATTACHMENTS,
               max_body_chars: int = MAX_BODY_CHARS) -> ParsedMail:
    """Parse ``raw`` (never raises). ``size`` is the real size when ``raw`` was cut."""
    size = len(raw) if size is None else size
    try:
        headers = parse_headers(raw)
        if not headers.ok:
            return ParsedMail(ParseStatus.FAILED, headers.reason, headers)
        if headers_only or size > max_mail_bytes:
            return ParsedMail(ParseStatus.TOO_LARGE, too_large_reason(size, max_mail_bytes),
                              headers)
        return _Walker(headers, max_attachment_bytes, max_attachments,
                       max_body_chars).run(_PARSER.parsebytes(raw))
    except Exception as e:  # noqa: BLE001 - the contract: never raise on untrusted input
        return ParsedMail(ParseStatus.FAILED, f"parser error: {type(e).__name__}: {e}"[:1000],
                          MailHeaders(ok=False, reason="parser error"))


def too_large_reason(size: int, limit: int) -> str:
    return (f"mail is {size} bytes, above the limit of {limit} bytes: "
            "headers kept, body not stored")


class _Walker:
    def __init__(self, headers: MailHeaders, max_attachment_bytes: int, max_attachments: int,
                 max_body_chars: int) -> None:
        self.headers = headers
        self.max_attachment_bytes = max_attachment_bytes
        self.max_attachments = max_attachments
        self.max_body_chars = max_body_chars
        self.texts: list[str] = []
        self.htmls: list[str] = []
        self.attachments: list[AttachmentInfo] = []
        self.problems: list[str] = []
        self.skipped_attachments = 0

    def problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def run(self, msg: Message) -> ParsedMail:
        self.visit(msg, 0)
        text = "\n\n".join(t for t in self.texts if t.strip())
        html = "\n".join(self.htmls) or None
        if not text.strip() and html:
            text = html_to_text(html, self.max_body_chars)
        if len(text) > self.max_body_chars:
            text = text[:self.max_body_chars]
            self.problem(f"body text clipped to {self.max_body_chars} characters")
        if html and len(html) > self.max_body_chars:
            html = html[:self.max_body_chars]
            self.problem(f"HTML body clipped to {self.max_body_chars} characters")
        if self.skipped_attachments:
            self.problem(f"{self.skipped_attachments} more attachment(s) beyond the limit of "
                         f"{self.max_attachments} not recorded")
        status = ParseStatus.PARTIAL if self.problems else ParseStatus.OK
        reason = "; ".join(self.problems)[:2000] or None
        return ParsedMail(status, reason, self.headers, clean(text), clean(html) or None,
                          self.attachments, self.problems)

    def visit(self, part: Message, depth: int) -> None:
        for defect in getattr(part, "defects", []) or []:
            self.problem(f"MIME defect: {type(defect).__name__}")
        if depth > MAX_DEPTH:
            self.problem(f"MIME nesting deeper than {MAX_DEPTH} levels ignored")
            return
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            self.attach(part, ctype, forwarded=True)
            return
        if part.is_multipart():
            payload = part.get_payload()
            for sub in payload if isinstance(payload, list) else []:
                if isinstance(sub, Message):
                    self.visit(sub, depth + 1)
            return
        if ctype.startswith("multipart/"):
            # the lenient parser found no usable boundary: keep the undivided text
            self.problem("broken MIME structure: multipart without usable boundary, "
                         "kept as plain text")
            self.texts.append(self.decode_text(part))
            return
        disposition = (part.get_content_disposition() or "").lower()
        filename = self.filename(part)
        if disposition == "attachment" or (filename and ctype not in ("text/plain", "text/html")):
            self.attach(part, ctype, filename=filename)
        elif ctype == "text/plain":
            self.texts.append(self.decode_text(part))
        elif ctype == "text/html":
            self.htmls.append(self.decode_text(part))
        else:
            self.attach(part, ctype, filename=filename, disposition=disposition or "inline")

    def decode_text(self, part: Message) -> str:
        data = payload_bytes(part)
        charset = part.get_content_charset()
        text, problem = decode_bytes(data, charset)
        if problem:
            self.problem(problem)
        return text.replace("\r\n", "\n")

    def filename(self, part: Message) -> str:
        try:
            name = part.get_filename()
        except Exception:  # noqa: BLE001
            name = None
        return clean(decode_header_value(name), 255) if name else ""

    def attach(self, part: Message, ctype: str, filename: str = "", forwarded: bool = False,
               disposition: str = "attachment") -> None:
        if len(self.attachments) >= self.max_attachments:
            self.skipped_attachments += 1
            return
        if forwarded:
            data = _safe_bytes(part)
            filename = filename or "forwarded-message.eml"
        else:
            data = payload_bytes(part)
        too_large = len(data) > self.max_attachment_bytes
        cid = part.get("Content-ID")
        self.attachments.append(AttachmentInfo(
            filename=filename or "unnamed",
            content_type=ctype,
            size=len(data),
            disposition=disposition,
            content_id=clean(str(cid), 255) if cid else None,
            sha256=None if too_large else hashlib.sha256(data).hexdigest(),
            too_large=too_large,
        ))


def payload_bytes(part: Message) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except Exception:  # noqa: BLE001
        data = None
    if isinstance(data, bytes):
        return data
    raw: Any = part.get_payload()
    if isinstance(raw, str):
        return raw.encode("ascii", "surrogateescape")
    return b""


def _safe_bytes(part: Message) -> bytes:
    try:
        return part.as_bytes()
    except Exception:  # noqa: BLE001
        return str(part.get_payload()).encode("utf-8", "replace")


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
