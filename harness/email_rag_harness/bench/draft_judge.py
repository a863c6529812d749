"""The judge of `bench quality --drafts`: what a draft holds, measured against the labels.

Independent of the product's drafting (nothing from email_rag.llm or email_rag.pipeline):
it reads a draft's text and the mail's labels (testing/labelled.py) and counts

- fact recall: facts found / facts (a fact is found when one of its alternatives is a
  substring of the draft, compared by ``labelled.normalise``); all-facts: every one found;
- wrong facts found (another customer's events, near-miss numbers: the set's ``wrong``);
- echo: the share of the customer's 5-word shingles the draft repeats (> 0.4 = echo);
- asks or defers: a question mark, or "we will check / get back / need your order
  number" in one of the four languages (ASK_DEFER);
- promises: an amount with a currency, a weekday or a date, refund wording (PROMISE_*),
  counted for no_source mails (nothing answers them: the draft must not promise);
- the draft's language by the product's identifier (email_rag.mail.language, a library);
- drafted or not, and the model seconds the product recorded for the mail.

``summarise`` turns the per-mail judgements into the figures per group; ``compare``
prints two runs' figures side by side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from email_rag_harness.testing.labelled import GROUPS, Fact, LabelledMail, normalise

ECHO_LIMIT = 0.4
SHINGLE = 5

ASK_DEFER = {
    "de": ("wir prüfen", "prüfen wir", "wir melden uns", "melden uns", "kümmern uns",
           "rückmeldung", "bestellnummer", "wir klären", "klären wir", "sehen uns das an",
           "schauen uns", "sie hören", "von uns hören", "geben ihnen bescheid", "meldet sich",
           "prüft ihr anliegen", "team prüft"),
    "en": ("we will check", "we'll check", "we are checking", "we're checking", "look into",
           "looking into", "get back to you", "come back to you", "order number",
           "let you know", "hear from us", "find out", "we will check and"),
    "fr": ("nous vérifions", "nous allons vérifier", "vérifier", "revenons vers vous",
           "reviendrons vers vous", "revenir vers vous", "numéro de commande",
           "nous vous tiendrons", "de nos nouvelles", "nous examinons", "nous nous renseignons",
           "nous nous en occupons", "examine votre demande", "vous répondra"),
    "es": ("comprobamos", "vamos a comprobar", "revisaremos", "estamos revisando",
           "le responderemos", "nos pondremos en contacto", "número de pedido",
           "le informaremos", "noticias nuestras", "le contestaremos", "nos estamos ocupando",
           "lo revisamos", "está revisando", "le responderá"),
}
_CURRENCY = r"(?:€|eur\b|euro|euros|chf|\$|£|usd)"
PROMISE_AMOUNT = re.compile(rf"\d[\d.,]*\s?{_CURRENCY}|{_CURRENCY}\s?\d", re.I)
_MONTHS = ("januar|februar|märz|april|mai|juni|juli|august|september|oktober|november|"
           "dezember|january|february|march|may|june|july|october|december|janvier|février|"
           "mars|avril|juin|juillet|août|septembre|octobre|novembre|décembre|enero|febrero|"
           "marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre")
PROMISE_DATE = re.compile(
    rf"\b\d{{1,2}}\.\s?\d{{1,2}}\.(?:\d{{2,4}})?|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b|"
    rf"\b\d{{1,2}}(?:st|nd|rd|th|er)?\.?\s(?:de\s)?(?:{_MONTHS})\b|\b(?:{_MONTHS})\s\d{{1,2}}\b",
    re.I)
PROMISE_WEEKDAY = re.compile(
    r"\b(?:montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|lundi|mardi|mercredi|jeudi|vendredi|samedi|"
    r"dimanche|lunes|martes|miércoles|jueves|viernes|sábado|domingo|morgen|tomorrow|demain|"
    r"mañana)\b", re.I)
PROMISE_REFUND = re.compile(
    r"erstatten wir|wir erstatten|erstattet|zurückgebucht|zurücküberwiesen|gutschrift|"
    r"we will refund|we'll refund|we refund|refunded|reimburse|"
    r"nous remboursons|nous vous rembourserons|rembourserons|remboursé|"
    r"reembolsamos|reembolsaremos|reembolsado|devolveremos el importe|devolvemos el importe",
    re.I)


@dataclass(frozen=True)
class DraftSeen:
    """What the product stored for one mail (read from the database by the run)."""

    mail_status: str | None  # emails.status
    body: str | None  # drafts.body_draft of the newest draft; None: no draft
    draft_status: str | None = None  # drafts.status
    flags: str | None = None  # drafts.check_flags
    sources: list[str] = field(default_factory=list)  # what the sources JSON names
    model_seconds: float = 0.0  # the mail's LLM attempts (audit llm_attempt duration_ms)
    source_text: str = ""  # the text of the sources the draft was given (sources JSON)


@dataclass
class Judgement:
    id: str
    group: str
    language: str
    mail_status: str | None
    drafted: bool
    facts: int
    found: list[str]
    missing: list[str]
    recall: float | None  # None: the mail has no facts
    all_facts: bool | None
    wrong_found: list[str]
    echo: float
    asks_or_defers: bool
    promises: list[str]
    draft_language: str | None
    wrong_language: bool
    flags: str | None
    sources: list[str]
    source_hit: bool | None  # a labelled source among the draft's sources (None: none labelled)
    model_seconds: float
    # the share of the facts the draft's sources held (None: no facts; 0: no draft): what the
    # retrieval gave; recall below it was lost in the adaptation (translation, checks)
    source_recall: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", normalise(text))


def _customer_text(body: str) -> str:
    """The customer's own words: quoted lines ("> ...") left out."""
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith(">"))


