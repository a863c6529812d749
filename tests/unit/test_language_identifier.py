"""The language identifier (email_rag/mail/language.py) with the real libraries: short,
mixed and unsupported texts, and the codes the classification schema knows."""

from __future__ import annotations

import pytest

from email_rag.classification.values import Language
from email_rag.mail.language import OTHER, SUPPORTED, identify, written_in


@pytest.mark.parametrize(("text", "code"), [
    ("Rechnung doppelt abgebucht\nHallo, mir wurde die Rechnung 4411 zweimal abgebucht. "
     "Bitte erstatten Sie den doppelten Betrag. Gruß, Jana", "de"),
    ("Danke!", "de"),
    ("Where is my order?", "en"),
    ("Où est ma commande ?", "fr"),
    ("¿Dónde está mi pedido?", "es"),
    ("Dov'è il mio ordine?", "it"),
    ("Waar is mijn bestelling?", "nl"),
    ("Onde está o meu pedido?", "pt"),
    # a German signature under an English mail: the customer wrote English
    ("Hi, my invoice still shows the wrong address. Could you correct it?\n"
     "Mit freundlichen Grüßen, Karl Meier, Geschäftsführer", "en"),
    # an English error message quoted in a French mail
    ("Bonjour, le message dit 'Your payment could not be processed'. Pouvez-vous vérifier ? Merci",
     "fr"),
    # the quoted earlier mail does not count
    ("Hola, sigo sin respuesta sobre mi pedido.\n> Dear customer, thank you for your order.\n"
     "> We will ship it within two days and send you the tracking number.", "es"),
    # a shop's German name in a short Spanish question (lingua alone said Dutch: kaffeewerk m44)
    ("Tazas con logo\nHola, ¿venden tazas de espresso con el logo de Kaffeewerk?", "es"),
    ("Gdzie jest moje zamówienie? Proszę o szybką odpowiedź.", OTHER),
    ("注文した商品がまだ届いていません。確認してください。", OTHER),
])
def test_the_language_of_short_mixed_and_foreign_mails(text, code):
    assert identify(text).code == code


def test_nothing_to_read_is_other_and_unsure():
    for text in ("", "   ", "!!! ???", "12345 6789"):
        guess = identify(text)
        assert guess.code == OTHER and not guess.sure


def test_a_plain_mail_is_sure_and_a_mixed_one_less_so():
    plain = identify("Hallo, ich kann mich seit heute Morgen nicht mehr anmelden. "
                     "Das Passwort habe ich schon zurückgesetzt. Was kann ich tun?")
    mixed = identify("Hi, my invoice still shows the wrong address. Could you correct it?\n"
                     "Mit freundlichen Grüßen, Karl Meier, Geschäftsführer")
    assert plain.sure and plain.confidence > mixed.confidence


def test_the_codes_are_the_classification_schema_languages():
    assert {*SUPPORTED, OTHER} == {lang.value for lang in Language}


def test_only_a_long_text_plainly_in_one_language_is_written_in_it_without_the_vote():
    german = ("Guten Tag Frau Weber, vielen Dank für Ihre Nachricht. Wir haben die doppelte "
              "Abbuchung geprüft und den Betrag heute auf Ihr Konto zurückgebucht. Bitte "
              "melden Sie sich, falls noch etwas offen ist. Mit freundlichen Grüßen")
    assert written_in(german, "de")
    assert not written_in(german, "en")
    assert not written_in("Danke, wir prüfen das.", "de")  # short: the vote decides
    half = ("Thank you for your message, we have checked the double charge and refunded it. "
            "Wir haben die doppelte Abbuchung geprüft und den Betrag heute zurückgebucht.")
    assert not written_in(half, "en") and not written_in(half, "de")
