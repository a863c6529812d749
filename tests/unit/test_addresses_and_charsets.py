"""Pure logic of issue 15: address lists, the reply rule, decoding as mail clients do."""

from __future__ import annotations

import pytest

from email_rag.mail.addresses import choose_reply, parse_addresses, stored_reply
from email_rag.mail.headers import decode_bytes, decode_header_value
from email_rag.mail.mime import decode_base64


@pytest.mark.parametrize(("value", "expected"), [
    ("alice@example.com <bob@example.com>", [("alice@example.com", "bob@example.com")]),
    ("=?utf-8?q?Dubois,_Chlo=C3=A9?= <c@example.org>", [("Dubois, Chloé", "c@example.org")]),
    ('"Doe, John" <j@x.org>, k@y.org', [("Doe, John", "j@x.org"), ("", "k@y.org")]),
    ("bob@x.org (Bob Smith)", [("Bob Smith", "bob@x.org")]),
    ("undisclosed-recipients:;", []),
    ("Team: a@b.org, c@d.org;", [("", "a@b.org"), ("", "c@d.org")]),
])
def test_address_lists_are_split_like_a_mail_client_does(value, expected):
    assert parse_addresses(value, decode_header_value) == expected


@pytest.mark.parametrize(("from_", "reply_to", "addr", "rule"), [
    (["a@example.org"], [], "a@example.org", "From (no Reply-To)"),
    (["noreply@shop.example"], ["c@example.org"], "c@example.org", "Reply-To"),
    (["a@example.org"], ["noreply@example.org"], "a@example.org", "no-reply address"),
    (["a@example.org"], ["support@example.com"], "a@example.org", "our own address"),
    (["a@example.org"], ["x@example.org", "y@example.org"], None, "Reply-To names 2"),
    (["a@example.org", "b@example.org"], [], None, "From names 2 sender addresses"),
    ([], [], None, "no sender address"),
    (["a@example.org"], ["not an address"], "a@example.org", "not a valid address"),
])
def test_the_reply_rule(from_, reply_to, addr, rule):
    choice = choose_reply(from_, reply_to, frozenset({"support@example.com"}))
    assert choice.addr == addr and rule in choice.rule


def test_rows_stored_before_the_rule_are_answered_to_from():
    assert stored_reply({"from_addr": "a@example.org", "reply_rule": None}).addr == "a@example.org"
    assert stored_reply({"from_addr": "x", "reply_addr": None, "reply_rule": "nobody"}).addr is None


@pytest.mark.parametrize(("data", "label", "text", "problem"), [
    ("“x” 20€".encode("cp1252"), "iso-8859-1", "“x” 20€", None),
    ("镕".encode("gbk"), "gb2312", "镕", None),
    ("똠".encode("cp949"), "ks_c_5601-1987", "똠", None),
    ("①".encode("cp932"), "shift_jis", "①", None),
    ("Grüße".encode() + b"\xff", "utf-8", "Grüße\ufffd", "1 byte sequence"),
    ("Grüße".encode(), None, "Grüße", None),
    ("Grüße".encode("latin-1"), None, "Grüße", "no charset declared"),
    ("Grüße".encode("latin-1"), "us-ascii", "Grüße", "us-ascii"),
    (b"abc", "x-klingon", "abc", "unknown charset"),
])
def test_decoding_uses_the_superset_and_names_every_defect(data, label, text, problem):
    got, why = decode_bytes(data, label)
    assert got == text
    assert (why is None) if problem is None else (problem in why)


def test_base64_defects_are_named_and_the_rest_decoded():
    assert decode_base64(b"SGFsbG8=\r\n") == (b"Hallo", None)
    data, why = decode_base64(b"SGFsbG8=!!YWJj")
    assert data.startswith(b"Hallo") and "outside the base64 alphabet" in why


