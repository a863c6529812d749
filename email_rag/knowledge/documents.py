"""A knowledge file as Markdown text, a title and a language.

  type             | read with                             | headings from
  -----------------|---------------------------------------|---------------------------------
  .md / .markdown  | as it is (UTF-8)                      | its own ``#`` headings
  .html / .htm     | html2text, as a mail's HTML body       | ``<h1>``..``<h6>``
  .txt             | as it is (UTF-8, else Latin-1)        | underlined lines (``===``/``---``),
                   |                                       | ALL-CAPS or short standalone lines,
                   |                                       | only when the file has them
  .docx            | python-docx (paragraphs, tables)      | the Heading 1..6 / Title styles
  .pdf             | pypdf, every page                     | as .txt

The title is the first level-1 heading (an HTML ``<title>``, a docx Title), else the file
name. The language is the text's (email_rag.mail.language), None when it cannot tell.

Every bad file is a ``DocumentError`` that names the file and the reason, never its text:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| unknown type (extension) | no | yes: the file is not read | rename or convert it, import again |
| larger than ``MAX_FILE_BYTES``, or more text than ``MAX_CHARS`` | no | yes: nothing of it stored (never cut) | split it, import again |
| empty, or no text (a scanned PDF) | no | yes | add text, import again |
| encrypted PDF, broken docx/PDF | no | yes | save it unprotected, import again |
| not readable (permissions, vanished) | yes: next import | yes | import again |
"""

from __future__ import annotations

import hashlib
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from ..mail import documents as attachments
from ..mail.language import OTHER, identify
from ..mail.mime import html_to_text

MAX_FILE_BYTES = attachments.MAX_DOCUMENT_BYTES
MAX_CHARS = 1_000_000  # of text per file
KINDS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".txt": "txt",
         ".docx": "docx", ".pdf": "pdf"}
SHORT_HEADING = 60  # characters of a standalone line taken as a heading in plain text
_HEADING_STYLE = re.compile(r"^(?:Heading|Überschrift)\s*([1-6])$", re.IGNORECASE)
_UNDERLINE = re.compile(r"^(=+|-+)\s*$")
_MD_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML_LANG = re.compile(r"<html[^>]*\blang\s*=\s*[\"']?([A-Za-z]{2})", re.IGNORECASE)


class DocumentError(BadInputError):
    """A knowledge file could not be read."""


@dataclass(frozen=True)
class Document:
    """What an article is made of: Markdown text, its title and language."""

    title: str
    text: str
    language: str | None
    file_hash: str = ""  # SHA-256 of the file's bytes (a file unchanged since its import)


def kind_of(path: Path) -> str | None:
    """The reader for this file name (``KINDS``), None when none fits."""
    return KINDS.get(path.suffix.lower())


def read_file(path: Path) -> Document:
    """The file as a ``Document``; ``DocumentError`` naming the file when it cannot be one."""
    path = Path(path)
    kind = kind_of(path)
    if kind is None:
        raise DocumentError(f"{path.name}: unknown type {path.suffix or '(no extension)'!r}; "
                            f"known: {', '.join(sorted(KINDS))}")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise DocumentError(f"{path.name}: {size} bytes, above the limit of "
                                f"{MAX_FILE_BYTES}")
        data = path.read_bytes()
    except OSError as e:
        raise DocumentError(f"{path.name}: cannot be read ({e.strerror or type(e).__name__})"
                            ) from None
    return parse(path.name, kind, data)


def parse(name: str, kind: str, data: bytes) -> Document:
    """``data`` of a file called ``name`` read as ``kind``."""
    if not data.strip():
        raise DocumentError(f"{name}: the file is empty")
    title = None
    lang = None
    if kind == "md":
        text = _decode(data)
    elif kind == "html":
        raw = _decode(data)
        found = _HTML_TITLE.search(raw)
        title = " ".join(html.unescape(found.group(1)).split()) if found else None
        lang_attr = _HTML_LANG.search(raw)
        lang = lang_attr.group(1).lower() if lang_attr else None
        text = html_to_text(raw, MAX_FILE_BYTES)
    elif kind == "txt":
        text = plain_to_markdown(_decode(data))
    elif kind == "docx":
        text, title = _docx(name, data)
    else:
        text = plain_to_markdown(_pdf(name, data))
    text = text.strip()
    if len(text) > MAX_CHARS:
        raise DocumentError(f"{name}: {len(text)} characters of text, above the limit of "
                            f"{MAX_CHARS}; split it into several files")
    if not text:
        raise DocumentError(f"{name}: no text found (a scanned image or an empty document?)")
    title = title or _first_h1(text) or Path(name).stem.replace("_", " ").replace("-", " ")
    return Document(title=" ".join(title.split())[:300], text=text,
                    language=lang or language_of(text),
                    file_hash=hashlib.sha256(data).hexdigest())


