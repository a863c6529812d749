"""Mail factories: plain support mails, the MIME zoo of bad input, sample mails.

Everything returns raw RFC 5322 bytes (CRLF line ends), deterministic for a
given argument, so tests can compute what dedup must make of it.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime

CRLF = b"\r\n"


def mail(n: int = 1, *, subject: str | None = None, body: str | None = None,
         sender: str = "kunde@example.org", to: str = "support@example.com",
         message_id: str | None = "default", extra: dict[str, str] | None = None,
         size: int | None = None, date: datetime | None = None) -> bytes:
    """A plain text/plain mail; ``message_id=None`` leaves the header out.

    ``size`` pads the body to about that many bytes (for speed and memory tests).
    """
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject if subject is not None else f"Anfrage {n}"
    msg["Date"] = format_datetime(date or datetime(2026, 11, 2, 9, 30, tzinfo=UTC))
    if message_id == "default":
        message_id = f"<mail-{n}@example.org>"
    if message_id is not None:
        msg["Message-ID"] = message_id
    for k, v in (extra or {}).items():
        msg[k] = v
    text = body if body is not None else f"Hallo,\nich habe eine Frage zu Bestellung {n}.\nGruss\n"
    if size and size > len(text):
        line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.\n"
        text += line * ((size - len(text)) // len(line) + 1)
    msg.set_content(text)
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


_LINE = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.\r\n"


def bulk_mails(count: int, size: int = 1400, start: int = 0, tag: str = "bulk") -> list[bytes]:
    """Many plain mails fast (a template, ~100x faster than ``mail``), each with its own
    Message-ID ``<tag-N@example.org>``; for big folders in speed and memory tests."""
    body = _LINE * max(1, (size - 300) // len(_LINE))
    return [(
        f"From: Kunde {n} <kunde{n}@example.org>\r\nTo: support@example.com\r\n"
        f"Subject: Anfrage {n}\r\nDate: Mon, 02 Nov 2026 09:30:00 +0000\r\n"
        f"Message-ID: <{tag}-{n}@example.org>\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}").encode()
        for n in range(start, start + count)]


def raw(text: str) -> bytes:
    """Literal mail text (LF line ends become CRLF), for hand-written odd cases."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8", "surrogateescape")


def garbage(seed: int = 7, size: int = 2048) -> bytes:
    """Binary bytes that are not a mail (no header field can be found)."""
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(size))
    return b"\x00\xff\xfe" + data.replace(b":", b";")


