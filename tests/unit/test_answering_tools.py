"""Saved replies' placeholders and the @mentions of internal notes: pure logic
(email_rag.mail.placeholders, email_rag.review.notes)."""

from __future__ import annotations

import pytest

from email_rag.mail.placeholders import (
    clean_value,
    customer_name,
    order_number,
    render,
    unfilled,
)
from email_rag.review.notes import mention_candidates, parse_mentions

TEMPLATE = "Hello {customer_name},\nyour order {order_number} is on its way.\n{agent_name}"


def test_every_placeholder_with_a_value_is_filled():
    r = render(TEMPLATE, {"customer_name": "Carla Kunde", "order_number": "4711",
                          "agent_name": "anna"})
    assert r.text == "Hello Carla Kunde,\nyour order 4711 is on its way.\nanna"
    assert r.missing == ()
    assert unfilled(r.text) == []


def test_a_placeholder_without_a_value_stays_visible_never_empty():
    r = render(TEMPLATE, {"customer_name": None, "order_number": "", "agent_name": "anna"})
    assert r.text == "Hello {customer_name},\nyour order {order_number} is on its way.\nanna"
    assert r.missing == ("customer_name", "order_number")
    assert unfilled(r.text) == ["{customer_name}", "{order_number}"]


def test_filling_is_one_pass_and_unknown_braces_are_left_alone():
    """A customer who calls themselves "{order_number}" cannot make the text expand twice;
    braces that are no placeholder ({name}, JSON) stay as written."""
    r = render("{customer_name} / {order_number} / {name} / {\"a\": 1}",
               {"customer_name": "{order_number}", "order_number": "55210"})
    assert r.text == "{order_number} / 55210 / {name} / {\"a\": 1}"


def test_values_lose_bidi_controls_control_characters_and_braces():
    assert clean_value("Carla\u202e Kunde\n\x07") == "Carla Kunde"
    assert clean_value("  \"{Eve}\"  ") == "Eve"
    assert clean_value("\u2066\u2069") is None


@pytest.mark.parametrize(("name", "addr", "expected"), [
    ("Carla Kunde", "carla@example.org", "Carla Kunde"),
    ("carla@example.org", "carla@example.org", None),  # an address is no name
    ("", "carla@example.org", None),
    (None, None, None),
    ("Renée\u202eO'Brien", None, "RenéeO'Brien"),
])
def test_the_customer_name_is_the_senders_display_name(name, addr, expected):
    assert customer_name(name, addr) == expected


@pytest.mark.parametrize(("subject", "body", "expected"), [
    ("Bestellung 4711 fehlt", "", "4711"),
    ("Where is my order?", "My order #55210 did not arrive.", "55210"),
    ("", "Bestellnummer: AB-12345\nDanke", "AB-12345"),
    ("Commande n° 998877", "", "998877"),
    ("Order 4711", "order no. 4711 again", "4711"),  # the same number twice is one
    ("Order 4711", "and order 4712", None),  # two different numbers: the agent chooses
    ("Bestellung vom 12.03.", "Ich habe eine Bestellung aufgegeben.", None),
    ("Printer broken", "Call me at 0171 5551234", None),  # a number without a label
    ("Order AB", "", None),  # fewer than three digits
])
def test_the_order_number_is_the_one_the_customer_labels(subject, body, expected):
    assert order_number(subject, body) == expected


NAMES = ["anna", "bob", "bob.smith", "Carl-Heinz", "eve@team"]


@pytest.mark.parametrize(("text", "mentioned", "unknown"), [
    ("@bob please look", ["bob"], []),
    ("Thanks @BOB.", ["bob"], []),  # case, and a full stop after the name
    ("@bob.smith and @bob's idea", ["bob.smith", "bob"], []),
    ("(@carl-heinz) @anna, @anna", ["Carl-Heinz", "anna"], []),
    ("mail anna@example.org or x@bob", [], []),  # an address is no mention
    ("@eve@team knows", ["eve@team"], []),
    ("@zoe and @bob", ["bob"], ["zoe"]),
    ("@ alone, @-dash", [], []),
    ("", [], []),
])
def test_mentions_are_the_users_named_after_an_at_sign(text, mentioned, unknown):
    assert parse_mentions(text, NAMES) == (mentioned, unknown)


def test_a_mention_at_the_start_of_a_line_counts():
    assert mention_candidates("note\n@bob see above") == ["bob"]
