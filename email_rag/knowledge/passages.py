"""An article's Markdown split into passages: the unit that is embedded, searched and cited.

The text is cut at its headings (as markdown-it-py reads them: ``#`` and underlined ones, not a
``#`` inside a code block); each section is a passage with its heading path ("Returns > Fees").
A section longer than ``MAX_CHARS`` is cut at paragraph boundaries (a blank line), a
paragraph longer than that at a sentence end or a space. Text before the first heading is a
passage under the article's title; a heading without text of its own makes none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

MAX_CHARS = 1200
HEADING_SEPARATOR = " > "
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Piece:
    """A passage before it is stored: its heading path and its text."""

    heading: str
    text: str


_PARSER = MarkdownIt("commonmark")


def split(markdown: str, title: str = "", max_chars: int = MAX_CHARS) -> list[Piece]:
    """The passages of ``markdown`` in order (``title``: the heading of text before the first
    heading)."""
    lines = markdown.replace("\r\n", "\n").split("\n")
    tokens = _PARSER.parse(markdown.replace("\r\n", "\n"))
    headings: list[tuple[int, int, int, str]] = []  # (first line, end line, level, text)
    for n, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            text = tokens[n + 1].content if n + 1 < len(tokens) else ""
            headings.append((tok.map[0], tok.map[1], int(tok.tag[1]), " ".join(text.split())))
    pieces: list[Piece] = []
    path: list[tuple[int, str]] = []
    start = 0
    heading = title
    for first, end, level, text in headings:
        pieces.extend(_cut(heading, "\n".join(lines[start:first]), max_chars))
        path = [(lv, t) for lv, t in path if lv < level] + [(level, text)]
        heading = HEADING_SEPARATOR.join(t for _, t in path if t)
        start = end
    pieces.extend(_cut(heading, "\n".join(lines[start:]), max_chars))
    return pieces


def _cut(heading: str, text: str, max_chars: int) -> list[Piece]:
    text = text.strip()
    if not text:
        return []
    out: list[str] = []
    current = ""
    for para in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not para:
            continue
        for part in _fit(para, max_chars):
            if current and len(current) + 2 + len(part) > max_chars:
                out.append(current)
                current = part
            else:
                current = f"{current}\n\n{part}" if current else part
    if current:
        out.append(current)
    return [Piece(heading=heading[:600], text=t) for t in out]


def _fit(paragraph: str, max_chars: int) -> list[str]:
    """A paragraph in parts of at most ``max_chars``: at sentence ends, else at spaces."""
    if len(paragraph) <= max_chars:
        return [paragraph]
    parts: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            head, sentence = sentence[:cut].strip(), sentence[cut:].strip()
            if current:
                parts.append(current)
                current = ""
            parts.append(head)
        if current and len(current) + 1 + len(sentence) > max_chars:
            parts.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        parts.append(current)
    return parts
