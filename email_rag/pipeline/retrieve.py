"""Pipeline step ``retrieve``: the context the draft is written from.

Runs on the vector queue (``needs_vectors=True``). What was retrieved (ids,
scores, snippets, the sent replies, which stores answered) is the step's
detail (``email_steps.detail``): the draft step reads it from
``ctx.confirmed["retrieve"]`` and records it with the draft as its sources.
The team's knowledge (articles, saved replies, approved cases:
``email_rag.knowledge.search``) is searched with the mail's subject and body and
kept under ``knowledge``. A store that is down gives reduced context (thread and
history from MariaDB; knowledge by its words only), said in the detail and
audited (``retrieval_reduced``); it never fails the mail. Failure table:
``email_rag.indexing.retrieval``.
"""

from __future__ import annotations

from ..indexing.retrieval import Retriever
from ..knowledge.search import KnowledgeSearch
from ..llm.case_facts import sentences
from ..llm.mail_input import mail_content
from ..mail.places import countries, spelled
from .contract import StepContext, StepOutcome


def questions(subject: str, body: str) -> list[str]:
    """The mail's questions for the knowledge search: its subject and the sentences that
    ask (a question mark), else its first sentences; quoted lines left out."""
    lines = [x for x in (body or "").splitlines() if not x.lstrip().startswith(">")]
    said = sentences("\n".join(lines))
    asked = [x for x in said if "?" in x] or said[1:4]
    return [x for x in [subject or "", *asked] if len(x.split()) >= 2 or len(x.strip()) >= 6]


def with_places(found: list[dict[str, object]], named: set[str],
                fields: tuple[str, ...]) -> list[dict[str, object]]:
    """Each knowledge hit or past case with ``places``: "agree" when it names one of the
    countries the mail names (``named``: ``mail.places`` by name or city, in any of four
    languages; the candidate by name only: a city in a passage or a reply is mostly an
    address, the shop's returns centre in Hamburg), "conflict" when it names only other
    countries ("Envío a España"); none when it names no country. The embedder does not see
    that Vienna is in Austria, and a shop's knowledge is written by country (``llm.sources``
    weighs it)."""
    if not named:
        return found
    out = []
    for item in found:
        said = set(countries("\n".join(_text(item.get(f)) for f in fields), cities=False))
        out.append({**item, "places": "agree" if said & named else "conflict"} if said
                   else item)
    return out


def _text(value: object) -> str:
    return str((value.get("text") if isinstance(value, dict) else value) or "")


def knowledge(ctx: StepContext, mail: str, body: tuple[str, str], named: list[str]
              ) -> tuple[list[dict[str, object]], bool]:
    """The knowledge passages for this mail (``mail``: its subject and body; ``body``: the
    two apart; ``named``: the countries it names) and whether the search was reduced."""
    s = ctx.services.settings
    if s.knowledge_hits <= 0:
        return [], False
    search = KnowledgeSearch(ctx.services.db, ctx.services.embedder)
    hits = search.search(ctx.email.mailbox_id, mail, s.knowledge_hits, questions(*body),
                         words=" ".join(spelled(c) for c in named))
    return with_places([h.as_dict() for h in hits], set(named), ("heading", "text")), \
        hits.reduced


def run(ctx: StepContext) -> StepOutcome:
    if ctx.email.needs_reply == 0:
        return StepOutcome(detail={"skipped": "the mail needs no reply", "similar": [],
                                   "thread": [], "sender_history": [], "knowledge": [],
                                   "reduced": False})
    detail, stores = Retriever(ctx.services).for_mail(
        ctx.email.as_row(), close_bar=ctx.services.settings.draft_bar_past_reply)
    content = mail_content(ctx.email, ctx.services.settings.llm_max_input_chars)
    mail = f"{content.subject}\n{content.body}"
    named = countries(mail)
    detail["knowledge"], lexical_only = knowledge(ctx, mail, (content.subject, content.body),
                                                  named)
    detail["similar"] = with_places(detail["similar"], set(named),
                                    ("subject", "snippet", "reply"))
    events = [ctx.event("store_try_failed", {"store": name, "try": f.attempt, "error": f.error,
                                             "retry_in_s": f.retry_in_s, "purpose": "retrieval"})
              for name, r in stores.items() for f in r.failures]
    if lexical_only:
        detail["reduced"] = True
        detail["missing"] = [*detail.get("missing", []), "knowledge vectors"]
    if detail["reduced"]:
        events.append(ctx.event("retrieval_reduced", {
            "missing": detail["missing"],
            "errors": {n: r.error for n, r in stores.items() if r.error},
            "kept": {"similar": len(detail["similar"]), "thread": len(detail["thread"]),
                     "sender_history": len(detail["sender_history"]),
                     "knowledge": len(detail["knowledge"]),
                     "sender_history_source": detail["sender_history_source"]}}))
    return StepOutcome(detail=detail, events=events)
