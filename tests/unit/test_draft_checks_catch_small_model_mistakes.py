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


@pytest.mark.parametrize("text", [
    "Kind regards,\n[Your Support Team]", "Sehr geehrte/r [Kundenname],", "bis zum [Datum]",
    "Bonjour [Prénom],", "Estimado/a [Nombre del cliente]:", "Hello <Name>,",
    "Hallo <Kundenname>,", "Dear {customer_name},", "Hi {{ first_name }},", "Dear %NAME%,",
    "Ihre Bestellung XXX", "am XX.XX.XXXX", "le JJ/MM/AAAA", "el __________",
    "Thanks,\nYour Name", "Viele Grüße\nMax Mustermann", "[...]", "Cordialement,\n[Votre nom]",
])
def test_a_placeholder_of_any_form_is_caught(text):
    assert dc.placeholder(text), text


@pytest.mark.parametrize("text", [
    "Please see [our help page](https://example.com/help).", "Write to <support@example.com>.",
    "Error 503: service unavailable", "Ihre Bestellung 55210 vom 3.11.",
    "Open Mi cuenta > Suscripción > Cancelar.",
])
def test_ordinary_text_is_no_placeholder(text):
    assert dc.placeholder(text) is None


@pytest.mark.parametrize("text", [
    "Please contact our customer service team for help.",
    "Bitte wenden Sie sich an unseren Kundenservice.",
    "Bitte kontaktieren Sie den Kundendienst.",
    "Veuillez contacter notre service client.",
    "Póngase en contacto con el servicio de atención al cliente.",
    "Contatti il nostro servizio clienti.",
])
def test_sending_the_customer_to_customer_service_is_caught(text):
    assert dc.referral(text), text


def test_a_referral_check_leaves_our_own_team_alone():
    assert dc.referral("Our support team is checking your order and will write again.") is None


@pytest.mark.parametrize("draft", [
    "Meine Bestellung ist nicht angekommen, ich möchte mein Geld zurück.",
    "I was charged twice. Please refund my payment.",
    "Ma commande n'est pas arrivée.", "Mi pedido no ha llegado.",
])
def test_a_draft_written_as_the_customer_is_caught(draft):
    assert dc.customer_voice(draft, "irrelevant"), draft


@pytest.mark.parametrize("draft", [
    # the real model's Spanish draft in `bench quality` (2026-12-04)
    "Usted recibió una cafetera en lugar del portátil que pedí.",
    "I ordered a laptop and received a coffee machine.",
    "Ich habe einen Laptop bestellt und eine Kaffeemaschine bekommen.",
    "J'ai commandé un ordinateur portable.",
])
def test_the_customers_purchase_told_in_the_first_person_is_caught(draft):
    assert dc.customer_voice(draft, "irrelevant"), draft


def test_our_own_first_person_actions_are_not_the_customers_voice():
    for draft in ("Ich habe Ihre Bestellung geprüft.", "I checked the order you placed.",
                  "He revisado su pedido.", "J'ai vérifié votre commande."):
        assert dc.customer_voice(draft, "irrelevant") is None, draft


def test_a_first_person_sentence_of_the_mail_repeated_as_ours_is_caught():
    """Seen with German drafts: the customer's request turned into the reply."""
    mail = "Ich habe die Rechnung zweimal bezahlt und bitte um Rückerstattung des Betrags."
    draft = "Vielen Dank. Ich habe die Rechnung zweimal bezahlt und bitte um Rückerstattung."
    assert dc.customer_voice(draft, mail)
    assert dc.customer_voice("Wir prüfen, ob die Rechnung zweimal bezahlt wurde.", mail) is None


@pytest.mark.parametrize(("mail", "draft"), [
    # the real model's German draft (docs/local-llm.md): it asks the customer to refund
    ("Hallo,\nauch bei mir wurde die Rechnung 5123 zweimal abgebucht. Bitte erstatten Sie den "
     "doppelten Betrag.", "Guten Tag,\nvielen Dank für Ihre Nachricht. Bitte erstatten Sie den "
     "doppelten Betrag.\nMit freundlichen Grüßen"),
    ("Hello, please send the missing charger with the next parcel.",
     "Thank you for your mail. Please send the missing charger with the next parcel."),
    ("Bonjour, merci de corriger l'adresse de livraison sur la facture.",
     "Bonjour, merci de corriger l'adresse de livraison sur la facture."),
])
def test_the_customers_request_repeated_as_ours_is_caught(mail, draft):
    assert dc.customer_voice(draft, mail), draft


def test_a_request_of_another_customer_from_the_reference_material_repeated_is_caught():
    """Seen with the real model: asked about a double charge, it wrote the reference case's
    customer sentence "Bitte erstatten Sie den doppelten Betrag." as the reply."""
    mail = "Guten Tag, auch meine Rechnung 8133 wurde zweimal abgebucht. Wann bekomme ich das Geld zurück?"
    reference = ("Guten Tag, die Rechnung 8120 wurde zweimal abgebucht. Bitte erstatten Sie den "
                 "doppelten Betrag.")
    draft = "die Rechnung 8133 wurde zweimal abgebucht. Bitte erstatten Sie den doppelten Betrag."
    assert dc.customer_voice(draft, mail) is None  # not in this mail
    assert dc.customer_voice(draft, mail, others=reference)
    assert ("customer_voice", dc.customer_voice(draft, mail, others=reference)) in dc.problems(
        draft, mail, "de", others=reference)


def test_a_reply_that_grants_the_request_in_its_own_words_passes():
    mail = "Hallo,\nbitte erstatten Sie den doppelten Betrag der Rechnung 5123."
    for draft in ("Wir erstatten Ihnen den doppelten Betrag, sobald wir die Buchung geprüft "
                  "haben.", "Bitte senden Sie uns einen Kontoauszug, damit wir die Abbuchung "
                  "prüfen können."):
        assert dc.customer_voice(draft, mail) is None, draft


def test_the_familiar_form_to_a_formal_writer_is_caught():
    assert dc.register("Danke für deine Nachricht, wir helfen dir.", MAIL, "de")
    assert dc.register("Merci pour ton message.", "Pourriez-vous vérifier ?", "fr")
    assert dc.register("Puedes cancelar tu suscripción.", "¿Podría usted ayudarme?", "es")
    assert dc.register(GOOD, MAIL, "de") is None


@pytest.mark.parametrize("text", [
    "Es tut mir leid, aber ich kann Ihre Bestellung nicht einsehen.",
    "Je suis désolé, mais je ne peux pas accéder à votre compte.",
    "Lo siento, pero no puedo ver su pedido.",
    "I don't have any information about your order.",
])
def test_a_polite_refusal_in_each_language_is_caught(text):
    assert dc.refusal(text), text
