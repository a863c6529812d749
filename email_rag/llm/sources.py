"""The sources a draft is written from: ranked, cut at a relevance bar, labelled S1, S2.

Candidates come from the retrieve step's detail (``candidates``): the team's knowledge
(articles, saved replies, approved cases: ``detail["knowledge"]``, hits of
``email_rag.knowledge.search``) and the team's approved past replies to similar mails
(``detail["similar"]``), each past reply cut to its policy (``case_facts.policy``: never
that customer's events). A candidate answers the mail when its relevance (the cosine of the
passage or the past mail with this mail) clears its bar (``Bars``, measured on the labelled
set: docs/knowledge.md); ``select`` keeps the best and a second one close to it. A saved
reply that says the team did something ("Wir haben die Kaution heute freigegeben") is what
staff send after the action, never a candidate (``case_facts.reports_action``).

The team's past replies vouch for the knowledge: a passage that holds the facts (amounts,
codes, addresses, URLs, numbers) of a reply the team sent to a similar mail is lifted by
``VOUCH`` x that reply's relevance x the share of the reply's facts it holds. The embedder
ranks a French question against a German article low; the team's French answer to the same
question, stating the article's fee and address, says the article answers it (measured on
the labelled sets: docs/knowledge.md).

Pure logic: no I/O, no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .case_facts import policy, reports_action
from .reply_frame import strip_frame
from .trace import fact_keys

KNOWLEDGE_KINDS = {"file": "article", "web": "article", "saved_reply": "saved_reply",
                   "case": "case"}
MARKDOWN = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?)|\*\*|__|`")
ARTICLE_CHARS = 1800  # of one article's passages carried together (``select``)
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
VOUCH = 0.2  # labelled sets, article fact recall in the sources: 0.15 -> +0, 0.2/0.25 -> +0.075
PLACE = 0.05  # +/-: a candidate names the mail's country / only others (retrieve: ``places``)
WEIGH_PLACES = {"agree": PLACE, "conflict": -PLACE}


@dataclass(frozen=True)
class Bars:
    """The relevance a candidate must reach to be a source (settings: draft_bar_*)."""

    knowledge: float
    past_reply: float
    most: int = 2
    margin: float = 0.15  # a second source within this of the best one's lead over its bar


@dataclass(frozen=True)
class Source:
    """One candidate source of a draft."""

    kind: str  # 'article' | 'saved_reply' | 'case' | 'past_reply'
    title: str
    text: str  # what the draft may carry: the passage, or the past reply's policy sentences
    language: str | None
    relevance: float
    link: str  # where staff read it: /admin/knowledge/<id>#p<n> or /mails/<id>
    origin: str  # knowledge:<article>:<passage> or mail:<email id>
    ref: str = ""  # S1, S2 ... once selected
    vouched_by: str = ""  # the past reply (origin) whose facts lifted this passage's relevance
    places: str = ""  # "agree" | "conflict": it names the mail's country / only others

    def lead(self, bars: Bars) -> float:
        return self.relevance - (bars.past_reply if self.kind == "past_reply" else bars.knowledge)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Source:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def heading(line: str, article: bool = True) -> bool:
    """A line that orders an article rather than answers: a Markdown heading, a title in
    capitals, a short line with no sentence end and no number ("Einsetzen"), and in an
    article a question heading ("Wann wechseln?"). A list item is never one."""
    if HEADING.match(line):
        return True
    if LIST_ITEM.match(line):
        return False
    text = line.strip()
    letters = [c for c in text if c.isalpha()]
    if len(letters) > 3 and all(c.isupper() for c in letters):
        return True
    if article and text.endswith("?"):
        return True
    return len(text.split()) <= 5 and text[-1:] not in ".!:;,)" \
        and not any(c.isdigit() for c in text)


def plain(markdown: str, article: bool = True) -> str:
    """A passage's text as reply lines: headings (``heading``) left out, quote and emphasis
    markers dropped."""
    lines = [MARKDOWN.sub("", line).rstrip() for line in (markdown or "").splitlines()
             if line.strip() and not heading(line, article)]
    return "\n".join(line for line in lines if line.strip())


def candidates(retrieved: Mapping[str, Any],
               language_of: Callable[[str], str | None]) -> list[Source]:
    """Every candidate in the retrieve step's detail, best first: vouched by the past
    replies (``vouched``, by their own relevance), then weighed by the countries they name
    (``WEIGH_PLACES``)."""
    out: list[Source] = []
    for hit in retrieved.get("knowledge") or []:
        kind = KNOWLEDGE_KINDS.get(str(hit.get("origin")), "article")
        raw = str(hit.get("text") or "")
        # a saved reply or an approved case is a whole reply: the draft's frame greets
        text = plain(raw, True) if kind == "article" else plain(strip_frame(raw), False)
        if not text or (kind == "saved_reply" and reports_action(raw)):
            continue
        aid, pno = hit.get("article_id"), hit.get("passage_no")
        title = str(hit.get("title") or "")
        section = str(hit.get("heading") or "")
        out.append(Source(
            kind,
            section if section.startswith(title)
            else " > ".join(x for x in (title, section) if x),
            text,
            hit.get("language") or language_of(text), float(hit.get("cosine") or 0.0),
            f"/admin/knowledge/{aid}#p{pno}", f"knowledge:{aid}:{pno}",
            places=str(hit.get("places") or "")))
    for case in retrieved.get("similar") or []:
        reply = case.get("reply")
        text = policy(str((reply.get("text") if isinstance(reply, dict) else reply) or ""))
        if not text or case.get("score") is None:
            continue
        out.append(Source("past_reply", str(case.get("subject") or ""), text,
                          language_of(text), float(case["score"]),
                          f"/mails/{case.get('email_id')}", f"mail:{case.get('email_id')}",
                          places=str(case.get("places") or "")))
    weighed = [Source(**{**c.as_dict(), "relevance": c.relevance + WEIGH_PLACES[c.places]})
               if c.places in WEIGH_PLACES else c for c in vouched(out)]
    return sorted(weighed, key=lambda s: -s.relevance)


def _facts(text: str) -> set[str]:
    """A text's checkable facts without single digits (a step number vouches for nothing)."""
    return {k for k in fact_keys(text) if not (k.startswith("number:") and len(k) <= 8)}


