"""The claim check: a fact in a draft that neither this mail, this customer's history nor the
team's replies support is flagged; a supported or general statement is not."""

from __future__ import annotations

import pytest

from email_rag.llm import claims, draft_checks

MAIL = {
    "de": "Guten Tag, meine Bestellung 55210 vom 3.11. ist nicht angekommen. Ich habe "
    "49,90 € bezahlt. Bitte erstatten Sie mir den Betrag. Maria Schmidt",
    "en": "Hello, my order 55210 from 3 November has not arrived. I paid $49.90. Please "
    "refund me. John Miller",
    "fr": "Bonjour, ma commande 55210 du 3 novembre n'est pas arrivée. J'ai payé 49,90 €. "
    "Merci de me rembourser. Claire Martin",
    "es": "Hola, mi pedido 55210 del 3 de noviembre no ha llegado. Pagué 49,90 €. Por favor, "
    "reembólsenme el importe. Lucía García",
}

UNSUPPORTED = [
    # (language, draft sentence, kind flagged)
    ("de", "Wir haben Ihnen den Betrag bereits erstattet.", "done"),
    ("de", "Ihre Rechnung wurde korrigiert.", "done"),
    ("de", "Die Gutschrift über 12,50 € ist unterwegs.", "amount"),
    ("de", "Ihr Paket kommt am 14. November.", "date"),
    ("de", "Sie erhalten die Ware innerhalb von 3 Werktagen.", "deadline"),
    ("de", "Ihre Rechnung RE-2024-0042 ist geprüft.", "reference"),
    ("de", "Wir werden Ihnen den Betrag erstatten.", "promised"),
    ("de", "Wir melden uns bis Freitag bei Ihnen.", "date"),
    ("en", "We have refunded the amount to your card.", "done"),
    ("en", "Your order was shipped yesterday.", "done"),
    ("en", "You will receive a credit of $15.", "amount"),
    ("en", "The parcel will arrive on November 14.", "date"),
    ("en", "Please allow 5 business days.", "deadline"),
    ("en", "Your tracking number is 1Z999AA10123456784.", "reference"),
    ("en", "We will refund you in full.", "promised"),
    ("en", "Your invoice has been corrected.", "done"),
    ("fr", "Nous avons remboursé le montant sur votre carte.", "done"),
    ("fr", "Votre commande a été expédiée hier.", "done"),
    ("fr", "Vous recevrez un avoir de 15 euros.", "amount"),
    ("fr", "Le colis arrivera le 14 novembre.", "date"),
    ("fr", "Le remboursement sera effectué sous 48 heures.", "deadline"),
    ("fr", "Votre numéro de dossier est FR-88231.", "reference"),
    ("fr", "Votre facture a été corrigée.", "done"),
    ("es", "Hemos reembolsado el importe en su tarjeta.", "done"),
    ("es", "Su pedido ha sido cancelado.", "done"),
    ("es", "Recibirá un abono de 15 €.", "amount"),
    ("es", "El paquete llegará el 14 de noviembre.", "date"),
    ("es", "Recibirá el reembolso en 5 días hábiles.", "deadline"),
    ("es", "Su número de incidencia es ES-44120.", "reference"),
    ("es", "Le reembolsaremos el importe completo.", "promised"),
    ("es", "Nuestro equipo se encargará de devolverle el segundo cargo.", "promised"),
    ("es", "Le devolveremos el importe de la factura.", "promised"),
]


@pytest.mark.parametrize("lang,draft,kind", UNSUPPORTED)
def test_an_unsupported_fact_is_flagged_with_its_kind(lang, draft, kind):
    found = claims.unsupported(draft, MAIL[lang])
    assert kind in {c.kind for c in found}, found


SUPPORTED = [
    # (language, draft sentence): every fact is in the mail
    ("de", "Wir prüfen Ihre Bestellung 55210 vom 3.11. und den Betrag von 49,90 €."),
    ("de", "Vielen Dank für Ihre Nachricht, wir prüfen den Vorgang und melden uns."),
    ("de", "Sobald die Ware zurück ist, wird der Betrag erstattet."),
    ("de", "Wurde die Zahlung schon erstattet? Wir sehen nach."),
    ("en", "We are checking your order 55210 from 3 November and the $49.90 you paid."),
    ("en", "Thank you for your message; we are looking into it and will get back to you."),
    ("en", "Once the parcel is back with us, we refund the amount."),
    ("fr", "Nous vérifions votre commande 55210 du 3 novembre et le montant de 49,90 €."),
    ("fr", "Merci pour votre message, nous examinons votre demande."),
    ("es", "Revisamos su pedido 55210 del 3 de noviembre y el importe de 49,90 €."),
    ("es", "Gracias por su mensaje, estamos revisando su caso."),
]


@pytest.mark.parametrize("lang,draft", SUPPORTED)
def test_a_supported_or_general_statement_is_not_a_finding(lang, draft):
    assert claims.unsupported(draft, MAIL[lang]) == []


