"""Checks of a reply draft before staff see it as a draft.

Measured with a 1.5B model on 2 cores: about 2 of 12 drafts were sensible; the
others echoed the customer's mail, signed with "[Your Name]", refused, or were
cut off at max_tokens. A draft that fails a check is regenerated once (the
policy's adjusted prompt names the problem); if it fails again it is stored
FLAGGED with the reason, shown as such in the CLI and the web UI, and cannot be
approved unchanged.

Each check returns a problem in words or None; ``problems(...)`` runs them all.

| check | fails when |
|---|---|
| cut_off | the endpoint said ``finish_reason: length`` (checked by the policy), or the text stops mid-sentence (no closing punctuation or sign-off) |
| placeholder | ``[Name]``, ``[Your Name]``, ``<date>``, ``{customer}``, ``XXX``, ``...`` placeholders |
| refusal | "I'm sorry, but I can't", "As an AI", "Ich kann Ihnen dabei nicht helfen" ... |
| echo | 40 % or more of the draft's word 3-grams occur in the customer's mail (a copy, not a reply) |
| language | the draft's language (``mail.language.identify``, when sure) differs from the mail's classified language |
| signed_as_customer | the draft ends with the customer's own name (the model wrote as the customer) |
"""

from __future__ import annotations

import re
from email.utils import parseaddr

from ..mail.language import OTHER, identify

PLACEHOLDER = re.compile(
    r"\[(?:[^\]\n]{0,40}?(?:name|nom|nombre|datum|date|fecha|company|firma|empresa|"
    r"signature|unterschrift|firma|phone|telefon|number|nummer|numéro|número|address|adresse|"
    r"dirección|email|e-mail|link|product|produkt|order|bestell|insert|einfügen)[^\]\n]{0,40})\]"
    r"|<(?:name|date|datum|customer|kunde|your[ _]name)>|\{\{?\s*\w+\s*\}?\}|\bX{3,}\b",
    re.IGNORECASE)
REFUSAL = re.compile(
    r"\b(?:as an ai|as a language model|as (?:a|your) (?:support )?assistant|"
    r"i (?:do not|don't) have access to|en tant qu'assistant|je n'ai pas accès|"
    r"como asistente|no tengo acceso|als (?:support-?)?assistent|ich habe keinen zugriff|i(?:'m| am) (?:sorry|afraid),? (?:but )?i (?:can(?:not|'t)"
    r"|am unable)|i can(?:not|'t) (?:help|assist) with|i am not able to (?:help|assist)|"
    r"als (?:ki|sprachmodell)|ich kann (?:ihnen )?(?:dabei |hierbei )?nicht helfen|"
    r"en tant qu'(?:ia|intelligence artificielle)|je ne peux pas vous aider|"
    r"como (?:ia|modelo de lenguaje)|no puedo ayudar)", re.IGNORECASE)
_WORDS = re.compile(r"\w+", re.UNICODE)
ECHO_SHARE = 0.4  # share of the draft's 3-grams found in the mail from which it is an echo
ENDS_CLEANLY = re.compile(r"[.!?…)\]\"'»“”:]\s*$|^\s*\S.{0,60}$")


def cut_off(draft: str) -> str | None:
    last = (draft or "").rstrip().splitlines()[-1] if (draft or "").strip() else ""
    if last and not ENDS_CLEANLY.search(last) and len(draft) > 200:
        return f"the draft stops mid-sentence (\"...{last[-40:]}\"): it looks cut off"
    return None


def placeholder(draft: str) -> str | None:
    m = PLACEHOLDER.search(draft or "")
    return f"the draft contains the placeholder {m.group(0)!r}" if m else None


def refusal(draft: str) -> str | None:
    m = REFUSAL.search(draft or "")
    return f"the draft is a refusal or talks about itself ({m.group(0)!r})" if m else None


def _grams(text: str, n: int = 3) -> list[tuple[str, ...]]:
    words = _WORDS.findall((text or "").lower())
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def echo(draft: str, mail_body: str) -> str | None:
    grams = _grams(draft)
    if len(grams) < 4:
        return None
    mail = set(_grams(mail_body))
    share = sum(1 for g in grams if g in mail) / len(grams)
    if share >= ECHO_SHARE:
        return (f"the draft repeats the customer's mail ({share:.0%} of its phrases are "
                "copied from it) instead of answering it")
    return None


def language(draft: str, expected: str | None) -> str | None:
    if not expected or expected == OTHER:
        return None
    found = identify(draft)
    if not found.sure or found.code in (OTHER, expected):
        return None
    return f"the draft is written in '{found.code}', the mail in '{expected}'"


def signed_as_customer(draft: str, sender: str | None) -> str | None:
    """Seen in the demo: 'Ich habe die Rechnung zweimal abgebucht ... Maria Schmidt'."""
    name = " ".join(parseaddr(sender or "")[0].split()).lower()
    lines = [ln.strip().lower() for ln in (draft or "").splitlines() if ln.strip()]
    if len(name) >= 3 and lines and name in lines[-1]:
        return f"the draft is signed with the customer's own name ({lines[-1][:60]!r})"
    return None


def problems(draft: str, mail_body: str, expected_language: str | None,
             sender: str | None = None) -> list[tuple[str, str]]:
    """(kind, problem in words) of every check the draft fails."""
    found = [("cut_off", cut_off(draft)), ("placeholder", placeholder(draft)),
             ("refusal", refusal(draft)), ("echo", echo(draft, mail_body)),
             ("language", language(draft, expected_language)),
             ("signed_as_customer", signed_as_customer(draft, sender))]
    return [(kind, text) for kind, text in found if text]
