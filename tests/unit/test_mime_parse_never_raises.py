"""The full MIME parse never raises and says how far it got (the MIME zoo)."""

import random

import pytest
from email_rag_harness.testing.mails import ZOO_EXPECTED, mail, zoo

from email_rag.core.states import ParseStatus
from email_rag.mail.mime import parse_mail

ZOO = zoo()
LIMITS = dict(max_mail_bytes=200_000, max_attachment_bytes=50_000)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_mail_parses_to_its_expected_status(name):
    parsed = parse_mail(ZOO[name], **LIMITS)
    assert parsed.parse_status == ZOO_EXPECTED[name][0]
    if parsed.parse_status != ParseStatus.OK:
        assert parsed.reason  # never a degraded result without saying why


def test_multipart_alternative_prefers_text_and_lists_attachments():
    p = parse_mail(ZOO["multipart"], **LIMITS)
    assert p.body_text.strip() == "Text-Teil: Rechnung anbei."
    assert "<b>Rechnung</b>" in p.body_html
    names = {a.filename: a for a in p.attachments}
    assert set(names) == {"rechnung.pdf", "gross.bin"}
    assert names["rechnung.pdf"].content_type == "application/pdf"
    assert names["gross.bin"].size == 5000 and len(names["gross.bin"].sha256) == 64
    assert '"filename": "rechnung.pdf"' in p.attachments_json()


def test_html_only_mail_is_converted_to_text():
    p = parse_mail(ZOO["html_only"], **LIMITS)
    assert "Meine Bestellung _4711_ ist nicht angekommen." in p.body_text
    assert "<p>" not in p.body_text and p.body_html.startswith("<html>")


def test_wrong_declared_charset_falls_back_and_says_so():
    p = parse_mail(ZOO["wrong_charset"], **LIMITS)
    assert p.body_text.startswith("Grüße aus Köln")
    assert "us-ascii" in p.reason


@pytest.mark.parametrize("name,text", [
    ("latin1", "Größe XL"), ("iso2022jp", "こんにちは、注文について。"),
    ("unknown_charset", "Bitte um Rückruf."),
])
def test_charsets(name, text):
    assert text in parse_mail(ZOO[name], **LIMITS).body_text


def test_encoded_headers_are_decoded():
    p = parse_mail(ZOO["encoded_headers"], **LIMITS)
    assert p.headers.subject == "Reklamation: Ärger mit der Lieferung"
    assert p.headers.from_name == "Jürgen Müller"
    assert parse_mail(ZOO["iso2022jp"]).headers.subject == "こんにちは"


def test_attachment_above_the_limit_is_recorded_without_hash():
    [att] = parse_mail(ZOO["attachment_over_limit"], **LIMITS).attachments
    assert att.too_large and att.sha256 is None and att.size == 102_400
    assert att.filename == "Fotos übersicht.zip"
    [small] = parse_mail(ZOO["attachment_over_limit"], max_attachment_bytes=200_000).attachments
    assert not small.too_large and small.sha256


def test_huge_mail_keeps_headers_only_with_reason():
    p = parse_mail(ZOO["huge"], **LIMITS)
    assert p.parse_status == ParseStatus.TOO_LARGE and p.body_text is None
    assert p.headers.subject == "Riesige Mail" and "above the limit of 200000" in p.reason
    headers_only = parse_mail(ZOO["huge"].split(b"\r\n\r\n")[0], size=10**9, headers_only=True)
    assert headers_only.parse_status == ParseStatus.TOO_LARGE
    assert "1000000000 bytes" in headers_only.reason


def test_missing_date_and_message_id_are_not_defects():
    assert parse_mail(ZOO["no_date"]).headers.sent_at is None
    assert parse_mail(ZOO["no_message_id"]).headers.message_id is None
    assert parse_mail(ZOO["no_message_id"]).parse_status == ParseStatus.OK


def test_broken_boundary_keeps_the_text():
    p = parse_mail(ZOO["broken_boundary"], **LIMITS)
    assert "Der Text ist trotzdem da." in p.body_text
    assert "boundary" in p.reason.lower()


def test_binary_garbage_fails_with_reason():
    p = parse_mail(ZOO["garbage"])
    assert p.parse_status == ParseStatus.FAILED and "no header fields" in p.reason


