"""The honest reply when no source answers a mail: written by code, never by the model.

It thanks, says the team looks at the question and when it answers (the mailbox's
first-response target when it has one, in business hours; else "as soon as possible":
never a date, an amount or a refund), and asks for the order number when the mail names
none. The desk marks such a draft "no source: written without the team's knowledge".
"""

from __future__ import annotations

from .claims import references

# language -> (thanks, looks at it [+ within N hours | + soon], ask for the order number)
_TEXT = {
    "de": ("Vielen Dank für Ihre Nachricht.",
           "Unser Team prüft Ihr Anliegen und meldet sich {when} bei Ihnen.",
           "innerhalb von {hours} Arbeitsstunden", "so bald wie möglich",
           "Falls es um eine Bestellung geht, nennen Sie uns bitte die Bestellnummer."),
    "en": ("Thank you for your message.",
           "Our team is looking into your question and will get back to you {when}.",
           "within {hours} business hours", "as soon as possible",
           "If it is about an order, please send us the order number."),
    "fr": ("Merci pour votre message.",
           "Notre équipe examine votre demande et vous répondra {when}.",
           "dans un délai de {hours} heures ouvrées", "dès que possible",
           "S'il s'agit d'une commande, merci de nous indiquer le numéro de commande."),
    "es": ("Gracias por su mensaje.",
           "Nuestro equipo está revisando su consulta y le responderá {when}.",
           "en un plazo de {hours} horas laborables", "lo antes posible",
           "Si se trata de un pedido, indíquenos por favor el número de pedido."),
}
THANKS = {lang: t[0] for lang, t in _TEXT.items()}
# a draft from sources that barely cleared their bar: they may not be about this question
FOLLOW_UP = {
    "de": "Falls das Ihre Frage nicht beantwortet, melden wir uns {when} bei Ihnen.",
    "en": "If this does not answer your question, we will get back to you {when}.",
    "fr": "Si cela ne répond pas à votre question, nous reviendrons vers vous {when}.",
    "es": "Si esto no responde a su pregunta, le responderemos {when}.",
}


def follow_up(language: str | None, hours: float | None) -> str:
    """The line a draft from barely relevant sources ends with (no promise, no date)."""
    lang = language if language in FOLLOW_UP else "en"
    _, _, within, soon, _ = _TEXT[lang]
    return FOLLOW_UP[lang].format(when=within.format(hours=f"{hours:g}") if hours else soon)


def reply_body(language: str | None, mail_text: str, hours: float | None) -> str:
    """The body of the no-source reply (greeting and sign-off come from the frame)."""
    thanks, looks, within, soon, ask = _TEXT.get(language or "", _TEXT["en"])
    when = within.format(hours=f"{hours:g}") if hours else soon
    lines = [thanks, looks.format(when=when)]
    if not references(mail_text):
        lines.append(ask)
    return "\n".join(lines)
