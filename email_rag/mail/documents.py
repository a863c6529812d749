"""Text of attached documents, with maintained libraries and hard bounds.

  type                      | library (why)
  --------------------------|-------------------------------------------------------
  PDF                       | pypdf: pure Python, maintained, no system packages;
                            | decompression limits against zip-bomb streams
  Word .docx                | python-docx (paragraphs and table cells)
  Excel .xlsx / .xlsm       | openpyxl in read-only mode (cell values, streamed)
  PowerPoint .pptx          | python-pptx (text frames and tables)
  RTF (.rtf, text/rtf)      | striprtf: pure Python, no system packages (control words,
                            | code-page escapes and \\u escapes to text)
  text/* (plain, csv, ...)  | none: decoded with the part's charset (``headers.decode_bytes``)
  HTML                      | html2text (as the mail body)

Everything else (images, archives, legacy .doc/.xls/.ppt, OpenDocument) is listed as an
attachment without text, with the reason (``no_text_reason``). Content is identified by its
magic bytes too (``sniff``): a part labelled text (``text/rtf``, ``text/plain``) that is
really a PNG, a zip, a PDF ... is never decoded as text; a PDF or RTF under a generic label
(``application/octet-stream``) is read as what it is. ``extract_text`` never raises: a broken or
hostile document yields no text and a reason. Bounds: documents above
``MAX_DOCUMENT_BYTES`` are not opened; Office zip archives whose members would unpack to
more than ``MAX_UNZIPPED_BYTES`` (or hold more than ``MAX_ZIP_MEMBERS`` files) are refused
before a library sees them; at most ``MAX_PDF_PAGES`` pages, ``MAX_SHEET_CELLS`` cells and
``max_chars`` characters are read.
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 5_000_000
MAX_UNZIPPED_BYTES = 50_000_000
MAX_ZIP_MEMBERS = 2_000
MAX_PDF_PAGES = 30
MAX_SHEET_CELLS = 20_000

PDF_TYPES = {"application/pdf", "application/x-pdf"}
OOXML = "application/vnd.openxmlformats-officedocument."
DOCX_TYPES = {OOXML + "wordprocessingml.document"}
XLSX_TYPES = {OOXML + "spreadsheetml.sheet", "application/vnd.ms-excel.sheet.macroenabled.12"}
PPTX_TYPES = {OOXML + "presentationml.presentation"}
RTF_TYPES = {"text/rtf", "application/rtf", "application/x-rtf", "text/richtext"}
EXTENSIONS = {".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".pptx": "pptx",
              ".rtf": "rtf"}

# magic bytes at offset 0 -> what the content really is (binary formats only)
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"), (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"), (b"GIF89a", "GIF image"), (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"), (b"%PDF-", "PDF document"), (b"PK\x03\x04", "zip archive"),
    (b"\x1f\x8b", "gzip archive"), (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Office document"),
    (b"Rar!\x1a\x07", "RAR archive"), (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"\xfd7zXZ\x00", "xz archive"), (b"\x28\xb5\x2f\xfd", "zstd archive"),
    (b"\x7fELF", "executable"), (b"OggS", "Ogg media"), (b"ID3", "MP3 audio"),
    (b"\x00\x00\x01\x00", "icon"),
)
LEGACY_OFFICE = {"application/msword": "legacy Word .doc", "application/vnd.ms-excel":
                 "legacy Excel .xls", "application/vnd.ms-powerpoint": "legacy PowerPoint .ppt"}


def sniff(data: bytes) -> str | None:
    """What binary content really is, from its magic bytes (``MAGIC``; RIFF/WebP, MP4 and
    many NUL bytes in the first 1,000 bytes too), or None when it may be text."""
    head = data[:1024]
    for magic, what in MAGIC:
        if head.startswith(magic):
            return what
    if head[:4] == b"RIFF" and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return f"{head[8:12].decode().strip()} media"
    if head[4:8] == b"ftyp":
        return "MP4 media"
    sample = head[:1000]
    # many NUL bytes: binary (a stray NUL in a text is still text; UTF-16 has a BOM)
    if sample.count(0) >= max(4, len(sample) // 20) and not sample.startswith(
            (b"\xff\xfe", b"\xfe\xff")):
        return "binary data (NUL bytes)"
    return None


def no_text_reason(content_type: str, filename: str, data: bytes) -> str:
    """Why an attachment of this type gives no text (said to staff and to the LLM)."""
    ct = (content_type or "").lower()
    what = sniff(data)
    if ct in LEGACY_OFFICE:
        return f"no text: {LEGACY_OFFICE[ct]} ({ct}) is not read"
    if ct.startswith("image/"):
        return f"no text: {ct} (an image or scan: no text is read from images)"
    if ct.startswith(("audio/", "video/")):
        return f"no text: {ct}"
    if what and "archive" in what:
        return f"no text: {ct} is a {what}, not unpacked"
    return f"no text: {ct} is not a document type that is read"


def document_kind(content_type: str, filename: str, data: bytes = b"") -> str | None:
    """pdf, docx, xlsx, pptx, rtf or None, from the type, (for application/octet-stream and
    friends) the file name's extension, or the content's magic bytes (PDF, RTF)."""
    ct = (content_type or "").lower()
    if ct in PDF_TYPES:
        return "pdf"
    if ct in RTF_TYPES:
        return "rtf"
    if ct in DOCX_TYPES:
        return "docx"
    if ct in XLSX_TYPES:
        return "xlsx"
    if ct in PPTX_TYPES:
        return "pptx"
    if ct.startswith("application/"):
        name = (filename or "").lower()
        for ext, kind in EXTENSIONS.items():
            if name.endswith(ext):
                return kind
        if data.startswith(b"%PDF-"):
            return "pdf"
        if data.lstrip()[:5] == b"{\\rtf":
            return "rtf"
    return None


def extract_text(kind: str, data: bytes, max_chars: int) -> tuple[str, str]:
    """(text, status): status is ``extracted``, ``empty`` or why nothing was read."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return "", f"not read: {len(data)} bytes, above {MAX_DOCUMENT_BYTES}"
    try:
        if kind in ("docx", "xlsx", "pptx"):
            refused = zip_refused(data)
            if refused:
                return "", f"not read: {refused}"
        pieces = _READERS[kind](data)
        text, clipped = _collect(pieces, max_chars)
    except Exception as e:  # noqa: BLE001 - untrusted documents: never stop the parse
        log.info("could not read a %s attachment: %s: %s", kind, type(e).__name__, e)
        return "", f"unreadable {kind}: {type(e).__name__}: {str(e)[:200]}"
    if not text.strip():
        return "", "empty: no text found (scanned image or no text layer?)"
    return text, (f"extracted, clipped to {max_chars} characters" if clipped else "extracted")


