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
| "we have ...", "wir haben ...", "nous avons ...", "hemos ..." , "Ihre Bestellung ... wurde" | a report of what was done |
| an apology | for that case's trouble |
| a signature line ("Ihr Kaffeewerk-Kundenservice") | the new draft is signed by the mailbox |

Pure logic: no I/O, no model.
"""

from __future__ import annotations

import re

from .claims import DEADLINE, RELATIVE_DAY, WEEKDAY_RE, actions, dates, references
from .reply_frame import strip_frame
from .trace import EMAIL, PHONE, URL

# a sentence ends at . ! ? before a capital or a number - not after an ordinal day ("am 2.
# Oktober") or a common abbreviation ("Nr. 4711", "ca. 3", "z. B.")
_SENTENCE = re.compile(r"(?<![0-9]\.)(?<!\b[Nn]r\.)(?<!\bca\.)(?<!\b[zZ]\.)(?<!\bB\.)"
                       r"(?<!\bNo\.)(?<=[.!?])\s+(?=[A-ZÄÖÜÉÈÀÁÍÓÚÑ0-9\"„(])")
REPORT = re.compile(
    r"\b(?:we(?:'ve| have| had)|i(?:'ve| have)|wir haben|ich habe|haben wir|habe ich|"
    r"nous avons|j'ai|avons|hemos|le hemos|se ha|"
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


def is_event(sentence: str) -> bool:
    """True when ``sentence`` tells what happened in one case (the table above)."""
    done, promised = actions(sentence)
    # the team's own address, phone number and links are policy, not that case's numbers
    bare = PHONE.sub(" ", URL.sub(" ", EMAIL.sub(" ", sentence)))
    # "we book a double charge back within 5 working days" is how the team works
    rule = promised and DEADLINE.search(sentence)
    return bool(done or (promised and not rule) or references(bare) or dates(sentence)
                or WEEKDAY_RE.search(sentence) or RELATIVE_DAY.search(sentence)
                or REPORT.search(sentence) or APOLOGY.search(sentence)
                or THANKS.search(sentence) or SIGNATURE.match(sentence.strip()))


def policy(reply: str) -> str:
    """The sentences of a past reply that hold for every customer, one per line."""
    return "\n".join(s for s in sentences(strip_frame(reply)) if not is_event(s))