def zoo(huge_bytes: int = 300_000) -> dict[str, bytes]:
    """The MIME zoo: one mail per kind of odd input the parser must survive."""
    z: dict[str, bytes] = {}
    z["plain"] = mail(100, subject="Einfache Frage")
    multi = EmailMessage()
    multi["From"] = "Anna Alt <anna@example.org>"
    multi["To"] = "support@example.com"
    multi["Subject"] = "Multipart mit Anhang"
    multi["Message-ID"] = "<zoo-multipart@example.org>"
    multi["Date"] = "Tue, 03 Nov 2026 08:00:00 +0100"
    multi.set_content("Text-Teil: Rechnung anbei.\n")
    multi.add_alternative("<html><body><p>Text-Teil: <b>Rechnung</b> anbei.</p></body></html>",
                          subtype="html")
    multi.add_attachment(b"%PDF-1.4 fake pdf\n" * 50, maintype="application", subtype="pdf",
                         filename="rechnung.pdf")
    multi.add_attachment(b"\x00" * 5000, maintype="application", subtype="octet-stream",
                         filename="gross.bin")
    z["multipart"] = multi.as_bytes(policy=multi.policy.clone(linesep="\r\n"))
    z["html_only"] = raw(
        "From: shop@example.org\nTo: support@example.com\nSubject: Nur HTML\n"
        "Message-ID: <zoo-html@example.org>\nDate: Tue, 03 Nov 2026 08:01:00 +0100\n"
        "MIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n"
        "<html><body><h1>Bestellung</h1><p>Meine Bestellung <i>4711</i> ist nicht "
        "angekommen.</p><script>alert(1)</script></body></html>\n")
    z["wrong_charset"] = (
        b"From: a@example.org\r\nTo: support@example.com\r\nSubject: Falscher Zeichensatz\r\n"
        b"Message-ID: <zoo-wrong-charset@example.org>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=us-ascii\r\n\r\n"
        + "Grüße aus Köln, die Lieferung fehlt.\r\n".encode("latin-1"))
    z["latin1"] = (
        b"From: b@example.org\r\nTo: support@example.com\r\nSubject: Latin-1\r\n"
        b"Message-ID: <zoo-latin1@example.org>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        + "Sehr geehrte Damen und Herren, Größe XL bitte.\r\n".encode("latin-1"))
    z["iso2022jp"] = (
        b"From: c@example.jp\r\nTo: support@example.com\r\n"
        b"Subject: =?iso-2022-jp?b?GyRCJDMkcyRLJEEkTxsoQg==?=\r\n"
        b"Message-ID: <zoo-iso2022jp@example.jp>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=iso-2022-jp\r\n\r\n"
        + "こんにちは、注文について。\r\n".encode("iso-2022-jp"))
    z["unknown_charset"] = (
        b"From: d@example.org\r\nTo: support@example.com\r\nSubject: Unbekannt\r\n"
        b"Message-ID: <zoo-unknown-charset@example.org>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=x-klingon-42\r\n\r\n"
        + "Bitte um Rückruf.\r\n".encode())
    z["encoded_headers"] = raw(
        "From: =?utf-8?q?J=C3=BCrgen_M=C3=BCller?= <juergen@example.org>\n"
        "To: =?iso-8859-1?q?B=FCro?= <support@example.com>\n"
        "Subject: =?utf-8?b?UmVrbGFtYXRpb246IMOEcmdlciBtaXQgZGVyIExpZWZlcnVuZw==?=\n"
        "Message-ID: <zoo-encoded@example.org>\nDate: Tue, 03 Nov 2026 08:02:00 +0100\n"
        "\nInhalt.\n")
    big_attach = EmailMessage()
    big_attach["From"] = "e@example.org"
    big_attach["To"] = "support@example.com"
    big_attach["Subject"] = "Grosser Anhang"
    big_attach["Message-ID"] = "<zoo-big-attachment@example.org>"
    big_attach.set_content("Siehe Anhang.\n")
    big_attach.add_attachment(bytes(range(256)) * 400, maintype="application",
                              subtype="zip", filename="=?utf-8?q?Fotos_=C3=BCbersicht.zip?=")
    z["attachment_over_limit"] = big_attach.as_bytes(
        policy=big_attach.policy.clone(linesep="\r\n"))
    z["huge"] = mail(101, subject="Riesige Mail", size=huge_bytes,
                     message_id="<zoo-huge@example.org>")
    z["no_date"] = raw("From: f@example.org\nTo: support@example.com\nSubject: Ohne Datum\n"
                       "Message-ID: <zoo-no-date@example.org>\n\nKein Datum.\n")
    z["no_message_id"] = raw("From: g@example.org\nTo: support@example.com\n"
                             "Subject: Ohne Message-ID\nDate: Tue, 03 Nov 2026 08:03:00 +0100\n"
                             "\nKeine ID.\n")
    z["broken_boundary"] = raw(
        "From: h@example.org\nTo: support@example.com\nSubject: Kaputte Grenze\n"
        "Message-ID: <zoo-broken-boundary@example.org>\nMIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="XYZ"\n\n'
        "--ABC\nContent-Type: text/plain\n\nDer Text ist trotzdem da.\n--ABC--\n")
    z["garbage"] = garbage()
    return z


ZOO_EXPECTED = {
    # name: (parse_status after the full parse, True when the poller records it as failed)
    "plain": ("ok", False),
    "multipart": ("ok", False),
    "html_only": ("ok", False),
    "wrong_charset": ("partial", False),
    "latin1": ("ok", False),
    "iso2022jp": ("ok", False),
    "unknown_charset": ("partial", False),
    "encoded_headers": ("ok", False),
    "attachment_over_limit": ("ok", False),
    "huge": ("too_large", False),
    "no_date": ("ok", False),
    "no_message_id": ("ok", False),
    "broken_boundary": ("partial", False),
    "garbage": ("failed", True),
}


def sample_mails() -> list[bytes]:
    """A few realistic support mails (German and English) plus the usual noise."""
    out = [
        mail(1, sender="Maria Schmidt <maria.schmidt@example.org>",
             subject="Rechnung doppelt abgebucht",
             body="Guten Tag,\n\nmeine Rechnung 2026-1142 wurde zweimal von meinem Konto "
                  "abgebucht. Bitte erstatten Sie den doppelten Betrag.\n\n"
                  "Mit freundlichen Gruessen\nMaria Schmidt\n",
             message_id="<sample-1@example.org>"),
        mail(2, sender="Tom Baker <tom@example.net>", subject="Cannot log in since update",
             body="Hi,\n\nsince yesterday's update I cannot log in; the app says "
                  "'token expired'. Reinstalling did not help.\n\nThanks, Tom\n",
             message_id="<sample-2@example.net>"),
        mail(3, sender="Jonas Weber <jonas@example.org>", subject="Lieferadresse aendern",
             body="Hallo,\n\nkann ich die Lieferadresse fuer Bestellung 88412 noch aendern? "
                  "Ich bin umgezogen.\n\nDanke\nJonas\n",
             message_id="<sample-3@example.org>"),
        mail(4, sender="Maria Schmidt <maria.schmidt@example.org>",
             subject="Re: Rechnung doppelt abgebucht",
             body="Nachtrag: es geht um 49,90 EUR.\n",
             message_id="<sample-4@example.org>",
             extra={"In-Reply-To": "<sample-1@example.org>",
                    "References": "<sample-1@example.org>"}),
        mail(5, sender="noreply@shop.example", subject="Automatic reply: out of office",
             body="I am out of office until Monday.\n", message_id="<sample-5@shop.example>",
             extra={"Auto-Submitted": "auto-replied"}),
        mail(6, sender="MAILER-DAEMON@mx.example", subject="Undelivered Mail Returned to Sender",
             body="This is the mail system. Your message could not be delivered.\n",
             message_id="<sample-6@mx.example>"),
    ]
    z = zoo()
    out += [z["html_only"], z["multipart"]]
    return out
