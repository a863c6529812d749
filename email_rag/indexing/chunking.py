"""Mail text for embedding: subject + cleaned body, in bounded chunks with overlap.

Cleaning keeps what the sender wrote in THIS mail and drops what would make
every mail of a thread look alike:

- quoted history: ``>`` lines; everything from a reply header on
  ("On ... wrote:", "Am ... schrieb ...:", "-----Original Message-----",
  "-----Ursprüngliche Nachricht-----", forwarded-message markers, an Outlook
  header block "From:/Von:" followed by "Sent:/Gesendet:/Date:");
- signatures: everything after the ``-- `` delimiter, and a closing
  ("Mit freundlichen Grüßen", "Best regards", ...) with the few short lines
  after it (name, title, phone).

If cleaning leaves nothing (a bare forward), the unquoted original is used, so
a mail with text is never indexed as empty.
"""

from __future__ import annotations

import re

MAX_CHUNKS = 64  # a huge mail is indexed by its first MAX_CHUNKS chunks (said in the detail)

_REPLY_HEADER = [
    re.compile(r"^\s*On\b.{0,300}\bwrote:\s*$", re.I),
    re.compile(r"^\s*Am\b.{0,300}\bschrieb\b.{0,300}:\s*$", re.I),
    re.compile(r"^\s*Le\b.{0,300}\ba écrit\s*:\s*$", re.I),
    re.compile(r"^\s*-{2,}\s*(Original Message|Ursprüngliche Nachricht|Originalnachricht|"
               r"Forwarded message|Weitergeleitete Nachricht)\s*-{2,}\s*$", re.I),
    re.compile(r"^\s*Begin forwarded message:\s*$", re.I),
]
_OUTLOOK_FROM = re.compile(r"^\s*\*?(From|Von|De)\s*:\*?\s+\S", re.I)
_OUTLOOK_NEXT = re.compile(r"^\s*\*?(Sent|Gesendet|Date|Datum|Envoyé|To|An)\s*:\*?\s", re.I)
_SIG_DELIM = re.compile(r"^-- ?$")
_CLOSING = re.compile(
    r"^\s*(mit (den )?(besten |freundlichen |herzlichen )?gr(ü|ue)(ß|ss)en|"
    r"(freundliche|viele|beste|liebe|herzliche|schöne|sonnige) gr(ü|ue)(ß|ss)e|"
    r"gr(ü|ue)(ß|ss)e|(viele |beste |liebe )?gr(ü|ue)(ß|ss)|mfg|lg|vg|"
    r"(best|kind|warm|warmest) regards|regards|best wishes|best|cheers|sincerely|"
    r"yours (sincerely|truly|faithfully)|thanks( and regards| in advance| again)?|"
    r"thank you|many thanks|vielen dank( im voraus)?|danke( schön)?)"
    r"\s*[,.!]*\s*$", re.I)
_CLOSING_TAIL = 6  # a closing is cut only when at most this many lines follow it


def clean_body(text: str | None) -> str:
    if not text:
        return ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[str] = []
    for i, line in enumerate(lines):
        joined = line + " " + lines[i + 1] if i + 1 < len(lines) else line
        if any(p.match(line) for p in _REPLY_HEADER) or (
                line.strip() and _REPLY_HEADER[0].match(joined) and len(line) < 300):
            break
        if _OUTLOOK_FROM.match(line) and any(
                _OUTLOOK_NEXT.match(nxt) for nxt in lines[i + 1:i + 5]) and kept:
            break
        if _SIG_DELIM.match(line):
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line.rstrip())
    # a closing near the end, and the name/title lines after it
    for i in range(len(kept) - 1, max(-1, len(kept) - 1 - _CLOSING_TAIL - 1), -1):
        if _CLOSING.match(kept[i]) and i > 0:
            kept = kept[:i]
            break
    # drop an Outlook separator line left at the end
    while kept and (not kept[-1].strip() or re.fullmatch(r"\s*[_=-]{5,}\s*", kept[-1])):
        kept.pop()
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    if not cleaned:  # nothing of its own (a bare forward or a quote): keep the text unquoted
        unquoted = "\n".join(re.sub(r"^\s*(>\s?)+", "", ln) for ln in lines)
        cleaned = re.sub(r"\n{3,}", "\n\n", unquoted).strip()
    return cleaned


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Chunks of at most ``size`` characters, cut at paragraph, line, sentence or word
    boundaries where possible; neighbours share about ``overlap`` characters."""
    text = text.strip()
    if not text:
        return []
    size = max(50, size)
    overlap = max(0, min(overlap, size // 2))
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            window = text[start:end]
            cut = -1
            for sep in ("\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "):
                pos = window.rfind(sep, size // 2)
                if pos != -1:
                    cut = pos + len(sep)
                    break
            if cut > 0:
                end = start + cut
        chunk = text[start:end].strip()
        if chunk:
            chunks.append(chunk)
        if end >= len(text):
            break
        nxt = max(end - overlap, start + 1)
        if overlap:  # start the overlap at a word boundary
            space = text.find(" ", nxt, end)
            nxt = space + 1 if space != -1 else nxt
        start = nxt
    return chunks


ATTACHMENT_HEAD = "[attachment content, untrusted]"


def mail_chunks(subject: str | None, body: str | None, size: int = 1200,
                overlap: int = 200) -> tuple[list[str], bool]:
    """The texts to embed for one mail (each starts with the subject) and whether the
    mail was cut at MAX_CHUNKS. Only the first MAX_CHUNKS chunks' worth of text is
    looked at (a 2 MB body costs what its first ~80 KB cost)."""
    subject = (subject or "").strip()
    cleaned = clean_body((body or "")[:MAX_CHUNKS * max(200, size) * 2])
    if not cleaned:
        return ([subject] if subject else []), False
    head = f"{subject}\n\n" if subject else ""
    parts = split_text(cleaned, max(200, size - len(head)), overlap)
    truncated = len(parts) > MAX_CHUNKS
    return [head + p for p in parts[:MAX_CHUNKS]], truncated


def attachment_chunks(subject: str | None, text: str | None, size: int = 1200,
                      overlap: int = 200, limit: int = MAX_CHUNKS) -> list[str]:
    """Chunks of the attachments' text (``emails.attachment_text``), each starting with the
    subject and ``ATTACHMENT_HEAD`` so a reader (and the draft's references) sees that it is
    attachment content; at most ``limit`` chunks."""
    text = (text or "").strip()
    if not text or limit <= 0:
        return []
    head = (f"{(subject or '').strip()}\n" if subject else "") + ATTACHMENT_HEAD + "\n"
    parts = split_text(text[:limit * max(200, size) * 2], max(200, size - len(head)), overlap)
    return [head + p for p in parts[:limit]]
