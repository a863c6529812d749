"""The claim check: facts in a draft that nothing the team has supports.

A draft may state an amount, a date or a deadline, an order/invoice/ticket number, or
that something was done or will be done for this customer (a refund, a credit, a
corrected invoice, a cancellation, a dispatch, a replacement, a reset). Each such claim
must be found in the evidence, in two parts:

- ``own``: this mail, the earlier mails and our replies in its thread, this customer's
  history - what is true of this customer;
- ``shared``: the team's knowledge (the approved replies to similar mails, the
  mailbox's signature) - what is true for every customer (a fee, a return period, a
  phone number).

| claim | supported when |
|---|---|
| amount (``49,90 €``, ``$12``, ``20 euros``) | the same value occurs as a number in ``own`` or ``shared`` |
| date (``12.03.``, ``2026-03-12``, ``12 mars``, ``March 12``, a weekday) | the same day and month (or weekday) in ``own`` or ``shared`` |
| a relative day (``morgen``, ``tomorrow``, ``demain``, ``mañana``, ``next week``) | a relative day in ``own`` or ``shared``; never a claim in the promise to write again ("wir melden uns morgen") |
| a rule of the team (``as per our policy``, ``laut unseren AGB``) | ``own`` or ``shared`` names a policy or terms too |
| deadline (``24 Stunden``, ``5 business days``, ``sous 48 heures``) | the same number of the same unit in ``own`` or ``shared`` |
| reference (``RE-2024-0042``, ``#55210``, ``A12345``) | the same characters in ``own`` or in ``knowledge`` (a part code of an article), never in ``shared`` alone (another customer's number is wrong here) |
| done (``we have refunded``, ``wurde storniert``, ``nous avons remboursé``) | ``own`` says the same action was done (our reply in the thread, or the customer: "you refunded me ...") |
| promised (``we will refund``, ``le reembolsaremos``) | ``own`` says the same action was done or promised, or ``shared`` names it in any form ("we refund within 5 days") |

Questions and conditions ("once we receive the parcel, ...") are not claims.
Pure logic: no I/O, no model.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from ..core.catalog import N_

_MONTHS = {
    1: "january jan januar janvier enero gennaio januari janeiro",
    2: "february feb februar février fevrier febrero febbraio februari fevereiro",
    3: "march mar märz maerz mars marzo maart março",
    4: "april apr avril abril aprile",
    5: "may mai mayo maggio mei maio",
    6: "june jun juni juin junio giugno junho",
    7: "july jul juli juillet julio luglio julho",
    8: "august aug août aout agosto augustus",
    9: "september sep sept septembre septiembre settembre setembro",
    10: "october oct oktober octobre octubre ottobre oktober outubro",
    11: "november nov novembre noviembre novembre novembro",
    12: "december dec dezember décembre decembre diciembre dicembre dezembro",
}
MONTH = {w: n for n, words in _MONTHS.items() for w in words.split()}
_WEEKDAYS = {
    0: "monday montag lundi lunes lunedì lunedi maandag segunda-feira",
    1: "tuesday dienstag mardi martes martedì martedi dinsdag terça-feira",
    2: "wednesday mittwoch mercredi miércoles miercoles mercoledì mercoledi woensdag quarta-feira",
    3: "thursday donnerstag jeudi jueves giovedì giovedi donderdag quinta-feira",
    4: "friday freitag vendredi viernes venerdì venerdi vrijdag sexta-feira",
    5: "saturday samstag sonnabend samedi sábado sabado sabato zaterdag",
    6: "sunday sonntag dimanche domingo domenica zondag",
}
WEEKDAY = {w: n for n, words in _WEEKDAYS.items() for w in words.split()}
_NUMBER_WORDS = {
    1: "one a an ein eine einem einen einer un une uno una un' uma um één",
    2: "two zwei deux dos due twee dois duas",
    3: "three drei trois tres tre drie três",
    4: "four vier quatre cuatro quattro quatro",
    5: "five fünf cinq cinco cinque vijf",
    6: "six sechs seis sei zes",
    7: "seven sieben sept siete sette zeven",
    8: "eight acht huit ocho otto oito",
    10: "ten zehn dix diez dieci tien dez",
    14: "fourteen vierzehn quatorze catorce quattordici veertien",
}
NUMBER_WORD = {w: n for n, words in _NUMBER_WORDS.items() for w in words.split()}
_UNITS = {
    "hour": r"hours?|stunden?|std\.?|heures?|horas?|ore|uur",
    "day": r"(?:business |working |calendar )?days?|(?:werk|arbeits|kalender)?tagen?|"
    r"jours?(?: ouvrés| ouvrables| calendaires)?|días?(?: hábiles| laborables)?|"
    r"dias?(?: úteis)?|giorni(?: lavorativi)?|(?:werk)?dagen?",
    "week": r"weeks?|wochen?|semaines?|semanas?|settimane|settimana|weken|week",
    "month": r"months?|monaten?|monats?|mois|meses|mes|mesi|maanden?|mês",
}
UNIT = re.compile("|".join(f"(?P<{k}>{v})" for k, v in _UNITS.items()), re.IGNORECASE)

_CURRENCY = r"(?:€|eur(?:o|os)?\b|usd\b|\$|£|gbp\b|chf\b|dollars?\b|francs?\b)"
_NUM = r"\d{1,3}(?:[.,' ]\d{3})*(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
AMOUNT = re.compile(rf"{_CURRENCY}\s?(?P<a>{_NUM})|(?P<b>{_NUM})\s?{_CURRENCY}", re.IGNORECASE)
NUMBER = re.compile(_NUM)
NUMERIC_DATE = re.compile(
    r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b|"
    # 12/03, 12/03/2026, 12.03., 12.03.2026 - not a version or a decimal (4.2, 1.5 GB)
    r"(?<![\d.,])\b(?P<p>\d{1,2})(?:/(?P<q>\d{1,2})(?:/(?:\d{4}|\d{2}))?|"
    r"\.(?P<q2>\d{1,2})\.(?:\d{4}|\d{2})?)(?![\d])(?![.,]\d)"
)
_MONTH_WORDS = "|".join(sorted(MONTH, key=len, reverse=True))
TEXT_DATE = re.compile(
    rf"\b(?P<d1>\d{{1,2}})(?:\.|st|nd|rd|th|er|º)?\s*(?:de\s+|of\s+)?(?P<m1>{_MONTH_WORDS})\b|"
    rf"\b(?P<m2>{_MONTH_WORDS})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)
WEEKDAY_RE = re.compile(
    rf"\b(?:{'|'.join(sorted(WEEKDAY, key=len, reverse=True))})\b", re.IGNORECASE
)
_COUNT = rf"\d+|{'|'.join(sorted(NUMBER_WORD, key=len, reverse=True))}"
DEADLINE = re.compile(rf"\b(?P<n>{_COUNT})\s*(?:-\s*)?(?P<u>{UNIT.pattern})\b", re.IGNORECASE)
REFERENCE = re.compile(r"(?<![\w.,/-])#?[A-Za-z0-9][A-Za-z0-9/-]{2,30}[A-Za-z0-9](?![\w])")

# action -> (a done form: a participle or a past tense; a promise: a future form)
_ACTIONS: dict[str, tuple[str, str]] = {
    "refund": (
        r"refunded|reimbursed|(?:zurück|rück)?erstattet|zurücküberwiesen|remboursée?s?|"
        r"reembolsad[oa]s?|reintegrad[oa]s?|rimborsat[oaie]|terugbetaald|teruggestort|"
        r"reembolsad[oa]s?",
        r"will (?:\w+ )?(?:refund|reimburse)|(?:werden|werde|wird)\b[^.!?\n]{0,60}\b(?:erstatten|"
        r"erstattet|zurücküberweisen)|rembourserons|(?:allons|vais) vous rembourser|"
        r"serez remboursée?|sera remboursée?|reembolsaremos|vamos a reembolsar|"
        r"(?:será|serán) reembolsad|rimborseremo|zullen\b[^.!?\n]{0,40}terugbetalen|"
        r"reembolsaremos|vamos reembolsar|"
        r"(?:devolveremos|encargará de devolver|encargaremos de devolver|vamos a devolver|"
        r"procederemos a devolver)\w*\b[^.!?\n]{0,40}\b(?:dinero|importe|cargo|cobro|pago|"
        r"cantidad|monto)",
    ),
    "credit": (
        r"credited|gutgeschrieben|créditée?s?|abonad[oa]s?|acreditad[oa]s?|accreditat[oaie]|"
        r"gecrediteerd|creditad[oa]s?",
        r"will (?:\w+ )?credit|(?:werden|werde|wird)\b[^.!?\n]{0,60}\bgutschreiben|créditerons|"
        r"abonaremos|accrediteremo",
    ),
    "correct": (
        r"corrected|amended|korrigiert|berichtigt|corrigée?s?|rectifiée?s?|corregid[oa]s?|"
        r"rectificad[oa]s?|corrett[oaie]|gecorrigeerd|corrigid[oa]s?",
        r"will (?:\w+ )?correct|(?:werden|werde|wird)\b[^.!?\n]{0,60}\bkorrigier|corrigerons|"
        r"corregiremos|correggeremo",
    ),
    "cancel": (
        r"cancell?ed|storniert|annulée?s?|résiliée?s?|cancelad[oa]s?|anulad[oa]s?|"
        r"annullat[oaie]|geannuleerd",
        r"will (?:\w+ )?cancel|(?:werden|werde|wird)\b[^.!?\n]{0,60}\bstornier|annulerons|"
        r"cancelaremos|anularemos|annulleremo",
    ),
    "ship": (
        r"shipped|dispatched|versandt|verschickt|versendet|expédiée?s?|despachad[oa]s?|"
        r"spedit[oaie]|verzonden|expedid[oa]s?",
        r"will (?:\w+ )?(?:ship|dispatch)|(?:werden|werde|wird)\b[^.!?\n]{0,60}\b(?:versenden|"
        r"verschicken|versandt)|expédierons|spediremo",
    ),
    "replace": (
        r"replaced|ersetzt|ausgetauscht|remplacée?s?|sustituid[oa]s?|reemplazad[oa]s?|"
        r"sostituit[oaie]|vervangen|substituíd[oa]s?",
        r"will (?:\w+ )?replace|(?:werden|werde|wird)\b[^.!?\n]{0,60}\b(?:ersetzen|austauschen)|"
        r"remplacerons|reemplazaremos|sustituiremos|sostituiremo",
    ),
    "reset": (
        r"(?:has|have|had|was|were|been) (?:\w+ )?reset|unlocked|zurückgesetzt|entsperrt|freigeschaltet|réinitialisée?s?|"
        r"débloquée?s?|restablecid[oa]s?|desbloquead[oa]s?|sbloccat[oaie]|ontgrendeld",
        r"will (?:\w+ )?(?:reset|unlock)|(?:werden|werde|wird)\b[^.!?\n]{0,60}\b(?:zurücksetzen|"
        r"entsperren)|réinitialiserons|restableceremos|desbloquearemos",
    ),
}
# any form of the action's verb or noun, for the evidence of a promise
_STEMS = {
    "refund": r"refund|reimburs|erstatt|rembours|reembols|rimbors|terugbeta|reembolso|devol",
    "credit": r"credit|gutschr|gutschreib|avoir|abono|accredit|crédit",
    "correct": r"correct|korrig|berichtig|corrig|rectific|corregi|corret",
    "cancel": r"cancel|storn|kündig|annul|résili|anula|annull",
    "ship": r"ship|dispatch|versand|versend|verschick|expédi|envío|despach|spedi|verzend",
    "replace": r"replac|ersatz|ersetz|austausch|remplac|sustitu|reemplaz|sostitu|vervang",
    "reset": r"reset|zurücksetz|entsperr|freischalt|réinitialis|débloqu|restablec|desbloque",
}
STEM = {a: re.compile(rf"\b(?:{p})", re.IGNORECASE) for a, p in _STEMS.items()}
NEGATION = re.compile(
    r"\b(?:not|never|nicht|noch nicht|kein\w*|pas|jamais|no|todavía no|aún no|non|niet|nog "
    r"niet|não|ainda não)\b",
    re.IGNORECASE,
)
DONE = {a: re.compile(rf"\b(?:{d})\b", re.IGNORECASE) for a, (d, _) in _ACTIONS.items()}
PROMISE = {a: re.compile(rf"\b(?:{p})", re.IGNORECASE) for a, (_, p) in _ACTIONS.items()}
# a done form needs a tense that says it happened (not "to be refunded", "erstattet werden")
DONE_TENSE = re.compile(
    r"\b(?:have|has|had|was|were|been|we|i|already|habe|haben|hat|hatten|wurde|wurden|ist|"
    r"sind|bereits|schon|avons|avez|ai|a été|ont été|est|sont|déjà|hemos|he|ha|han|fue|"
    r"fueron|ya|abbiamo|ho|è|sono|già|hebben|heb|werd|zijn|is|al|foi|foram|já|temos)\b",
    re.IGNORECASE,
)
FUTURE_PASSIVE = re.compile(r"\b(?:werden|wird|will be|sera|será|verrà|wordt)\b", re.IGNORECASE)
CONDITION = re.compile(
    r"\b(?:once|if|when|whether|as soon as|as long as|after|sobald|solange|wenn|falls|ob|"
    r"nachdem|sofern|dès que|tant que|si|mientras|"
    r"lorsque|une fois|quand|cuando|en cuanto|una vez|tan pronto|appena|quando|zodra|"
    r"indien|assim que|caso)\b",
    re.IGNORECASE,
)
# a day named relative to today ("delivered tomorrow"): a date like any other, except in
# the promise to write again, which is the team's own to give
RELATIVE_DAY = re.compile(
    r"\b(?:today|tomorrow|tonight|heute|morgen|übermorgen|aujourd'hui|demain|après-demain|"
    r"hoy|mañana|pasado mañana|oggi|domani|dopodomani|vandaag|overmorgen|hoje|amanhã|"
    r"next week|nächste[nr]? woche|la semaine prochaine|la próxima semana|la semana que viene)\b",
    re.IGNORECASE,
)
WE_WRITE_AGAIN = re.compile(
    r"\b(?:melden uns|melde mich|schreiben (?:Ihnen|dir)|antworten|get back|come back|write "
    r"(?:to you|again)|reply|be in touch|reviens|revenons|reviendrons|répondrons|écrirons|"
    r"escribimos|escribiremos|responderemos|contactaremos|volvemos a escribir|ci faremo|"
    r"risponderemo|scriveremo|laten (?:u|je) weten|nemen contact)\b",
    re.IGNORECASE,
)
# a rule of the team ("as per our policy, ...") that nothing given states
POLICY = re.compile(
    r"\b(?:policy|policies|terms and conditions|richtlinie\w*|agb|geschäftsbedingungen|"
    r"politique|conditions générales|política|condiciones generales|normativa|regolamento|"
    r"condizioni generali|beleid|voorwaarden|política)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[^\d\s][.!?])\s+|(?<=[?!])\s+|\n+")


# a claim's kind as staff read it (the web UI translates it: ``shown``)
KIND_NAMES = {"amount": N_("amount"), "date": N_("date"), "deadline": N_("deadline"),
              "reference": N_("reference"), "done": N_("said to be done"), "promised": N_("promised"),
              "policy": N_("policy")}


def shown(claims: str, gettext: Callable[[str], str]) -> str:
    """Claims as ``str(Claim)`` wrote them (``amount '49,90 EUR'; done 'erstattet'``) with
    each kind in the reader's language (``gettext``); anything else as it is."""
    out = []
    for claim in claims.split("; "):
        kind, sep, text = claim.partition(" ")
        out.append(f"{gettext(KIND_NAMES[kind])}{sep}{text}" if kind in KIND_NAMES else claim)
    return "; ".join(out)


