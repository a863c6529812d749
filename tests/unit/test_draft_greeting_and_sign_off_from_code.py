"""Greeting and sign-off come from code and the mailbox's settings, in the mail's language
and register; the model's own greeting, sign-off and placeholders never reach the draft."""

from __future__ import annotations

import pytest

from email_rag.llm import draft_checks
from email_rag.llm.reply_frame import FORMAL, INFORMAL, ReplyFrame, register, strip_frame


@pytest.mark.parametrize(
    "lang,text,expected",
    [
        ("de", "Sehr geehrte Damen und Herren, können Sie mir bitte helfen?", FORMAL),
        ("de", "Hallo, kannst du mir sagen, wie das geht? Danke dir!", INFORMAL),
        ("fr", "Bonjour, pourriez-vous vérifier ma facture ?", FORMAL),
        ("fr", "Salut, tu peux m'aider avec ta super appli ?", INFORMAL),
        ("es", "Buenos días, ¿podría usted indicarme cómo cancelar?", FORMAL),
        ("es", "Hola, ¿puedes decirme cuándo llega mi pedido?", INFORMAL),
        ("it", "Buongiorno, La prego di controllare il mio ordine.", FORMAL),
        ("nl", "Geachte heer, kunt u mij helpen?", FORMAL),
        ("en", "Hi, can you help me?", None),
        ("de", "Paket fehlt.", None),
    ],
)
def test_the_register_is_read_from_how_the_customer_addresses_us(lang, text, expected):
    assert register(text, lang) == expected


@pytest.mark.parametrize(
    "lang,body,greeting,closing",
    [
        ("de", "Können Sie mir helfen?", "Guten Tag Maria Schmidt,", "Mit freundlichen Grüßen"),
        ("de", "Kannst du mir helfen?", "Hallo Maria,", "Viele Grüße"),
        ("en", "Can you help?", "Dear Maria Schmidt,", "Kind regards"),
        ("fr", "Pouvez-vous m'aider ?", "Bonjour Maria Schmidt,", "Cordialement"),
        ("fr", "Tu peux m'aider ?", "Bonjour Maria,", "À bientôt"),
        ("es", "¿Podría usted ayudarme?", "Estimado/a Maria Schmidt:", "Atentamente"),
        ("es", "¿Puedes ayudarme?", "Hola, Maria:", "Un saludo"),
        ("it", "Può aiutarmi? La ringrazio.", "Gentile Maria Schmidt,", "Cordiali saluti"),
    ],
)
def test_greeting_and_sign_off_are_in_the_mails_language_and_register(
    lang, body, greeting, closing
):
    frame = ReplyFrame.for_mail(body, "Maria Schmidt <m@example.org>", lang)
    text = frame.compose("Wir prüfen das.")
    assert text.startswith(greeting + "\n\n")
    assert closing in text
    assert draft_checks.placeholder(text) is None


def test_the_mailboxs_signature_and_team_name_sign_the_draft():
    with_signature = ReplyFrame.for_mail(
        "Können Sie helfen?", "a@example.org", "de", signature="Anna Berg\nAcme GmbH, Kundenservice"
    )
    assert with_signature.compose("Wir prüfen das.").endswith(
        "Mit freundlichen Grüßen\nAnna Berg\nAcme GmbH, Kundenservice"
    )
    team = ReplyFrame.for_mail("Can you help?", "a@example.org", "en", team_name="Acme Support")
    assert team.compose("We are on it.").endswith("Kind regards\nAcme Support")
    default = ReplyFrame.for_mail("¿Podría ayudarme?", "a@example.org", "es")
    assert default.compose("Lo revisamos.").endswith("Atentamente\nEl equipo de soporte")


def test_a_sender_without_a_display_name_gets_a_greeting_without_a_name():
    assert ReplyFrame.for_mail("Hello", "john@example.com", "en").greeting == "Hello,"
    assert (
        ReplyFrame.for_mail("Hallo", "Schmidt, Maria <m@x.de>", "de").greeting
        == "Guten Tag Maria Schmidt,"
    )


@pytest.mark.parametrize(
    "answer",
    [
        "Dear [Customer Name],\n\nWe are checking your order.\n\nBest regards,\n[Your Name]",
        "Hallo Frau Schmidt,\n\nWe are checking your order.\n\nMit freundlichen Grüßen\n"
        "[Your Support Team]\n[Firma]",
        "We are checking your order.\n\nCordialement,\nL'équipe [Nom de l'entreprise]",
        "We are checking your order.\n\nSaludos cordiales,\n<Nombre>",
        "We are checking your order.\n\nKind regards\nYour support team",
    ],
)
def test_the_models_greeting_and_sign_off_are_dropped_with_their_placeholders(answer):
    assert strip_frame(answer) == "We are checking your order."


def test_a_body_without_greeting_or_sign_off_is_kept_whole():
    body = "We are checking your order.\nThanks to the carrier's data we will know more soon."
    assert strip_frame(body) == body


def test_every_language_and_register_has_an_opening_in_our_voice_that_composes_once():
    from email_rag.llm.reply_frame import _WORDS, OPENINGS

    assert set(OPENINGS) == set(_WORDS)
    for lang, registers in OPENINGS.items():
        assert set(registers) == {FORMAL, INFORMAL}, lang
        for form, opening in registers.items():
            frame = ReplyFrame(lang, form)
            assert frame.opening == opening
            body = f"{opening} prüft das und meldet sich bei Ihnen."
            assert strip_frame(body) == body  # never taken for a greeting or a sign-off
            assert frame.compose(body).count(opening) == 1
    assert ReplyFrame("de", INFORMAL).opening.startswith("Danke für deine")