def vouched(found: list[Source]) -> list[Source]:
    """The article passages lifted by the past replies that state their facts (``VOUCH``)."""
    replies = [(c, f) for c in found if c.kind == "past_reply" and (f := _facts(c.text))]
    out = []
    for c in found:
        facts = _facts(c.text) if c.kind == "article" and replies else set()
        lift, by = max(((r.relevance * len(facts & f) / len(f), r.origin) for r, f in replies
                        if facts & f), default=(0.0, ""))
        out.append(Source(**{**c.as_dict(), "relevance": c.relevance + VOUCH * lift,
                             "vouched_by": by}) if lift else c)
    return out


def select(found: Sequence[Source], bars: Bars) -> list[Source]:
    """The sources that answer the mail: over their bar, the best and those within
    ``bars.margin`` of its lead, at most ``bars.most``; when one over the bar names the
    country the mail asks about, none that names only other countries; a chosen article
    passage brings the article's other passages found for this mail (``_with_siblings``);
    labelled S1, S2 ..."""
    over = sorted((s for s in found if s.lead(bars) >= 0), key=lambda s: -s.lead(bars))
    if any(s.places == "agree" for s in over):
        over = [s for s in over if s.places != "conflict"]
    if not over:
        return []
    best = over[0].lead(bars)
    kept, seen = [], set()
    for s in over:
        if len(kept) == bars.most or best - s.lead(bars) > bars.margin:
            break
        if s.text in seen:
            continue
        seen.add(s.text)
        kept.append(s)
    kept = _with_siblings(kept, found)
    return [Source(**{**s.as_dict(), "ref": f"S{i}"}) for i, s in enumerate(kept, 1)]


def _article(source: Source) -> tuple[str, int] | None:
    """(article id, passage number) of a knowledge article passage, else None."""
    parts = source.origin.split(":")
    if source.kind != "article" or len(parts) != 3 or parts[0] != "knowledge":
        return None
    return parts[1], int(parts[2])


def _with_siblings(kept: list[Source], found: Sequence[Source]) -> list[Source]:
    """Each chosen article passage with the same article's other passages among ``found``
    (the search found them for this mail: an answer's facts sit in several sections) except
    those about other countries only ("Versandzone 2: Spanien ..." for a mail about Vienna),
    in the article's order, while the article's text stays within ``ARTICLE_CHARS``."""
    out: list[Source] = []
    done: set[str] = set()
    for s in kept:
        key = _article(s)
        if key is None:
            if s not in out:
                out.append(s)
            continue
        if key[0] in done:
            continue
        done.add(key[0])
        passages = {n: c for c in found if (k := _article(c)) and k[0] == key[0]
                    and (c.origin == s.origin or c.places != "conflict")
                    for n in [k[1]]}
        size = len(s.text)
        take = {key[1]}
        for c in sorted(passages.values(), key=lambda c: -c.relevance):
            n = _article(c)[1]  # type: ignore[index]
            if n not in take and size + len(c.text) <= ARTICLE_CHARS:
                take.add(n)
                size += len(c.text)
        out += [passages.get(n, s) if n != key[1] else s for n in sorted(take)]
    return out
