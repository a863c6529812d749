"""A mail that is only a thank-you (the conversation's end) takes no reply: decided by a rule,
in microseconds, before the history or the model are asked (both said "needs a reply" to
"Thanks, that worked!" in `bench quality`'s held-out mails)."""

from __future__ import annotations

import pytest

from email_rag.classification.rules import closing_thanks

ENDS = [
    "Thanks, that worked!",
    "Thank you so much, all sorted now.",
    "Danke!",
    "Danke, hat geklappt!\n\nViele Grüße\nAnna Berg",
    "Vielen Dank, jetzt funktioniert alles wieder.",
    "Merci !",
    "Merci beaucoup, ça marche maintenant.",
    "¡Gracias, ya funciona!",
    "Muchas gracias, todo bien.",
    "Grazie mille, ora funziona!",
    "Bedankt, het werkt weer.",
    "Thanks!\n\n> On 3 May, Support wrote:\n> Please restart the router and try again.",
    "Thanks, that worked!\n\nJohn",
]
NOT_ENDS = [
    "Thanks, but it still does not work.",
    "Danke, es funktioniert leider nicht.",
    "Thanks! When will the refund arrive?",
    "Merci, mais je n'ai toujours rien reçu.",
    "Gracias. ¿Cuándo llega el pedido?",
    "Thank you for the quick reply. Could you also change my address to Hauptstr. 5?",
    "Vielen Dank für Ihre Hilfe. Ich möchte noch eine zweite Rechnung reklamieren, die "
    "Nummer ist 2026-118.",
    "Hello, my printer does not print.",
    "That worked.",  # no thanks: not the rule's to say
    "",
    "Thanks " * 30,  # not a short note
]


@pytest.mark.parametrize("body", ENDS)
def test_a_thank_you_alone_ends_the_conversation(body):
    assert closing_thanks(body)


@pytest.mark.parametrize("body", NOT_ENDS)
def test_thanks_with_a_question_a_problem_or_more_is_not_an_end(body):
    assert not closing_thanks(body)


@pytest.mark.parametrize("subject", [
    "Automatische Antwort: Ihre Anfrage", "Automatic reply: Order 4711", "Out of Office: back Monday",
    "Réponse automatique : absente", "Respuesta automática: fuera de la oficina",
    "Abwesenheitsnotiz: Urlaub"])
def test_an_automatic_reply_by_its_subject_takes_no_reply(subject):
    from email_rag.classification.rules import no_reply_rule

    assert no_reply_rule(None, "Ich bin bis Montag nicht im Büro.", subject) == \
        "an automatic reply (its subject says so)"


@pytest.mark.parametrize("subject", ["Antwort auf meine Frage", "Re: automatic coffee machine",
                                     "Reply needed: order 4711"])
def test_an_ordinary_subject_is_no_automatic_reply(subject):
    from email_rag.classification.rules import no_reply_rule

    assert no_reply_rule(None, "Wann kommt meine Bestellung?", subject) is None