def echo_share(customer: str, draft: str, n: int = SHINGLE) -> float:
    """Share of the customer's n-word shingles that the draft repeats (0 when the customer
    wrote fewer than n words)."""
    words = _words(_customer_text(customer))
    if len(words) < n:
        return 0.0
    theirs = {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}
    d = _words(draft)
    ours = {tuple(d[i:i + n]) for i in range(len(d) - n + 1)}
    return round(len(theirs & ours) / len(theirs), 3)


def asks_or_defers(draft: str, language: str) -> bool:
    """A question, or wording that the team checks / answers later / needs something, in
    the mail's language or any other of the four (a draft in the wrong language still
    defers; its language is counted on its own)."""
    if "?" in draft or "¿" in draft:
        return True
    text = normalise(draft)
    phrases = ASK_DEFER.get(language, ()) + tuple(p for k, v in ASK_DEFER.items()
                                                  if k != language for p in v)
    return any(normalise(p) in text for p in phrases)


def promises(draft: str) -> list[str]:
    """Amounts with a currency, dates, weekdays and refund wording found in the draft."""
    out: list[str] = []
    for pattern in (PROMISE_AMOUNT, PROMISE_DATE, PROMISE_WEEKDAY, PROMISE_REFUND):
        out += [m.group(0).strip() for m in pattern.finditer(draft)]
    return out


def facts_found(facts: Iterable[Fact], draft: str) -> tuple[list[str], list[str]]:
    found, missing = [], []
    for f in facts:
        (found if f.found_in(draft) else missing).append(str(f))
    return found, missing


def draft_language(text: str) -> str | None:
    from email_rag.mail.language import identify

    guess = identify(text)
    return guess.code if guess.confidence > 0 else None


