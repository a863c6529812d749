"""Rules: mails that take no reply whatever the history or the model say, and the mail's
language.

- ``no_reply_rule``: the loop guard (an automatic mail), an automatic reply by its subject, or
  a thank-you that only ends the conversation (``closing_thanks``): needs_reply is false by
  rule, before the history or the LLM are asked (without the loop guard it still waits for
  staff to confirm: never terminal).
- ``asks_question``: a mail whose own words ask the team something needs a reply, whatever
  the history or the model say - unless it is spam or a notification.
- ``NO_QUESTION_CATEGORIES``: what the history or the model file as spam or a notification
  needs no reply even when their reply flag says it does (the real 1.5B model filed an SEO
  offer and a lottery mail as spam needing a reply); a suggestion staff confirm, as any.
- ``no_reply_outcome``: the one place that decides whether a classified mail gets no
  reply: an LLM's ``needs_reply: false`` alone is only a suggestion; a list header
  (``corroborating_header``) or the loop guard make it terminal; a sender that takes no
  replies never gets a draft.
- ``language_decision``: the identifier decides the language; the LLM's answer only breaks
  a tie when the identifier is unsure.

Pure functions: no I/O (the caller reads the mail's head for ``corroborating_header``).
"""

from __future__ import annotations

import email.parser
import email.policy
import re

from ..core.states import MailStatus
from ..indexing.chunking import clean_body
from ..mail.language import identify
from .values import Category, Classification, FieldSource, Language

# a thank-you's own words, and the words that may stand beside them in a note that only
# closes a conversation ("Thanks, that worked!", "Danke, hat geklappt!", "¡Gracias, ya
# funciona!"); a negation, a question or any other word makes it a message to answer
_THANKS = frozenset(
    "thanks thank thx cheers danke dankeschön dank merci gracias grazie bedankt dankjewel "
    "obrigado obrigada".split())
_BESIDE_THANKS = frozenset(
    # en
    "you so much very a lot again for the your help that it this worked works working "
    "now all is good great perfect fine ok okay sorted solved fixed resolved everything "
    "awesome brilliant many best regards kind "
    # de
    "schön sehr vielen für ihre die hilfe das es hat geklappt klappt funktioniert jetzt "
    "wieder alles gut super perfekt prima toll gelöst erledigt gruß grüße gruss gruesse "
    "viele beste liebe freundliche lg vg mfg "
    # fr
    "beaucoup pour votre aide ça ca marche fonctionne c est bon parfait tout maintenant "
    "génial résolu cordialement bonne journée "
    # es
    "muchas mil por su la ayuda ya funciona todo bien perfecto ahora genial resuelto "
    "saludos un saludo "
    # it
    "mille molte tante per l aiuto funziona ora tutto bene perfetto saluti "
    # nl
    "hartelijk voor de hulp het werkt weer goed groeten".split())
_THANKS_WORD = re.compile(r"[^\W\d_]+")
_NAME_LINE = re.compile(r"^[A-ZÄÖÜÀ-Ý][\w.'-]*( [A-ZÄÖÜÀ-Ý][\w.'-]*){0,2}$")
THANKS_MAX_WORDS = 12


def closing_thanks(body: str | None) -> bool:
    """Whether a mail's own text (quotes and signature left out, ``clean_body``) is only a
    thank-you that ends the conversation: at most ``THANKS_MAX_WORDS`` words, a word of thanks
    among them, every other word one that stands beside thanks (confirmation, greeting), a
    name line at the end allowed, and no question mark."""
    lines = [ln.strip() for ln in clean_body(body).splitlines() if ln.strip()]
    while len(lines) > 1 and _NAME_LINE.match(lines[-1]):  # a signature's name
        lines.pop()
    text = " ".join(lines).lower()
    if not text or "?" in text or "¿" in text:
        return False
    words = _THANKS_WORD.findall(text)
    return (0 < len(words) <= THANKS_MAX_WORDS and any(w in _THANKS for w in words)
            and all(w in _THANKS or w in _BESIDE_THANKS for w in words))


_LINK = re.compile(r"\S+://\S+|www\.\S+")
# what no one waits for an answer to, even when it asks
NO_QUESTION_CATEGORIES = frozenset({Category.SPAM, Category.NOTIFICATION})