def language_of(text: str) -> str | None:
    guess = identify(text[:5000])
    return None if guess.code == OTHER else guess.code


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _first_h1(text: str) -> str | None:
    found = _MD_H1.search(text)
    return found.group(1).strip() if found else None


def _is_caps(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 3 and all(c.isupper() for c in letters)


def _is_short_standalone(line: str) -> bool:
    return (len(line) <= SHORT_HEADING and len(line.split()) <= 8
            and line[-1] not in ".,;:!?)\"'" and (line[0].isupper() or line[0].isdigit()))


def plain_to_markdown(text: str) -> str:
    """Plain text with headings marked: an underlined line (``===``: ``#``, ``---``: ``##``),
    an ALL-CAPS line or a short standalone line (blank lines around it, no end punctuation)
    followed by text becomes ``##``. A text without such lines stays as it is."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        before_blank = not out or not out[-1].strip()
        if line and _UNDERLINE.match(nxt) and len(nxt) >= 3 and not _UNDERLINE.match(line):
            out.append(("# " if nxt.startswith("=") else "## ") + line)
            i += 2
            continue
        after = lines[i + 2].strip() if i + 2 < len(lines) else ""
        if (line and before_blank and not nxt and after and not line.startswith("#")
                and (_is_caps(line) or _is_short_standalone(line))):
            out.append("## " + line)
        else:
            out.append(lines[i])
        i += 1
    return "\n".join(out)


def _docx(name: str, data: bytes) -> tuple[str, str | None]:
    try:
        refused = attachments.zip_refused(data)
    except Exception as e:  # noqa: BLE001 - untrusted file: not a zip at all
        raise DocumentError(f"{name}: not a Word document ({type(e).__name__})") from None
    if refused:
        raise DocumentError(f"{name}: refused: {refused}")
    try:
        from docx import Document as DocxDocument

        doc = DocxDocument(io.BytesIO(data))
        out: list[str] = []
        title = None
        for p in doc.paragraphs:
            text = " ".join(p.text.split())
            if not text:
                continue
            style = (p.style.name if p.style is not None else "") or ""
            level = _HEADING_STYLE.match(style)
            if style.lower() == "title":
                title = title or text
                out.append(f"# {text}")
            elif level:
                out.append(f"{'#' * int(level.group(1))} {text}")
            else:
                out.append(text)
        for table in doc.tables:
            for row in table.rows:
                out.append(" | ".join(c.text.strip() for c in row.cells))
    except DocumentError:
        raise
    except Exception as e:  # noqa: BLE001 - untrusted file
        raise DocumentError(f"{name}: unreadable Word document ({type(e).__name__})") from None
    return "\n\n".join(out), title


def _pdf(name: str, data: bytes) -> str:
    """Every page's text (a manual has more pages than an attachment is read for)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(f"{name}: the PDF is encrypted; save it without a password and "
                                "import it again")
        pages: list[str] = []
        size = 0
        for page in reader.pages:
            pages.append(page.extract_text() or "")
            size += len(pages[-1])
            if size > MAX_CHARS:
                break
    except DocumentError:
        raise
    except Exception as e:  # noqa: BLE001 - untrusted file
        if "decrypt" in type(e).__name__.lower() or "encrypt" in str(e).lower():
            raise DocumentError(f"{name}: the PDF is encrypted; save it without a password and "
                                "import it again") from None
        raise DocumentError(f"{name}: unreadable PDF ({type(e).__name__})") from None
    text = "\n".join(pages)
    if not text.strip():
        raise DocumentError(f"{name}: no text in the PDF (a scanned image?)")
    return text
