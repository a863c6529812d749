"""A past reply as a source of policy, not of actions.

What an earlier reply says was done for that customer ("we have cancelled your order",
"your parcel arrived on Tuesday", "the refund of 12,90 EUR is on its way") is true of that
case only. ``policy(reply, language)`` keeps the sentences that hold for every customer
(periods, fees, steps, addresses, how things work) and drops:

| sentence | why |
|---|---|
| greeting, thanks for the message, sign-off and what follows | the new draft has its own frame |
| an action said done, or promised without a period (``claims.actions``) | an event of that case ("we will refund you"); a promise with its period ("we book it back within 5 working days") is the team's rule and stays |
| a reference (order, invoice, ticket number: ``claims.references``; not the team's phone, e-mail address or URL) | that customer's number |
| a date, a weekday, a relative day | when something happened in that case |
| "we have ...", "wir haben ...", "nous avons ...", "hemos ..." , "Ihre Bestellung ... wurde" | a report of what was done (not in a condition: "If another party was involved, ...") |
| an apology | for that case's trouble |
| a worked sum: two amounts or more and a word that reckons ("abzüglich", "sind das", "that makes", "soit") | that case's price, deposit, refund |
| a signature line ("Ihr Kaffeewerk-Kundenservice") | the new draft is signed by the mailbox |

Pure logic: no I/O, no model.
"""

from __future__ import annotations

import re

from .claims import (
    DEADLINE,
    RELATIVE_DAY,
    WEEKDAY,
    WEEKDAY_RE,
    actions,
    amounts,
    dates,
    references,
)
from .reply_frame import strip_frame
from .trace import EMAIL, URL

# a sentence ends at . ! ? before a capital or a number - not after an ordinal day ("am 2.
# Oktober") or a common abbreviation ("Nr. 4711", "ca. 3", "z. B.")
_SENTENCE = re.compile(r"(?<![0-9]\.)(?<!\b[Nn]r\.)(?<!\bca\.)(?<!\b[zZ]\.)(?<!\bB\.)"
                       r"(?<!\bNo\.)(?<!\bFa\.)(?<!\bDr\.)(?<!\bHr\.)(?<!\bFr\.)(?<!\bSt\.)"
                       r"(?<!\bMr\.)(?<!\bMs\.)(?<=[.!?])\s+(?=[A-ZÄÖÜÉÈÀÁÍÓÚÑ0-9\"„(])")
REPORT = re.compile(
    r"\b(?:we(?:'ve| have| had)(?!\s+(?:to|no)\b)|i(?:'ve| have)|wir haben|ich habe|haben wir|habe ich|"
    r"nous avons|j'ai|avons|hemos|le hemos|se han?\b|"
    r"(?:ihre?|deine?|your|votre|su|tu)\s+\w+(?:\s+\w+)?\s+(?:wurde|was|has been|a été|"
    r"ha sido|fue)\b|"
    r"(?:wurde|wurden|was|were|a été|ont été|fue|fueron)\s+(?:bereits|already|déjà|ya)?\s*"
    r"\w+(?:t|en|ed|é|ée|és|ées|ado|ada|idos?|idas?)\b)",
    re.IGNORECASE)
THANKS = re.compile(
    r"^(?:vielen |herzlichen )?dank(?:e)?\b|^thank(?:s| you)\b|^merci\b|^(?:muchas )?gracias\b",
    re.IGNORECASE)
# a signature line: "Ihr Kaffeewerk-Kundenservice", "Your support team", "L'équipe Kaffeewerk"
SIGNATURE = re.compile(
    r"^(?:ihr|ihre|euer|eure|dein|deine|your|the|votre|ton|l'|la|le|su|tu|el|das|die)\s*"
    r"[\w' -]{0,40}(?:team|service|kundenservice|kundendienst|support|équipe|equipe|servicio|"
    r"equipo|atención al cliente|service client)[\w' -]{0,30}[.!]?$", re.IGNORECASE)