@dataclass(frozen=True)
class Claim:
    kind: str  # amount | date | deadline | reference | done | promised | policy
    text: str  # as written in the draft
    key: str  # normalised value compared with the evidence

    def __str__(self) -> str:
        return f"{self.kind} {self.text!r}"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text or "")


def _value(number: str) -> str:
    """'1.234,50' / '1,234.50' / '49,90' / '49.9' / '20' -> a canonical '1234.50'."""
    s = number.replace(" ", "").replace("'", "")
    if "," in s and "." in s:
        dec = "," if s.rfind(",") > s.rfind(".") else "."
        s = s.replace("." if dec == "," else ",", "").replace(dec, ".")
    elif "," in s or "." in s:
        sep = "," if "," in s else "."
        head, _, tail = s.rpartition(sep)
        s = f"{head.replace(sep, '')}.{tail}" if len(tail) <= 2 else s.replace(sep, "")
    try:
        return f"{float(s):.2f}"
    except ValueError:
        return s


def _day_offset(word: str) -> int:
    """Days from today of a relative day word: 0 today, 1 tomorrow, 2 the day after, 7 next
    week."""
    w = word.lower()
    if w in ("übermorgen", "après-demain", "pasado mañana", "dopodomani", "overmorgen"):
        return 2
    if w in ("tomorrow", "morgen", "demain", "mañana", "domani", "amanhã"):
        return 1
    return 7 if any(k in w for k in ("week", "woche", "semaine", "semana")) else 0


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


