"""One MIME part of a stored mail, found and decoded piece by piece (never the whole mail).

``locate(read, size, path)`` walks the mail's lines through ``read(offset, length)`` (a
slice of the stored bytes) to the part at ``path`` (``AttachmentInfo.part``: payload
indexes, as ``find_part`` follows them) and returns the byte range of its body and its
transfer encoding; ``decoded(read, where)`` yields the body decoded in pieces. Both read
at most ``PIECE`` bytes at a time and keep only one piece (plus a line) in memory.

Parts are delimited as the lenient compat32 parser delimits them (a boundary line
``--B``, ``--B--``, trailing blanks allowed; the line break before it belongs to it).
What this reader does not follow gives None and the caller reads the part the whole way
(``find_part``): a forwarded message as the part itself (served re-serialised), a
transfer encoding other than base64, quoted-printable and the identity ones, a header
block above ``MAX_HEADER_BYTES``, a part path that leads nowhere.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email import policy
from email.parser import BytesHeaderParser

Read = Callable[[int, int], bytes]  # (0-based offset, length) -> the stored bytes there

PIECE = 1024 * 1024
MAX_HEADER_BYTES = 256 * 1024
LINE_HEAD = 1000  # bytes of a line kept for matching (a boundary line is shorter)
STREAMED = ("base64", "quoted-printable", "", "7bit", "8bit", "binary")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class PartRange:
    """The body of a part: bytes ``start`` to ``end`` (exclusive) of the stored mail."""

    start: int
    end: int
    encoding: str  # its Content-Transfer-Encoding, lower case


def _lines(read: Read, start: int, end: int) -> Iterator[tuple[int, int, bytes]]:
    """(offset, length, first LINE_HEAD bytes) of each line in [start, end), its line
    break included; a line longer than a piece is passed over without being kept."""
    buf, at, i = b"", start, 0  # buf holds bytes [at, at + len(buf)); i: where a line starts
    line_at, head, long = start, b"", False
    while True:
        nl = buf.find(b"\n", i)
        if nl >= 0:
            if long:
                yield line_at, at + nl + 1 - line_at, head
                long = False
            else:
                yield at + i, nl + 1 - i, buf[i : min(nl + 1, i + LINE_HEAD)]
            i = nl + 1
            continue
        if not long and len(buf) - i > max(PIECE, LINE_HEAD):  # no end in sight: keep its head
            line_at, head, long = at + i, buf[i : i + LINE_HEAD], True
            i = len(buf)
        done = at + len(buf)
        more = read(done, min(PIECE, end - done)) if done < end else b""
        if not more:
            if long:
                yield line_at, done - line_at, head
            elif i < len(buf):
                yield at + i, len(buf) - i, buf[i : i + LINE_HEAD]
            return
        buf, at, i = buf[i:] + more, at + i, 0


def _entity(read: Read, start: int, end: int, steps: list[str]) -> PartRange | None:
    """The part at ``steps`` inside the entity (headers, blank line, body) at [start, end)."""
    lines = _lines(read, start, end)
    header, body_start = bytearray(), end
    for at, length, head in lines:
        if head.strip(b"\r\n") == b"":
            body_start = at + length
            break
        if length != len(head) or len(header) + length > MAX_HEADER_BYTES:
            return None
        header += head
    fields = BytesHeaderParser(policy=policy.compat32).parsebytes(bytes(header))
    if not steps:
        encoding = str(fields.get("Content-Transfer-Encoding", "")).strip().lower()
        if fields.get_content_type() == "message/rfc822" or encoding not in STREAMED:
            return None
        return PartRange(body_start, max(body_start, end), encoding)
    step = steps[0]
    if not step.isdigit():
        return None
    if fields.get_content_type() == "message/rfc822":
        return _entity(read, body_start, end, steps[1:]) if step == "0" else None
    boundary = fields.get_boundary() if fields.get_content_maintype() == "multipart" else None
    if not boundary:
        return None
    marker = b"--" + boundary.encode("utf-8", "surrogateescape")
    index, part_at = -1, None
    for before, after, closing in _delimiters(read, body_start, end, marker):
        if index == int(step):
            return _entity(read, part_at, max(part_at, before), steps[1:])
        if closing:
            return None
        index, part_at = index + 1, after
    if index == int(step) and part_at is not None:  # the closing boundary is missing
        return _entity(read, part_at, end, steps[1:])
    return None


_REST = re.compile(rb"(--)?[ \t]*\r?\n?")


def _delimiters(read: Read, start: int, end: int, marker: bytes) -> Iterator[tuple[int, int, bool]]:
    """The boundary lines (``marker``, ``marker--``, blanks after) in [start, end): where
    the line break before each begins, where the line after it begins, whether it closes.
    Found by searching each piece for the marker, not line by line."""
    buf, at, i = b"", start, 0  # buf holds bytes [at, at + len(buf)); search from i
    while True:
        k = buf.find(marker, i)
        if k >= 0:
            nl = buf.find(b"\n", k)
            done = at + len(buf)
            if nl < 0 and done < end and len(buf) - k < LINE_HEAD:
                k = -1  # the line goes on in the next piece
            else:
                line_end = nl + 1 if nl >= 0 else len(buf)
                at_line_start = (k == 0 and at == start) or buf[k - 1 : k] == b"\n"
                if at_line_start and _REST.fullmatch(buf[k + len(marker) : line_end]):
                    brk = 2 if buf[k - 2 : k] == b"\r\n" else 1 if k and at + k > start else 0
                    yield (
                        at + k - brk,
                        at + line_end,
                        buf[k + len(marker) : k + len(marker) + 2] == b"--",
                    )
                i = k + 1
                continue
        done = at + len(buf)
        more = read(done, min(PIECE, end - done)) if done < end else b""
        if not more:
            return
        pending = buf.find(marker, i)  # a marker whose line is not complete yet, or none:
        # keep what a marker may start in and the line break before it
        keep = max(0, (pending if pending >= 0 else len(buf) - len(marker)) - 2)
        buf, at, i = buf[keep:] + more, at + keep, max(0, i - keep)


def locate(read: Read, size: int, path: str) -> PartRange | None:
    """The body of the part at ``path`` of the stored mail of ``size`` bytes, or None
    (this reader does not follow it: read the mail whole)."""
    start = len(_BOM) if read(0, len(_BOM)) == _BOM else 0
    return _entity(read, start, size, [p for p in path.split(".") if p != ""])


def decoded(read: Read, where: PartRange) -> Iterator[bytes]:
    """The part's body after its transfer encoding, in pieces of at most ``PIECE`` raw
    bytes each, decoded as ``mime.decode_payload`` decodes the whole part."""
    if where.encoding == "base64":
        yield from _base64(_raw(read, where))
    elif where.encoding == "quoted-printable":
        rest = b""
        for piece in _raw(read, where):
            data = rest + piece
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            if cut:
                yield binascii.a2b_qp(data[:cut])
        if rest:
            yield binascii.a2b_qp(rest)
    else:
        yield from _raw(read, where)


def _raw(read: Read, where: PartRange) -> Iterator[bytes]:
    for at in range(where.start, where.end, PIECE):
        piece = read(at, min(PIECE, where.end - at))
        if not piece:
            return
        yield piece


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_B64_DROP = bytes(c for c in range(256) if c not in _B64_ALPHABET)


def _base64(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Lenient base64 as ``mime.decode_base64``: characters outside the alphabet dropped,
    data after padding decoded on its own, a lone last character dropped."""
    rest = b""
    for piece in pieces:
        kept = piece.translate(None, _B64_DROP)
        segments = re.split(rb"=+", kept) if b"=" in kept else [kept]
        for k, segment in enumerate(segments):
            data = rest + segment
            if k < len(segments) - 1:  # padding follows: this segment ends here
                if len(data) % 4 == 1:
                    data = data[:-1]
                rest = b""
                if data:
                    yield binascii.a2b_base64(data + b"=" * (-len(data) % 4))
                continue
            cut = len(data) - len(data) % 4
            rest = data[cut:]
            if cut:
                yield binascii.a2b_base64(data[:cut])
    if len(rest) % 4 == 1:
        rest = rest[:-1]
    if rest:
        yield binascii.a2b_base64(rest + b"=" * (-len(rest) % 4))
