"""The piece reader of a stored mail (email_rag/mail/parts.py): every attachment the full
parse lists is found and decoded to the same bytes (its recorded SHA-256), whatever the
piece size, without the whole mail in memory."""

from __future__ import annotations

import hashlib
from email.message import EmailMessage

import pytest

from email_rag.mail import parts
from email_rag.mail.mime import parse_mail


def _reader(raw: bytes, log: list[int] | None = None) -> parts.Read:
    def read(offset: int, length: int) -> bytes:
        if log is not None:
            log.append(length)
        return raw[offset : offset + length]

    return read


def _mail(linesep: str = "\n") -> bytes:
    msg = EmailMessage()
    msg["From"] = "Carla <carla@example.org>"
    msg["To"] = "support@example.com"
    msg["Subject"] = "Anhang"
    msg.set_content("Hallo,\nanbei.\n")
    msg.add_alternative("<p>Hallo</p>", subtype="html")
    msg.add_attachment(
        bytes(range(256)) * 300,
        maintype="application",
        subtype="octet-stream",
        filename="daten.bin",
    )
    msg.add_attachment(
        "Zeile mit Umlaut \u00e4\u00f6\u00fc = gleich\n" * 50,
        subtype="plain",
        filename="notiz.txt",
        cte="quoted-printable",
    )
    msg.add_attachment("7bit text\nzweite Zeile\n", subtype="plain", filename="a.txt", cte="7bit")
    inner = EmailMessage()
    inner["From"] = "x@example.org"
    inner["Subject"] = "weitergeleitet"
    inner.set_content("innen")
    inner.add_attachment(b"PDF" * 5000, maintype="application", subtype="pdf", filename="innen.pdf")
    msg.add_attachment(inner)
    return msg.as_bytes(policy=msg.policy.clone(linesep=linesep))


@pytest.mark.parametrize("linesep", ["\n", "\r\n"])
@pytest.mark.parametrize("piece", [7, 64, 1024 * 1024])
def test_every_listed_attachment_decodes_to_its_recorded_checksum(monkeypatch, linesep, piece):
    monkeypatch.setattr(parts, "PIECE", piece)
    raw = _mail(linesep)
    listed = [a for a in parse_mail(raw).attachments if a.content_type != "message/rfc822"]
    assert {a.filename for a in listed} >= {"daten.bin", "notiz.txt", "a.txt", "innen.pdf"}
    for a in listed:
        where = parts.locate(_reader(raw), len(raw), a.part)
        assert where is not None, a.filename
        data = b"".join(parts.decoded(_reader(raw), where))
        assert hashlib.sha256(data).hexdigest() == a.sha256, a.filename


def test_a_forwarded_message_itself_is_left_to_the_whole_mail_reader():
    raw = _mail()
    forwarded = next(a for a in parse_mail(raw).attachments if a.content_type == "message/rfc822")
    assert parts.locate(_reader(raw), len(raw), forwarded.part) is None
    assert parts.locate(_reader(raw), len(raw), "9") is None
    assert parts.locate(_reader(raw), len(raw), "x") is None


def test_a_missing_closing_boundary_ends_the_last_part_at_the_end_of_the_mail():
    raw = _mail()
    cut = raw[: raw.rstrip().rindex(b"\n--")]  # drop the closing boundary line
    attachments = parse_mail(cut).attachments
    last = [a for a in attachments if a.filename == "innen.pdf"][0]
    where = parts.locate(_reader(cut), len(cut), last.part)
    assert where is not None
    assert hashlib.sha256(b"".join(parts.decoded(_reader(cut), where))).hexdigest() == last.sha256


def test_base64_with_junk_padding_inside_and_a_lone_last_character_decodes_as_the_parse():
    body = b"QUJD\r\nR!EVG=\r\nR0hJ*\r\nSktM\r\nT"
    raw = (
        b"From: a@example.org\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n'
        b"Content-Type: text/plain\r\n\r\nhi\r\n--b\r\n"
        b"Content-Type: application/octet-stream\r\nContent-Disposition: attachment; "
        b"filename=x.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n" + body + b"\r\n--b--\r\n"
    )
    listed = parse_mail(raw).attachments
    for piece in (1, 3, 5, 1024):
        parts_piece = piece
        where = parts.locate(_reader(raw), len(raw), listed[0].part)
        assert where is not None
        old = parts.PIECE
        parts.PIECE = parts_piece
        try:
            data = b"".join(parts.decoded(_reader(raw), where))
        finally:
            parts.PIECE = old
        assert hashlib.sha256(data).hexdigest() == listed[0].sha256


def test_the_mail_is_read_in_pieces_never_whole(monkeypatch):
    monkeypatch.setattr(parts, "PIECE", 4096)
    raw = _mail()
    log: list[int] = []
    a = next(a for a in parse_mail(raw).attachments if a.filename == "daten.bin")
    where = parts.locate(_reader(raw, log), len(raw), a.part)
    assert where is not None
    for _ in parts.decoded(_reader(raw, log), where):
        pass
    assert log and max(log) <= 4096
