"""Text of attached documents, with maintained libraries and hard bounds.

  type                      | library (why)
  --------------------------|-------------------------------------------------------
  PDF                       | pypdf: pure Python, maintained, no system packages;
                            | decompression limits against zip-bomb streams
  Word .docx                | python-docx (paragraphs and table cells)
  Excel .xlsx / .xlsm       | openpyxl in read-only mode (cell values, streamed)
  PowerPoint .pptx          | python-pptx (text frames and tables)
  text/* (plain, csv, ...)  | none: decoded with the part's charset (``headers.decode_bytes``)
  HTML                      | html2text (as the mail body)

Everything else (images, archives, legacy .doc/.xls/.ppt, OpenDocument) is listed as an
attachment without text, with the reason. ``extract_text`` never raises: a broken or
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
EXTENSIONS = {".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".pptx": "pptx"}


def document_kind(content_type: str, filename: str) -> str | None:
    """pdf, docx, xlsx, pptx or None, from the type or (for application/octet-stream and
    friends) the file name's extension."""
    ct = (content_type or "").lower()
    if ct in PDF_TYPES:
        return "pdf"
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
    return None


def extract_text(kind: str, data: bytes, max_chars: int) -> tuple[str, str]:
    """(text, status): status is ``extracted``, ``empty`` or why nothing was read."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return "", f"not read: {len(data)} bytes, above {MAX_DOCUMENT_BYTES}"
    try:
        if kind in ("docx", "xlsx", "pptx"):
            refused = _zip_refused(data)
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


def _zip_refused(data: bytes) -> str | None:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        if len(infos) > MAX_ZIP_MEMBERS:
            return f"archive holds {len(infos)} files, above {MAX_ZIP_MEMBERS}"
        total = sum(i.file_size for i in infos)
        if total > MAX_UNZIPPED_BYTES:
            return f"archive unpacks to {total} bytes, above {MAX_UNZIPPED_BYTES}"
    return None


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
    "pdf": _pdf, "docx": _docx, "xlsx": _xlsx, "pptx": _pptx}
