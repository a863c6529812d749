"""Header parsing for the poller: decoding, keys, threading, loop guard (pure functions)."""

import pytest
from email_rag_harness.testing.mails import garbage, mail, raw

from email_rag.mail.headers import (
    dedup_key,
    loop_guard,
    message_ids,
    normalise_message_id,
    parse_date,
    parse_headers,
    thread_key,
)


def test_message_id_is_normalised_to_brackets_and_lowercase_domain():
    assert normalise_message_id(" <Abc.1@Example.COM> ") == "<Abc.1@example.com>"
    assert normalise_message_id("abc@example.com") == "<abc@example.com>"
    assert normalise_message_id("  ") is None
    assert normalise_message_id(None) is None


def test_references_are_split_into_message_ids_in_order():
    assert message_ids("<a@x> <b@X>\r\n <c@x>") == ["<a@x>", "<b@x>", "<c@x>"]
    assert message_ids("a@x b@x") == ["<a@x>", "<b@x>"]
    assert message_ids("") == []


def test_encoded_and_raw_8bit_headers_are_decoded():
    h = parse_headers(raw(
        "From: =?iso-8859-1?q?J=FCrgen_M=FCller?= <juergen@example.org>\n"
        "To: a@example.com, \"Team, Support\" <b@example.com>\n"
        "Subject: =?utf-8?b?w4RyZ2Vy?= mit\n =?utf-8?q?der_Lieferung?=\n"
        "Message-ID: <X1@Example.org>\n\nbody"))
    assert h.ok and h.from_name == "Jürgen Müller" and h.from_addr == "juergen@example.org"
    assert h.to_addrs == ["a@example.com", "b@example.com"]
    assert h.subject == "Ärger mit der Lieferung"
    assert h.message_id == "<X1@example.org>"
    latin = parse_headers("Subject: Grüße\r\nFrom: Jörg <j@x.de>\r\n\r\nx".encode("latin-1"))
    assert latin.subject == "Grüße" and latin.from_name == "Jörg"


def test_dates_are_utc_and_garbage_dates_are_none():
    assert str(parse_date("Mon, 3 Nov 2025 10:00:00 +0100")) == "2025-11-03 09:00:00"
    assert parse_date("yesterday at noon") is None
    assert parse_date("") is None
    assert parse_date("Mon, 3 Nov 1850 10:00:00 +0000") is None  # a bogus date, not stored


@pytest.mark.parametrize("data", [b"", garbage(), b"\x00\x01no colon anywhere\r\n\r\nbody"])
def test_no_header_fields_is_not_ok_with_a_reason(data):
    h = parse_headers(data)
    assert not h.ok and "no header fields" in h.reason


def test_same_message_id_gives_same_key_whatever_the_trace_headers():
    a = b"Received: from mx1\r\n" + mail(1)
    b = b"Received: from mx2\r\nDelivered-To: x@y\r\n" + mail(1)
    assert dedup_key(parse_headers(a), a) == dedup_key(parse_headers(b), b)
    assert dedup_key(parse_headers(mail(2)), mail(2)) != dedup_key(parse_headers(a), a)


def test_without_message_id_the_content_decides():
    one = mail(1, message_id=None)
    redelivered = b"Received: from mx2\r\n" + one
    other = mail(1, message_id=None, body="another text\n")
    key = dedup_key(parse_headers(one), one)
    assert key == dedup_key(parse_headers(redelivered), redelivered)
    assert key != dedup_key(parse_headers(other), other)
    empty_id = b"Message-ID: <>\r\n" + one
    assert dedup_key(parse_headers(empty_id), empty_id) == key  # "<>" counts as missing


def test_unparseable_mails_are_keyed_by_their_raw_bytes():
    g = garbage()
    assert dedup_key(parse_headers(g), g) == dedup_key(parse_headers(g), g)
    assert dedup_key(parse_headers(g), g) != dedup_key(parse_headers(garbage(8)), garbage(8))


def test_thread_key_is_the_root_of_the_thread():
    root = parse_headers(mail(1, message_id="<root@x>"))
    reply = parse_headers(mail(2, message_id="<r2@x>", extra={
        "In-Reply-To": "<r1@x>", "References": "<root@x> <r1@x>"}))
    only_irt = parse_headers(mail(3, message_id="<r3@x>", extra={"In-Reply-To": "<root@x>"}))
    assert thread_key(root, "x") == thread_key(reply, "x") == thread_key(only_irt, "x")
    no_ids = parse_headers(mail(4, message_id=None))
    assert thread_key(no_ids, "fallback") == "fallback"


