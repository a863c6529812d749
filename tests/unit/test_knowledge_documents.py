"""Knowledge files read as Markdown (email_rag.knowledge.documents) and split into passages
(email_rag.knowledge.passages); every document is built in the test."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from email_rag_harness.testing import documents as make

from email_rag.knowledge import passages
from email_rag.knowledge.documents import (
    MAX_FILE_BYTES,
    DocumentError,
    plain_to_markdown,
    read_file,
)

SECRET = "Kundennummer 998877 of Alice Example"


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def test_markdown_keeps_its_headings_and_takes_the_first_h1_as_title(tmp_path):
    doc = read_file(write(tmp_path, "returns.md", "# Returns policy\n\nYou can return any item "
                          "within 30 days of delivery.\n\n## Fees\n\nReturns cost 4.90 EUR.\n"))
    assert doc.title == "Returns policy"
    assert "## Fees" in doc.text
    assert doc.language == "en"
    assert len(doc.file_hash) == 64


def test_html_headings_become_markdown_and_the_title_tag_is_the_title(tmp_path):
    html = ("<html lang='de'><head><title>Versand &amp; Lieferung</title></head><body>"
            "<h1>Versand</h1><p>Wir liefern innerhalb von 3 Werktagen.</p>"
            "<h2>Kosten</h2><p>Der Versand kostet 4,90 EUR.</p><script>x()</script></body></html>")
    doc = read_file(write(tmp_path, "versand.html", html))
    assert doc.title == "Versand & Lieferung"
    assert doc.language == "de"
    assert "# Versand" in doc.text and "## Kosten" in doc.text
    assert "<p>" not in doc.text


def test_plain_text_marks_underlined_caps_and_short_standalone_lines_as_headings(tmp_path):
    text = ("Shipping guide\n==============\n\nWe ship within two days.\n\n"
            "COSTS\n\nShipping costs 4.90 EUR inside Germany.\n\n"
            "Express delivery\n\nExpress costs 9.90 EUR and arrives the next day.\n")
    doc = read_file(write(tmp_path, "shipping.txt", text))
    assert doc.title == "Shipping guide"
    assert "## COSTS" in doc.text and "## Express delivery" in doc.text


def test_plain_text_without_heading_lines_stays_as_it_is():
    text = "We ship within two days. Shipping costs 4.90 EUR.\nExpress costs 9.90 EUR."
    assert plain_to_markdown(text) == text


def test_docx_heading_styles_become_markdown_headings(tmp_path):
    from docx import Document

    d = Document()
    d.add_heading("Warranty", level=0)
    d.add_heading("Claims", level=1)
    d.add_paragraph("Send the device with the receipt to our service centre.")
    d.add_heading("Duration", level=2)
    d.add_paragraph("The warranty lasts 24 months.")
    buf = io.BytesIO()
    d.save(buf)
    doc = read_file(write(tmp_path, "warranty.docx", buf.getvalue()))
    assert doc.title == "Warranty"
    assert "# Claims" in doc.text and "## Duration" in doc.text
    assert "24 months" in doc.text


def test_pdf_text_is_read(tmp_path):
    doc = read_file(write(tmp_path, "prices.pdf", make.pdf(["Price list", "Cable 12 EUR"])))
    assert "Cable 12 EUR" in doc.text
    assert doc.title  # the file name when the PDF has no heading


def test_encrypted_pdf_is_a_clear_error_naming_the_file(tmp_path):
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(make.pdf([SECRET]))))
    w.encrypt("secret", algorithm="AES-128")
    buf = io.BytesIO()
    w.write(buf)
    with pytest.raises(DocumentError) as e:
        read_file(write(tmp_path, "locked.pdf", buf.getvalue()))
    assert "locked.pdf" in str(e.value) and "encrypted" in str(e.value)
    assert "998877" not in str(e.value)


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("empty.md", b"  \n", "empty"),
    ("photo.png", make.png(), "unknown type"),
    ("broken.docx", b"PK\x03\x04 not a zip " + SECRET.encode(), "Word document"),
    ("broken.pdf", b"%PDF-1.4\n" + SECRET.encode(), "PDF"),
])
def test_a_bad_file_is_a_clear_error_that_names_it_and_never_its_text(tmp_path, name, data,
                                                                       reason):
    with pytest.raises(DocumentError) as e:
        read_file(write(tmp_path, name, data))
    assert name in str(e.value) and reason in str(e.value)
    assert "998877" not in str(e.value) and "Alice" not in str(e.value)


def test_a_file_above_the_limit_is_not_opened(tmp_path):
    p = tmp_path / "huge.md"
    with p.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(DocumentError, match="huge.md: .* above the limit"):
        read_file(p)


def test_passages_follow_the_headings_with_their_path():
    md = ("Intro text before any heading.\n\n# Returns\n\nReturn within 30 days.\n\n"
          "## Fees\n\nA return costs 4.90 EUR.\n\n```\n# not a heading\n```\n\n"
          "# Shipping\n\n## Empty\n\n## Abroad\nShipping abroad costs 15 EUR.\n")
    got = [(p.heading, p.text.splitlines()[0]) for p in passages.split(md, "Guide")]
    assert got == [("Guide", "Intro text before any heading."),
                   ("Returns", "Return within 30 days."),
                   ("Returns > Fees", "A return costs 4.90 EUR."),
                   ("Shipping > Abroad", "Shipping abroad costs 15 EUR.")]
    fees = passages.split(md)[2]
    assert "# not a heading" in fees.text  # a code block's line stays in its passage


def test_a_long_section_is_cut_at_paragraph_boundaries():
    paragraphs = [f"Paragraph {n}: " + "word " * 60 for n in range(12)]
    md = "# Long\n\n" + "\n\n".join(paragraphs)
    parts = passages.split(md)
    assert len(parts) > 1
    assert all(len(p.text) <= passages.MAX_CHARS for p in parts)
    assert all(p.heading == "Long" for p in parts)
    # nothing lost, no paragraph cut in two
    assert "\n\n".join(p.text for p in parts) == "\n\n".join(x.strip() for x in paragraphs)


def test_a_paragraph_longer_than_the_limit_is_cut_at_sentence_ends():
    md = "# One\n\n" + " ".join(f"Sentence number {n} says something." for n in range(100))
    parts = passages.split(md)
    assert all(len(p.text) <= passages.MAX_CHARS for p in parts)
    assert all(p.text.endswith(".") for p in parts)


def test_more_text_than_the_limit_is_refused_never_cut(tmp_path, monkeypatch):
    from email_rag.knowledge import documents

    monkeypatch.setattr(documents, "MAX_CHARS", 100)
    with pytest.raises(DocumentError, match="long.md: 1.. characters of text, above the limit"):
        read_file(write(tmp_path, "long.md", "# Long\n\n" + "word " * 30))