def test_too_many_attachments_and_long_bodies_are_clipped_with_reason():
    from email.message import EmailMessage

    m = EmailMessage()
    m["From"], m["Subject"], m["Message-ID"] = "a@x", "many", "<many@x>"
    m.set_content("x" * 5000)
    for i in range(5):
        m.add_attachment(b"data%d" % i, maintype="application", subtype="octet-stream",
                         filename=f"f{i}.bin")
    p = parse_mail(m.as_bytes(), max_attachments=2, max_body_chars=100)
    assert p.parse_status == ParseStatus.PARTIAL
    assert len(p.attachments) == 2 and len(p.body_text) == 100
    assert "3 more attachment(s)" in p.reason and "clipped" in p.reason


def test_deep_nesting_does_not_recurse_forever():
    body = "Content-Type: text/plain\n\ninnermost\n"
    for depth in range(40):
        b = f"b{depth}"
        body = (f'Content-Type: multipart/mixed; boundary="{b}"\n\n--{b}\n{body}\n--{b}--\n')
    p = parse_mail(("From: a@x\nSubject: deep\n" + body).encode())
    assert p.parse_status == ParseStatus.PARTIAL and "nesting" in p.reason


def test_mutilated_mails_never_raise():
    """GIVEN 600 zoo mails cut and corrupted at random WHEN parsed THEN no exception escapes."""
    rng = random.Random(42)
    seeds = [v for k, v in ZOO.items() if k != "huge"] + [mail(1, size=3000)]
    for _ in range(600):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 8)):
            op = rng.randrange(3)
            pos = rng.randrange(len(data)) if data else 0
            if op == 0:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
            elif op == 1:
                del data[pos:pos + rng.randrange(1, 200)]
            else:
                data = data[:pos]
        p = parse_mail(bytes(data), **LIMITS)
        assert p.parse_status in set(ParseStatus)


def _attachments_mail(*parts: tuple[str, str, bytes]) -> bytes:
    """A mail of only attachments: (content type, file name, bytes), base64."""
    import base64

    out = (b"From: kunde@example.org\r\nTo: support@example.com\r\nSubject: scan\r\n"
           b"Message-ID: <att@example.org>\r\nMIME-Version: 1.0\r\n"
           b'Content-Type: multipart/mixed; boundary="a"\r\n\r\n')
    for ctype, name, data in parts:
        out += (f"--a\r\nContent-Type: {ctype}\r\nContent-Transfer-Encoding: base64\r\n"
                f'Content-Disposition: attachment; filename="{name}"\r\n\r\n').encode()
        out += base64.encodebytes(data).replace(b"\n", b"\r\n")
    return out + b"--a--\r\n"


def test_binary_content_under_a_text_label_is_never_text():
    """GIVEN a text/rtf attachment that is really a PNG, and a text/plain body part that
    is really a PNG THEN neither gives text; the reason names the real type."""
    from email_rag_harness.testing.documents import png

    image = png(20, 20)
    p = parse_mail(_attachments_mail(("text/rtf", "brief.rtf", image)))
    [a] = p.attachments
    assert a.text_chars == 0 and "PNG" in a.text_status and "text/rtf" in a.text_status
    assert not p.attachment_text
    import base64

    body = (b"From: k@example.org\r\nSubject: x\r\nContent-Type: text/plain\r\n"
            b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(image))
    q = parse_mail(body)
    assert "IHDR" not in (q.body_text or "") and "PNG" not in (q.body_text or "")
    assert [x.content_type for x in q.attachments] == ["text/plain"]


def test_real_rtf_is_converted_to_text():
    from email_rag_harness.testing.documents import rtf

    p = parse_mail(_attachments_mail(("application/rtf", "brief.rtf",
                                      rtf("Rechnung 4711: Betrag über 20 € falsch.\nDanke"))))
    assert "Rechnung 4711: Betrag über 20 € falsch." in p.attachment_text
    assert "\\rtf1" not in p.attachment_text and "fonttbl" not in p.attachment_text
    assert p.attachments[0].text_status == "extracted"


def test_attachments_without_text_are_named_even_when_the_body_fills_the_budget():
    import json

    from email_rag.core.records import Mail
    from email_rag.llm.mail_input import mail_content

    atts = json.dumps([{"filename": "scan.png", "content_type": "image/png", "size": 2048,
                        "text_chars": 0, "text_status": "no text: image/png (an image or scan"},
                       {"filename": "a.txt", "content_type": "text/plain", "size": 10,
                        "text_chars": 5, "text_status": "extracted"}])
    got = mail_content(Mail(1, "received", body_text="x" * 20_000, attachments=atts),
                       max_chars=8000)
    assert "[attachment 1: scan.png (image/png, 2.0 KB)] no text: image/png" in got.body
    assert "a.txt" not in got.body and len(got.body) < 8200