DOMAIN = "email-rag.invalid"


@pytest.mark.parametrize("extra,sender,message_id,expected", [
    ({"X-Email-RAG": "draft=7"}, "support@example.com", "<a@x>", "own_mail:x-email-rag"),
    ({}, "someone@example.org", f"<reply-1@{DOMAIN}>", "own_mail:message_id"),
    ({}, "Support@Example.com", "<a@x>", "own_mail:from_address"),
    ({"Auto-Submitted": "auto-replied"}, "a@x.org", "<a@x>", "auto_submitted:auto-replied"),
    ({"Auto-Submitted": "no"}, "a@x.org", "<a@x>", None),
    ({"Precedence": "bulk"}, "a@x.org", "<a@x>", "precedence:bulk"),
    ({"Precedence": "auto_reply"}, "a@x.org", "<a@x>", "precedence:auto_reply"),
    ({"X-Autoreply": "yes"}, "a@x.org", "<a@x>", "auto_reply_header:x-autoreply"),
    ({}, "MAILER-DAEMON@mx.example", "<a@x>", "bounce:mailer-daemon"),
    ({"Return-Path": "<>"}, "a@x.org", "<a@x>", "bounce:null_return_path"),
    ({}, "kunde@example.org", "<a@x>", None),
])
def test_loop_guard(extra, sender, message_id, expected):
    h = parse_headers(mail(1, sender=sender, message_id=message_id, extra=extra))
    assert loop_guard(h, DOMAIN, frozenset({"support@example.com"})) == expected


def test_delivery_status_reports_are_bounces():
    h = parse_headers(raw("From: postbox@mx.example\nContent-Type: multipart/report;\n"
                          " report-type=delivery-status; boundary=b\n\n--b--\n"))
    assert loop_guard(h, DOMAIN) == "bounce:delivery-status"


def report(report_type: str, sender: str = "postbox@mx.example") -> bytes:
    return raw(f"From: {sender}\nTo: support@example.com\nSubject: report\n"
               f"Message-ID: <r-{report_type}@mx.example>\nContent-Type: multipart/report;\n"
               f" report-type={report_type}; boundary=b\n\n--b--\n")


@pytest.mark.parametrize(("report_type", "expected"), [
    ("disposition-notification", "report:disposition-notification"),  # MDN read receipt
    ("feedback-report", "report:feedback-report"),  # ARF abuse/feedback report
    ("tlsrpt", "report:tlsrpt"),  # any other report is machine-made as well
])
def test_reports_of_every_kind_are_automatic_mail(report_type, expected):
    assert loop_guard(parse_headers(report(report_type)), DOMAIN) == expected


@pytest.mark.parametrize(("extra", "expected"), [
    ({"X-Autogenerated": "Reply"}, "auto_reply_header:x-autogenerated"),
    ({"X-FC-MachineGenerated": "true"}, "auto_reply_header:x-fc-machinegenerated"),
    ({"X-POST-MessageClass": "9; Autoresponder"}, "auto_reply_header:x-post-messageclass"),
    ({"X-Precedence": "auto_reply"}, "precedence:auto_reply"),
    ({"X-POST-MessageClass": "1; Regular"}, None),
])
def test_vendor_auto_reply_headers_are_automatic_mail(extra, expected):
    h = parse_headers(mail(1, sender="kunde@example.org", extra=extra))
    assert loop_guard(h, DOMAIN) == expected


def test_raw_8bit_headers_fall_back_to_the_charset_the_message_declares():
    """GIVEN Subject and From name as raw GB2312 bytes (no encoded word) in a mail whose
    body says charset=gb2312 THEN they decode as GB2312 (what mail clients show), not as
    windows-1252 mojibake."""
    subject, name = "关于发票的问题", "王小明"
    data = (f"From: {name} <wang@example.cn>\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n"
            "Content-Type: text/plain; charset=gb2312\r\n\r\n发票\r\n").encode("gb2312")
    h = parse_headers(data)
    assert (h.subject, h.from_name, h.from_addr) == (subject, name, "wang@example.cn")
    multi = (f"From: {name} <wang@example.cn>\r\nSubject: {subject}\r\n"
             'Content-Type: multipart/alternative; boundary="b"\r\n\r\n--b\r\n'
             "Content-Type: text/plain; charset=GB2312\r\n\r\n发票\r\n--b--\r\n").encode("gb2312")
    assert parse_headers(multi).subject == subject  # the body part's charset counts too