@pytest.mark.parametrize(("from_", "reply_to", "fields", "addr", "rule"), [
    # the case: a no-reply sender with an empty Reply-To
    (["no-reply@shop.example"], [], {"reply_to_field": '"Shop" <>'}, None, "no-reply sender"),
    (["noreply@shop.example"], [], {}, None, "no-reply sender"),
    (["donotreply@bank.example"], [], {}, None, "no-reply sender"),
    (["do-not-reply@bank.example"], [], {}, None, "no-reply sender"),
    (["no_reply+news@bank.example"], [], {}, None, "no-reply sender"),
    (["noreply@shop.example"], ["no-reply@shop.example"], {}, None, "no-reply sender"),
    ([], [], {"from_field": '"Shop" <>'}, None, "no-reply sender"),
    # a Reply-To that is present but names no usable address is said as such
    (["a@example.org"], [], {"reply_to_field": '"Name" <>'}, "a@example.org",
     "Reply-To '\"Name\" <>' names no address"),
    (["a@example.org"], [], {"reply_to_field": "undisclosed"}, "a@example.org",
     "names no address"),
])
def test_a_no_reply_sender_gets_no_reply_address_and_the_rule_says_why(from_, reply_to, fields,
                                                                       addr, rule):
    choice = choose_reply(from_, reply_to, frozenset({"support@example.com"}), **fields)
    assert choice.addr == addr and rule in choice.rule, choice.rule
    if reply_to or fields.get("reply_to_field"):
        assert "no Reply-To" not in choice.rule
    assert choice.no_reply_sender == (rule == "no-reply sender")


def test_an_empty_reply_to_is_kept_as_present_by_the_header_parser():
    from email_rag_harness.testing.mails import raw

    from email_rag.mail.headers import parse_headers

    h = parse_headers(raw('From: no-reply@shop.example\nReply-To: "Shop" <>\nSubject: x\n\nx\n'))
    assert h.reply_to == [] and h.reply_to_field == '"Shop" <>'
    h = parse_headers(raw('From: "Shop" <>\nSubject: x\n\nx\n'))
    assert h.from_addrs == [] and h.from_field == '"Shop" <>'


@pytest.mark.parametrize("label", ["gb2312", "big5", "iso-8859-1", "shift_jis"])
def test_a_label_contradicted_by_valid_utf8_is_read_as_utf8_with_the_reason(label):
    text = "请查收发票 Grüße ①"
    got, why = decode_bytes(text.encode(), label)
    assert got == text
    assert why is not None and "valid UTF-8" in why and label in why


EVERY_RULE = [
    (["a@example.org"], [], {}),
    (["a@example.org"], ["a@example.org"], {}),
    (["noreply@shop.example"], ["c@example.org"], {}),
    (["a@example.org"], ["noreply@example.org"], {}),
    (["a@example.org"], ["support@example.com"], {}),
    (["a@example.org"], ["x@example.org", "y@example.org"], {}),
    (["a@example.org", "b@example.org"], [], {}),
    ([], [], {}),
    (["a@example.org"], ["not an address"], {}),
    (["a@example.org"], [], {"reply_to_field": '"Name" <>'}),
    (["noreply@shop.example"], [], {}),
    (["noreply@shop.example"], ["no-reply@shop.example"], {}),
    ([], [], {"from_field": '"Shop" <>'}),
    (["not valid"], [], {}),
    (["not valid"], ["support@example.com"], {}),
    (["not valid"], ["not an address"], {}),
]


@pytest.mark.parametrize(("from_", "reply_to", "fields"), EVERY_RULE)
def test_every_reply_rule_reads_back_as_its_wording_and_values(from_, reply_to, fields):
    """A stored rule is read back into its wording (a text of the web UI's catalog) and its
    values (addresses; a reason, itself a wording with values), which give the rule again:
    the draft page shows it in the agent's language."""
    from email_rag.mail.addresses import RULES, rule_parts

    rule = choose_reply(from_, reply_to, frozenset({"support@example.com"}), **fields).rule
    parts = rule_parts(rule)
    assert parts is not None, rule
    wording, values = parts
    assert wording in RULES and wording % values == rule
    if "why_not" in values:
        reason = rule_parts(values["why_not"])
        assert reason is not None and reason[0] in RULES, values


def test_a_rule_of_no_known_wording_is_not_read_back():
    from email_rag.mail.addresses import rule_parts

    assert rule_parts("something else entirely") is None
    assert rule_parts("From (stored before the reply rule existed)") == (
        "From (stored before the reply rule existed)", {})
