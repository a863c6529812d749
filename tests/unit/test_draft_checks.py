"""Draft checks: each problem a small model was seen to make is caught, a good draft passes."""

from __future__ import annotations

import pytest

from email_rag.llm import draft_checks as dc

MAIL = ("Guten Tag, meine Bestellung 5521 ist nach zwei Wochen immer noch nicht angekommen. "
        "Können Sie bitte nachsehen, wo das Paket ist? Vielen Dank, Jana Roth")
GOOD = ("Guten Tag Frau Roth,\n\nvielen Dank für Ihre Nachricht. Wir haben beim Versand "
        "nachgefragt und melden uns morgen mit dem aktuellen Stand Ihrer Sendung.\n\n"
        "Mit freundlichen Grüßen\nYour support team")


def test_a_sensible_draft_in_the_mails_language_passes():
    assert dc.problems(GOOD, MAIL, "de") == []


@pytest.mark.parametrize("draft,kind", [
    (GOOD.replace("Your support team", "[Your Name]"), "placeholder"),
    ("Hallo,\n\nwir prüfen das bis <date>.\n\nGrüße", "placeholder"),
    ("I'm sorry, but I can't assist with that request.", "refusal"),
    ("Als KI kann ich Ihnen dabei nicht helfen.", "refusal"),
    (MAIL, "echo"),
    # seen with the 1.5B model: the "reply" speaks as the customer
    ("Hallo Jana Roth,\n\nmeine Bestellung 5521 ist nach zwei Wochen immer noch nicht "
     "angekommen. Können Sie bitte nachsehen, wo das Paket ist? Your support team", "echo"),
    ("Bonjour,\n\nje ne peux pas vérifier la livraison en tant qu'assistant de support.",
     "refusal"),
    ("Hola Lucía,\n\nComo asistente de soporte, no tengo acceso a la información.", "refusal"),
    ("Dear Ms Roth,\n\nthank you for your message. We have asked the carrier and will get back "
     "to you tomorrow with the status of your parcel.\n\nKind regards\nThe team", "language"),
    ("Guten Tag Frau Roth,\n\nvielen Dank für Ihre Nachricht. Wir haben beim Versand "
     "nachgefragt und melden uns morgen mit dem aktuellen Stand Ihrer Sendung und werden "
     "Ihnen dann auch sagen, ob wir das Paket neu verschicken oder Ihnen den Betrag", "cut_off"),
])
def test_each_known_failure_is_caught_with_its_kind(draft, kind):
    found = dict(dc.problems(draft, MAIL, "de"))
    assert kind in found, found


def test_language_check_is_skipped_when_the_mail_language_is_unknown():
    assert dc.language("Hello, thank you for your mail, we will check it.", "other") is None


def test_a_draft_signed_with_the_customers_name_is_caught():
    """Seen in the demo with the 1.5B model: the 'reply' spoke as the customer and was
    signed with her name."""
    draft = ("Hallo Maria,\n\ndanke für Ihre Nachricht. Ich habe die Rechnung zweimal "
             "abgehoben.\n\nMit freundlichen Grüßen\nMaria Schmidt")
    found = dict(dc.problems(draft, "Rechnung doppelt", "de", "Maria Schmidt <m@example.org>"))
    assert "signed_as_customer" in found
    assert dc.signed_as_customer(GOOD, "Jana Roth <jana@example.org>") is None