def test_the_teams_replies_support_policy_facts_but_not_this_customers_refund():
    """A fee, a period and a promise from an approved reply are team knowledge; that a refund
    was done for another customer says nothing about this one."""
    shared = (
        "Our reply: returns are refunded within 14 days; the return label costs "
        "4,90 €. We have refunded the amount the same day."
    )
    assert (
        claims.unsupported(
            "The return label costs 4,90 € and we refund within 14 days.", MAIL["en"], shared
        )
        == []
    )
    assert (
        claims.unsupported("We will refund you once the parcel is back.", MAIL["en"], shared) == []
    )
    done = claims.unsupported("We have refunded the amount the same day.", MAIL["en"], shared)
    assert [c.kind for c in done] == ["done"]


def test_another_customers_order_number_is_not_evidence():
    shared = "Customer: order 77881 is late. Our reply: order 77881 was found."
    found = claims.unsupported("Your order 77881 is on its way.", MAIL["en"], shared)
    assert [c.kind for c in found] == ["reference"]


def test_our_earlier_reply_in_the_thread_supports_a_done_refund():
    own = MAIL["de"] + "\nOur reply: Wir haben Ihnen am 5.11. 49,90 € erstattet."
    assert (
        claims.unsupported("Wie am 5.11. mitgeteilt, haben wir Ihnen 49,90 € erstattet.", own) == []
    )


def test_the_customer_saying_it_was_done_supports_it():
    own = "You refunded me 20 € but I was charged 40 €."
    assert claims.unsupported("We refunded 20 € on your card.", own) == []


@pytest.mark.parametrize(
    "text,key",
    [
        ("49,90 €", "49.90"),
        ("€ 1.234,50", "1234.50"),
        ("$1,234.50", "1234.50"),
        ("20 EUR", "20.00"),
        ("15 euros", "15.00"),
        ("CHF 9.9", "9.90"),
    ],
)
def test_amounts_compare_by_value_whatever_the_notation(text, key):
    assert claims.amounts(text)[0][1] == key


def test_dates_compare_by_day_and_month_across_languages():
    keys = {
        k
        for _, k in claims.dates(
            "am 14. November, le 14 novembre, el 14 de noviembre, "
            "November 14th, 14.11.2026, 2026-11-14"
        )
    }
    assert keys >= {"14/11"}
    assert claims.unsupported("Le colis arrivera le 14 novembre.", "Paket kommt am 14.11.") == []


def test_the_claim_check_is_one_of_the_draft_checks_and_names_the_fact():
    found = dict(draft_checks.problems("Wir haben Ihnen 12,50 € erstattet.", MAIL["de"], "de"))
    assert "claim" in found and "12,50 €" in found["claim"]


@pytest.mark.parametrize(
    "lang,draft",
    [
        ("de", "Ihre Bestellung wird morgen zugestellt."),
        ("en", "Your parcel arrives tomorrow."),
        ("fr", "Votre colis arrivera demain."),
        ("es", "Tu pedido llegará mañana por la tarde."),
        ("en", "The refund reaches your card next week."),
    ],
)
def test_a_relative_day_nothing_supports_is_a_date_claim(lang, draft):
    assert [c.kind for c in claims.unsupported(draft, MAIL[lang])] == ["date"]


@pytest.mark.parametrize(
    "draft",
    [
        "Wir melden uns morgen mit dem Stand bei Ihnen.",
        "We will get back to you tomorrow.",
        "Nous reviendrons vers vous demain.",
        "Te escribimos hoy mismo.",
    ],
)
def test_the_promise_to_write_again_is_ours_to_give(draft):
    assert claims.unsupported(draft, "Where is my parcel?") == []


def test_a_rule_of_the_team_nothing_states_is_flagged():
    found = claims.unsupported("As per our policy, double charges cannot be refunded.", "")
    assert [c.kind for c in found] == ["policy"]
    shared = "Our reply: our policy is to refund double charges within 5 business days."
    assert claims.unsupported("Our policy is to refund double charges.", "", shared) == []


def test_a_spanish_se_is_no_condition():
    found = claims.unsupported("Su suscripción ha sido cancelada y no se le cobrará más.", "")
    assert [c.kind for c in found] == ["done"]


@pytest.mark.parametrize(
    "draft",
    [
        "Please update the app to version 4.2.1 and try again.",
        "The file may be up to 1.5 GB.",
        "You can reset your password with the link we sent you.",
        "Le enviaremos un enlace para restablecer la contraseña.",
        "Wir prüfen, ob wir den Betrag erstatten werden.",
        "Puede devolver el producto en un plazo de treinta días.",
    ],
)
def test_ordinary_support_sentences_are_no_claims(draft):
    assert claims.unsupported(draft, "I cannot log in since the update.") == []


def test_a_password_reset_said_done_is_a_claim():
    found = claims.unsupported("We have reset your password.", "I cannot log in.")
    assert [c.kind for c in found] == ["done"]


@pytest.mark.parametrize("draft", [
    # the real model's German draft in `bench quality` (2026-12-04): "I will refund"
    "Ich werde den doppelten Betrag erstatten und die Rechnung korrigieren.",
    "Ich werde Ihre Bestellung stornieren.",
])
def test_a_promise_in_the_first_person_singular_is_a_claim(draft):
    mail = ("Guten Tag, die Rechnung 2026-113 wurde zweimal abgebucht. Bitte erstatten Sie den "
            "doppelten Betrag und stornieren Sie die Bestellung.")
    found = claims.unsupported(draft, mail)
    assert found and {c.kind for c in found} == {"promised"}, (draft, found)