def judge(mail: LabelledMail, seen: DraftSeen) -> Judgement:
    body = seen.body or ""
    drafted = bool(body.strip())
    found, missing = facts_found(mail.facts, body) if drafted else ([], [str(f) for f in mail.facts])
    n = len(mail.facts)
    recall = round(len(found) / n, 3) if n else None
    wrong = facts_found(mail.wrong, body)[0] if drafted else []
    lang = draft_language(body) if drafted else None
    return Judgement(
        id=mail.id, group=mail.group, language=mail.language, mail_status=seen.mail_status,
        drafted=drafted, facts=n, found=found, missing=missing, recall=recall,
        all_facts=(len(found) == n) if n else None, wrong_found=wrong,
        echo=echo_share(mail.body, body) if drafted else 0.0,
        asks_or_defers=drafted and asks_or_defers(body, mail.language),
        promises=promises(body) if drafted and mail.group == "no_source" else [],
        draft_language=lang, wrong_language=drafted and lang != mail.language,
        flags=seen.flags, sources=list(seen.sources),
        source_hit=(drafted and any(x in mail.source for x in seen.sources)) if mail.source
        else None, model_seconds=round(seen.model_seconds, 2),
        source_recall=(round(len(facts_found(mail.facts, seen.source_text)[0]) / n, 3)
                       if drafted else 0.0) if n else None)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def summarise(judgements: list[Judgement]) -> dict[str, dict[str, Any]]:
    """Figures per group. Recall and all-facts are over every mail of the group (a mail
    without a draft counts as recall 0); ask/defer, echo, wrong facts, promises and wrong
    language over the drafts."""
    out: dict[str, dict[str, Any]] = {}
    for g in GROUPS:
        js = [j for j in judgements if j.group == g]
        if not js:
            continue
        drafted = [j for j in js if j.drafted]
        with_facts = [j for j in js if j.recall is not None]
        out[g] = {
            "mails": len(js),
            "drafted": len(drafted),
            "drafted_share": _share(len(drafted), len(js)),
            "mean_fact_recall": (round(sum(j.recall or 0 for j in with_facts) / len(with_facts), 3)
                                 if with_facts else None),
            "all_facts_share": _share(sum(bool(j.all_facts) for j in with_facts), len(with_facts))
            if with_facts else None,
            "mean_source_recall": (round(sum(j.source_recall or 0 for j in with_facts)
                                         / len(with_facts), 3) if with_facts else None),
            "drafts_with_wrong_fact": sum(bool(j.wrong_found) for j in drafted),
            "echo_drafts": sum(j.echo > ECHO_LIMIT for j in drafted),
            "ask_defer_share": _share(sum(j.asks_or_defers for j in drafted), len(drafted))
            if g == "no_source" else None,
            "drafts_with_promise": sum(bool(j.promises) for j in drafted)
            if g == "no_source" else None,
            "wrong_language": sum(j.wrong_language for j in drafted),
            "source_among_sources": _share(sum(bool(j.source_hit) for j in js
                                               if j.source_hit is not None),
                                           sum(j.source_hit is not None for j in js))
            if any(j.source_hit is not None for j in js) else None,
            "model_seconds_per_mail": round(sum(j.model_seconds for j in js) / len(js), 1),
        }
    return out


COLUMNS = ["group", "mails", "drafted", "recall", "in sources", "all facts", "wrong fact", "echo",
           "ask/defer", "promises", "wrong lang", "source found", "model s/mail"]


def group_rows(groups: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    def fmt(v: Any) -> Any:
        return "-" if v is None else v

    return [{"group": g, "mails": f["mails"], "drafted": fmt(f["drafted_share"]),
             "recall": fmt(f["mean_fact_recall"]),
             "in sources": fmt(f.get("mean_source_recall")),
             "all facts": fmt(f["all_facts_share"]),
             "wrong fact": f["drafts_with_wrong_fact"], "echo": f["echo_drafts"],
             "ask/defer": fmt(f["ask_defer_share"]), "promises": fmt(f["drafts_with_promise"]),
             "wrong lang": f["wrong_language"], "source found": fmt(f["source_among_sources"]),
             "model s/mail": f["model_seconds_per_mail"]}
            for g, f in groups.items()]


MAIL_COLUMNS = ["mail", "group", "lang", "status", "drafted", "recall", "wrong", "echo",
                "ask/defer", "promises", "draft lang", "sources", "model s", "missing"]


def mail_rows(mails: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"mail": m["id"], "group": m["group"], "lang": m["language"],
             "status": m["mail_status"], "drafted": "yes" if m["drafted"] else "no",
             "recall": "-" if m["recall"] is None else m["recall"],
             "wrong": "; ".join(m["wrong_found"]) or "-", "echo": m["echo"],
             "ask/defer": "yes" if m["asks_or_defers"] else "no",
             "promises": "; ".join(m["promises"]) or "-", "draft lang": m["draft_language"] or "-",
             "sources": ",".join(m["sources"][:4]) or "-",
             "model s": m["model_seconds"], "missing": "; ".join(m["missing"])[:60] or "-"}
            for m in mails]


def compare(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """Two runs' group figures side by side: a heading naming both, one row per figure."""
    ga, gb = a.get("groups", {}), b.get("groups", {})
    rows = []
    for g in GROUPS:
        if g not in ga and g not in gb:
            continue
        fa, fb = ga.get(g, {}), gb.get(g, {})
        for key in ("mails", "drafted_share", "mean_fact_recall", "mean_source_recall",
                    "all_facts_share",
                    "drafts_with_wrong_fact", "echo_drafts", "ask_defer_share",
                    "drafts_with_promise", "wrong_language", "source_among_sources",
                    "model_seconds_per_mail"):
            va, vb = fa.get(key), fb.get(key)
            if va is None and vb is None:
                continue
            rows.append({"group": g, "measure": key, "A": "-" if va is None else va,
                         "B": "-" if vb is None else vb})
    head = (f"A: {a.get('set')} {a.get('date')} {a.get('endpoint', '')}\n"
            f"B: {b.get('set')} {b.get('date')} {b.get('endpoint', '')}")
    return head, rows