def asks_question(body: str | None, category: Category) -> bool:
    """Whether a mail asks the team a question: a "?" (or "¿") in its own text (quotes,
    signature and links left out), and it is no spam or notification."""
    if category in NO_QUESTION_CATEGORIES:
        return False
    text = _LINK.sub(" ", clean_body(body))
    return "?" in text or "¿" in text


# the subject an out-of-office or automatic reply is sent with when its headers do not say
# so (Outlook, Gmail, Thunderbird in de/en/fr/es/it/nl/pt)
AUTO_REPLY_SUBJECT = re.compile(
    r"^\s*(?:automatic reply|auto-?reply|autoreply|out of (?:the )?office|abwesenheitsnotiz|"
    r"automatische antwort|abwesend|réponse automatique|absence du bureau|respuesta automática|"
    r"fuera de la oficina|risposta automatica|automatisch antwoord|resposta automática)\b",
    re.IGNORECASE)


def no_reply_rule(auto_reason: str | None, own_text: str | None,
                  subject: str | None = None) -> str | None:
    """The rule that says a mail takes no reply, whatever the history or the model say (None:
    no rule does): the loop guard (its reason is the mail's own), an automatic reply by its
    subject ("Automatische Antwort:", "Réponse automatique :"), or a thank-you that ends the
    conversation (``own_text``: the mail's body; None for a mail with attachments, which may
    be more than thanks)."""
    if auto_reason:
        return "loop guard"
    if subject and AUTO_REPLY_SUBJECT.match(subject):
        return "an automatic reply (its subject says so)"
    if own_text is not None and closing_thanks(own_text):
        return "a thank-you that ends the conversation"
    return None


def corroborating_header(raw: bytes | str | None) -> str | None:
    """A header saying the mail is list or bulk mail (which the loop guard does not
    cover): List-Id, List-Unsubscribe, List-Post."""
    if not raw:
        return None
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else bytes(raw)
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0][:65536]
    msg = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(head)
    for name in ("List-Id", "List-Unsubscribe", "List-Post"):
        if msg.get(name):
            return f"list:{name.lower()}"
    return None


def no_reply_outcome(value: Classification, auto_reason: str | None,
                     raw: bytes | str | None, no_reply_sender: str | None = None
                     ) -> tuple[MailStatus, str | None, bool]:
    """(status, reason, stop) after a classification. The one place that decides whether
    a mail gets no reply: an LLM's ``needs_reply: false`` alone is only a suggestion; a
    sender that takes no replies (``no_reply_sender``: the stored reply rule) never gets a
    draft."""
    if auto_reason:
        return MailStatus.NO_REPLY, f"no reply: loop guard ({auto_reason})", True
    if no_reply_sender and (value.needs_reply or not corroborating_header(raw)):
        return (MailStatus.NO_REPLY_SUGGESTED,
                f"classified as {value.category.value}; no draft: {no_reply_sender}. Staff "
                "confirm no reply or answer by hand (email-rag mails no-reply)", True)
    if value.needs_reply:
        return MailStatus.CLASSIFIED, None, False
    header = corroborating_header(raw)
    if header:
        return (MailStatus.NO_REPLY, f"classified as {value.category.value}, no reply needed; "
                f"the headers agree ({header})", True)
    return (MailStatus.NO_REPLY_SUGGESTED,
            f"classified as {value.category.value}: the model suggests no reply; no header "
            "confirms it, so staff decide (email-rag mails no-reply)", True)


def language_decision(text: str, llm_language: Language | None
                      ) -> tuple[Language, FieldSource]:
    """The mail's language and where it came from: the identifier when it is sure; the
    LLM's answer only as the tie-breaker when the identifier is unsure (``llm_language``
    None: no usable LLM answer, the identifier's guess stands)."""
    guess = identify(text)
    if guess.sure or llm_language is None:
        return Language(guess.code), FieldSource(source="identifier",
                                                    confidence=round(guess.confidence, 3))
    return llm_language, FieldSource(source="llm", confidence=None,
                                     identifier=[guess.code, round(guess.confidence, 3)])