APOLOGY = re.compile(
    r"\b(?:entschuldig|bedauern|tut uns leid|sorry|apolog|désolé|excus|lo sentimos|"
    r"disculp|lamentamos)", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, line by line (a list item stays one sentence)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            out += [s.strip() for s in _SENTENCE.split(line) if s.strip()]
    return out


# the noun a case's own number stands with: "Bestellung 4711", "booking PW-5377"
CASE_NOUN = re.compile(
    r"\b(?:bestell\w*|auftrag\w*|buchung\w*|reservierung\w*|rechnung\w*|sendung\w*|paket\w*|"
    r"vorgang\w*|kundennummer|ticket\w*|order|booking|reservation|invoice|parcel|package|"
    r"shipment|tracking|case|reference|commande|réservation|facture|colis|dossier|pedido|"
    r"reserva|factura|paquete|envío|número)\b\W*(?:\w+\W+){0,2}$", re.IGNORECASE)
# a phone number, not the digits of a code ("RE-2026-08817")
PHONE_NUMBER = re.compile(r"(?<![\w+-])\+?\d[\d /()-]{6,}\d(?!\w)")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b")
_WEEKDAYS = "(?:" + "|".join(sorted(WEEKDAY, key=len, reverse=True)) + ")"
# how a team states its hours and its rhythm: "Montag bis Samstag", "every first Saturday"
WEEKDAY_RULE = re.compile(
    rf"\b{_WEEKDAYS}s?\s*(?:bis|to|till|until|through|-|–|au|à|a|hasta|al)\s*{_WEEKDAYS}s?\b|"
    rf"\b(?:jede[nrs]?|every|each|chaque|tous les|cada|todos los)\s+(?:\w+\s+)?{_WEEKDAYS}\b",
    re.IGNORECASE)


def case_references(text: str) -> list[str]:
    """The numbers of one case in ``text``: a reference (``claims.references``) after a case
    noun ("order 4711", "reserva PW-5566"), or a bare number of 4+ digits that is no postal
    code ("20457 Hamburg"). A part number, a model or a parking lot ("ET-1450", "M-64",
    "P20") is the team's."""
    out = []
    folded = text.lower()
    for tok, _ in references(text):
        at = folded.find(tok.lower())
        if at < 0:
            continue
        before, after = text[max(0, at - 40):at], text[at + len(tok):at + len(tok) + 3]
        bare = tok.lstrip("#").isdigit() and not re.match(r"\s[A-ZÄÖÜ]", after)
        if CASE_NOUN.search(before) or bare:
            out.append(tok)
    return out


# a worked sum: "bei 1.900 EUR Mietpreis sind das 570 EUR", "714 EUR abzüglich 238 EUR, also
# 476 EUR", "that makes 12,00 EUR", "soit 45 EUR", "es decir 30 EUR" (not "also" or "less":
# English policy says "we also ship for 12,90 EUR", "orders of less than 49 EUR")
RECKONING = re.compile(
    r"\b(?:abzüglich|zuzüglich|minus|sind das|macht|ergibt|insgesamt|that makes|in total|"
    r"which makes|soit|moins|au total|ce qui fait|menos|es decir|en total|lo que hace)\b|=",
    re.IGNORECASE)
CONDITION = re.compile(r"^(?:if|when|should|wenn|falls|sollte[n]?|si|cuando|en caso de)\b",
                       re.IGNORECASE)


def reports_action(text: str) -> bool:
    """True when a reply says the team did something for its customer ("Wir haben die
    Kaution heute freigegeben", "we have released your deposit", "Ihre Bestellung wurde
    storniert"): a saved reply like that is what staff send after the action, never a
    source for a draft to another customer. A condition ("If another party was involved")
    reports nothing."""
    return any(_reports(s) for s in sentences(strip_frame(text)))


def _reports(sentence: str) -> bool:
    """A report of what was done ("wir haben ...", "your order was ..."), not in a condition."""
    return bool(REPORT.search(sentence)) and not CONDITION.match(sentence)


def is_event(sentence: str) -> bool:
    """True when ``sentence`` tells what happened in one case (the table above)."""
    done, promised = actions(sentence)
    # the team's own address, phone number, account and links are policy, not that case's
    bare = PHONE_NUMBER.sub(" ", URL.sub(" ", EMAIL.sub(" ", IBAN.sub(" ", sentence))))
    # "we book a double charge back within 5 working days" is how the team works
    rule = promised and DEADLINE.search(sentence)
    timeless = WEEKDAY_RULE.sub(" ", re.sub(r"\b24/7\b", " ", bare))
    return bool(done or (promised and not rule) or case_references(bare) or dates(timeless)
                or WEEKDAY_RE.search(timeless) or RELATIVE_DAY.search(sentence)
                or _reports(sentence)
                or (len(amounts(sentence)) >= 2 and RECKONING.search(sentence))
                or APOLOGY.search(sentence)
                or THANKS.search(sentence) or SIGNATURE.match(sentence.strip()))


def policy(reply: str) -> str:
    """The sentences of a past reply that hold for every customer, one per line."""
    return "\n".join(s for s in sentences(strip_frame(reply)) if not is_event(s))