def _collect(pieces: Iterator[str], max_chars: int) -> tuple[str, bool]:
    out: list[str] = []
    size = 0
    for piece in pieces:
        piece = (piece or "").strip()
        if not piece:
            continue
        out.append(piece)
        size += len(piece) + 1
        if size > max_chars:
            return "\n".join(out)[:max_chars], True
    return "\n".join(out), False


def zip_refused(data: bytes) -> str | None:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        if len(infos) > MAX_ZIP_MEMBERS:
            return f"archive holds {len(infos)} files, above {MAX_ZIP_MEMBERS}"
        total = sum(i.file_size for i in infos)
        if total > MAX_UNZIPPED_BYTES:
            return f"archive unpacks to {total} bytes, above {MAX_UNZIPPED_BYTES}"
    return None


def _rtf(data: bytes) -> Iterator[str]:
    from striprtf.striprtf import rtf_to_text

    if not data.lstrip()[:5] == b"{\\rtf":
        raise ValueError("not an RTF document (no {\\rtf header)")
    # RTF is 7-bit: 8-bit bytes only appear in broken files; \'xx escapes carry the code page
    yield rtf_to_text(data.decode("latin-1"), errors="replace")


def _pdf(data: bytes) -> Iterator[str]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            reader.decrypt("")
        except Exception:  # noqa: BLE001
            raise ValueError("encrypted PDF") from None
    for n, page in enumerate(reader.pages):
        if n >= MAX_PDF_PAGES:
            yield f"[... {len(reader.pages) - MAX_PDF_PAGES} more page(s) not read]"
            return
        yield page.extract_text() or ""


def _docx(data: bytes) -> Iterator[str]:
    from docx import Document

    doc = Document(io.BytesIO(data))
    for p in doc.paragraphs:
        yield p.text
    for table in doc.tables:
        for row in table.rows:
            yield " | ".join(c.text.strip() for c in row.cells)


def _xlsx(data: bytes) -> Iterator[str]:
    from openpyxl import load_workbook

    wb = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    cells = 0
    try:
        for ws in wb.worksheets:
            yield f"[sheet {ws.title}]"
            for row in ws.iter_rows(values_only=True):
                values = ["" if v is None else str(v) for v in row]
                cells += len(values)
                if any(values):
                    yield ";".join(values).rstrip(";")
                if cells > MAX_SHEET_CELLS:
                    yield f"[... stopped after {MAX_SHEET_CELLS} cells]"
                    return
    finally:
        wb.close()


def _pptx(data: bytes) -> Iterator[str]:
    from pptx import Presentation

    prs = Presentation(io.BytesIO(data))
    for n, slide in enumerate(prs.slides, start=1):
        yield f"[slide {n}]"
        for shape in slide.shapes:
            if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                yield shape.text_frame.text
            if getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    yield " | ".join(c.text for c in row.cells)


_READERS: dict[str, Callable[[bytes], Iterator[str]]] = {
    "pdf": _pdf, "docx": _docx, "xlsx": _xlsx, "pptx": _pptx, "rtf": _rtf}
