"""Personal data removed from a case before it is proposed as knowledge
(email_rag.knowledge.candidates.remove_personal)."""

from __future__ import annotations

from email_rag.knowledge.candidates import remove_personal, title_of

QUESTION = """Hallo zusammen,

meine Bestellung 4711-22 ist noch nicht da. Meine Kundennummer ist KD-998877, erreichbar
unter +49 170 1234567 oder alice.example@mail.example. Bitte erstatten Sie auf
DE89 3704 0044 0532 0130 00. Geliefert werden sollte am 2026-12-01.

Viele Grüße
Alice Example
Musterstraße 5
> quoted older mail with Bob Secret
"""
ANSWER = """Dear Mrs Example,

your order #55210 left our warehouse; returns are free within 30 days.
Alice, the tracking number is 00340434161234567890.

Kind regards
Anna from Support
"""


def test_names_addresses_numbers_and_the_signature_are_removed_the_policy_stays():
    q = remove_personal(QUESTION, "Alice Example")
    for personal in ("4711-22", "998877", "1234567", "alice.example@", "DE89", "3704",
                     "Alice", "Musterstraße", "Bob Secret"):
        assert personal not in q, personal
    assert "Bestellung {order_number}" in q and "Kundennummer ist [number]" in q
    assert "[phone]" in q and "[e-mail]" in q and "[IBAN]" in q
    assert "2026-12-01" in q  # a date is not a phone number
    assert q.startswith("Hallo zusammen,")  # a greeting of nobody in particular stays
    a = remove_personal(ANSWER, "Alice Example")
    assert a.startswith("Dear Mrs {customer_name},")
    assert "order #{order_number}" in a and "within 30 days" in a
    assert "{customer_name}, the tracking number is [" in a and "0034043416" not in a
    assert "Anna" not in a and "Kind regards" not in a


def test_the_title_is_the_subject_without_reply_prefixes_and_personal_data():
    assert title_of("Re: AW: Bestellung 4711 von Alice Example", "x", "Alice Example") == \
        "Bestellung {order_number} von {customer_name}"
    assert title_of("", "Where is my parcel?", None) == "Where is my parcel?"