def _asserted(sentence: str) -> bool:
    return not sentence.rstrip().endswith("?") and not CONDITION.search(sentence)


def amounts(text: str) -> list[tuple[str, str]]:
    return [
        (m.group(0), _value(m.group("a") or m.group("b"))) for m in AMOUNT.finditer(_fold(text))
    ]


def numbers(text: str) -> set[str]:
    return {_value(m.group(0)) for m in NUMBER.finditer(_fold(text))}


def dates(text: str) -> list[tuple[str, str]]:
    """(as written, key): key 'D/M' (both orders of a numeric date), or 'wd<N>'."""
    out: list[tuple[str, str]] = []
    text = _fold(text)
    for m in NUMERIC_DATE.finditer(text):
        if m.group("y"):
            out.append((m.group(0), f"{int(m.group('d'))}/{int(m.group('m'))}"))
            continue
        p, q = int(m.group("p")), int(m.group("q") or m.group("q2"))
        if 1 <= p <= 31 and 1 <= q <= 12:
            out.append((m.group(0), f"{p}/{q}"))
        if 1 <= q <= 31 and 1 <= p <= 12 and p != q:
            out.append((m.group(0), f"{q}/{p}"))
    for m in TEXT_DATE.finditer(text):
        day, month = (
            (m.group("d1"), m.group("m1")) if m.group("d1") else (m.group("d2"), m.group("m2"))
        )
        if 1 <= int(day) <= 31:
            out.append((m.group(0), f"{int(day)}/{MONTH[month.lower()]}"))
    for m in WEEKDAY_RE.finditer(text):
        out.append((m.group(0), f"wd{WEEKDAY[m.group(0).lower()]}"))
    return out