def test_a_utf8_display_name_with_one_truncated_byte_keeps_the_rest():
    name = "Зоя Müller-Иванова"
    cut = name.encode()[:-1]  # the last Cyrillic letter lost its second byte
    for declared in (b"", b"Content-Type: text/plain; charset=iso-8859-1\r\n"):
        h = parse_headers(b"From: " + cut + b" <zoya@example.org>\r\nSubject: " + cut
                          + b"\r\n" + declared + b"\r\nx\r\n")
        assert h.from_name == "Зоя Müller-Иванов\ufffd", declared
        assert h.subject == "Зоя Müller-Иванов\ufffd"


def _labelled(cte: str, message_id: str | None = "<lab@example.org>") -> bytes:
    mid = f"Message-ID: {message_id}\n" if message_id else ""
    return raw(f"From: a@example.org\nTo: support@example.com\nSubject: x\n{mid}"
               f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: {cte}\n"
               "\nSGFsbG8sIFJlY2hudW5nIDQ3MTE=\n")


def test_the_content_hash_covers_the_mime_labels():
    """The same body bytes under another Content-Transfer-Encoding (or Content-Type) are
    another mail: base64 'Hallo, Rechnung 4711' is not the 7-bit text 'SGFsbG8...'."""
    from email_rag.mail.headers import content_hash

    a, b = _labelled("base64"), _labelled("7bit")
    assert content_hash(parse_headers(a), a) != content_hash(parse_headers(b), b)
    c = a.replace(b"text/plain", b"text/html")
    assert content_hash(parse_headers(a), a) != content_hash(parse_headers(c), c)
    a, b = _labelled("base64", None), _labelled("7bit", None)
    assert dedup_key(parse_headers(a), a) != dedup_key(parse_headers(b), b)


def old_formula(data: bytes) -> str:
    """The content hash rows were stored with before it covered the MIME labels."""
    import hashlib

    head, _, body = data.partition(b"\r\n\r\n")
    fields = {}
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        fields.setdefault(name.lower(), value.strip())
    stable = b"\n".join(fields.get(n, b"") for n in (b"from", b"to", b"cc", b"subject", b"date"))
    return hashlib.sha256(b"content:" + stable + b"\n\n" + body).hexdigest()


def test_legacy_keys_are_the_formula_rows_were_stored_with():
    from email_rag.mail.headers import legacy_keys, sha256

    with_id, without = _labelled("base64"), _labelled("base64", None)
    assert legacy_keys(with_id) == (sha256("mid:<lab@example.org>"), old_formula(with_id))
    assert legacy_keys(without) == (old_formula(without), old_formula(without))


def test_header_fields_unfold_continuations_and_skip_lines_that_are_no_field():
    """GIVEN a header block with folded values, a line without a colon followed by an
    indented line, and bare CR line ends THEN the folded values are joined, the stray line
    and its indented follower are skipped, and names are lower-cased, in order."""
    from email_rag.mail.headers import header_fields

    head = (b"Subject: one\r\n two\r\nnot a field\r\n indented after it\r\n"
            b"X-A: 1\rX-a : 2\n\tfolded\nTo:\n")
    assert header_fields(head) == {"subject": ["one\n two"], "x-a": ["1", "2\n\tfolded"],
                                   "to": [""]}


def test_plain_and_messy_values_decode_the_same_way():
    """GIVEN values with runs of spaces, tabs, control characters and encoded words THEN
    each is decoded and cleaned; a plain ASCII value is only stripped."""
    from email_rag.mail.headers import clean, clip_bytes, decode_header_value

    assert decode_header_value("  Hallo Welt ") == "Hallo Welt"
    assert decode_header_value("a  b\tc\x01d") == "a b cd"
    assert decode_header_value("=?utf-8?q?Gr=C3=BC=C3=9Fe?= aus  Berlin") == "Grüße aus Berlin"
    assert clean("a\x00b\udce9", 10) == "ab?"
    assert clip_bytes("é" * 10, 5) == "éé"
    assert clip_bytes("abc", 12) == "abc"


def test_a_calendar_part_is_found_in_any_letter_case():
    from email_rag.mail.headers import calendar_method

    assert calendar_method(b"Content-Type: TEXT/Calendar; method=REQUEST\n\nx") == "request"
    assert calendar_method(b"Content-Type: text/plain\n\nno invitation") is None