def deadlines(text: str) -> list[tuple[str, str]]:
    out = []
    for m in DEADLINE.finditer(_fold(text)):
        n = m.group("n").lower()
        count = int(n) if n.isdigit() else NUMBER_WORD.get(n)
        unit = UNIT.fullmatch(m.group("u"))
        if count is None or unit is None:
            continue
        out.append((m.group(0), f"{count} {unit.lastgroup}"))
    return out


def _norm_ref(token: str) -> str:
    return re.sub(r"[^0-9A-Z]", "", token.upper())


def references(text: str) -> list[tuple[str, str]]:
    """Order, invoice, ticket, tracking numbers: a token with at least 4 digits, or with
    letters and at least 2 digits (not a date, an amount or a year)."""
    out = []
    text = _fold(text)
    for m in REFERENCE.finditer(text):
        tok = m.group(0)
        digits = sum(ch.isdigit() for ch in tok)
        letters = sum(ch.isalpha() for ch in tok)
        if digits < 2 or (letters == 0 and digits < 4) or re.fullmatch(r"(?:19|20)\d\d", tok):
            continue
        if NUMERIC_DATE.fullmatch(tok.lstrip("#")) or re.fullmatch(
            r"\d{1,2}(?:st|nd|rd|th|er)|\d+(?:h|km|kg|gb|mb)", tok, re.IGNORECASE
        ):
            continue
        out.append((tok, _norm_ref(tok)))
    return out


def _negated(sentence: str, verb: re.Pattern[str]) -> bool:
    """'has not been shipped', 'noch nicht versandt', 'pas encore remboursé': a negation
    in the few words before the verb."""
    m = verb.search(sentence)
    return bool(m and NEGATION.search(sentence[max(0, m.start() - 25) : m.start()]))


def actions(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(done, promised): (sentence, action) of every asserted action claim."""
    done, promised = [], []
    for sentence in _sentences(_fold(text)):
        if not _asserted(sentence):
            continue
        for action in _ACTIONS:
            if PROMISE[action].search(sentence):
                promised.append((sentence, action))
            elif (
                DONE[action].search(sentence)
                and DONE_TENSE.search(sentence)
                and not FUTURE_PASSIVE.search(sentence)
                and not _negated(sentence, DONE[action])
            ):
                done.append((sentence, action))
    return done, promised


def _mentions(text: str) -> tuple[set[str], set[str]]:
    """(actions said done, actions named in any form) anywhere in ``text``, questions and
    conditions included: the evidence may say it in any form ("we refund it within 5
    days" supports "we will refund you")."""
    text = _fold(text)
    done = {a for a in _ACTIONS if DONE[a].search(text)}
    named = {a for a in _ACTIONS if PROMISE[a].search(text) or STEM[a].search(text)}
    return done, done | named


def unsupported(draft: str, own: str, shared: str = "", knowledge: str = "") -> list[Claim]:
    """The claims of ``draft`` that the evidence does not support (see the table above).
    ``knowledge``: the team's sources the draft carries (articles, saved replies): a product
    or part code there is the team's, not another customer's reference."""
    every = f"{own}\n{shared}"
    found: list[Claim] = []
    known_numbers = numbers(every)
    for text, key in amounts(draft):
        if key not in known_numbers:
            found.append(Claim("amount", text, key))
    known_dates = {k for _, k in dates(every)}
    claimed: dict[str, list[str]] = {}
    for text, key in dates(draft):
        claimed.setdefault(text, []).append(key)
    for text, keys in claimed.items():
        if not any(k in known_dates for k in keys):
            found.append(Claim("date", text, keys[0]))
    known_deadlines = {k for _, k in deadlines(every)}
    for text, key in deadlines(draft):
        if key not in known_deadlines:
            found.append(Claim("deadline", text, key))
    for sentence in _sentences(_fold(draft)):
        day = RELATIVE_DAY.search(sentence)
        if day and _asserted(sentence) and not WE_WRITE_AGAIN.search(sentence):
            offset = _day_offset(day.group(0))
            # "today" is a claim only about an action ("wird heute versandt"), not about
            # what we do now ("nous ouvrons dès aujourd'hui une enquête")
            about_action = any(
                DONE[a].search(sentence) or PROMISE[a].search(sentence) or STEM[a].search(sentence)
                for a in _ACTIONS
            )
            if offset == 0 and not about_action:
                continue
            if offset not in {_day_offset(m.group(0)) for m in RELATIVE_DAY.finditer(every)}:
                found.append(Claim("date", day.group(0), f"day+{offset}"))
        rule = POLICY.search(sentence)
        if rule and not POLICY.search(every):
            found.append(Claim("policy", sentence[:120], rule.group(0).lower()))
    own_refs = f"{_norm_ref(own)} {_norm_ref(knowledge)}"
    taken = {c.text for c in found}
    for text, key in references(draft):
        if key not in own_refs and not any(text in t or t in text for t in taken):
            found.append(Claim("reference", text, key))
    done, promised = actions(draft)
    own_done, _ = _mentions(own)
    own_promised = {a for a in _ACTIONS if PROMISE[a].search(_fold(own))}
    # the customer asking for a refund is no evidence that we give one: any form of the
    # action counts only in the team's knowledge
    _, team_named = _mentions(shared)
    any_said = own_done | own_promised | team_named
    for sentence, action in done:
        if action not in own_done:
            found.append(Claim("done", sentence[:120], action))
    for sentence, action in promised:
        if action not in any_said:
            found.append(Claim("promised", sentence[:120], action))
    return found
