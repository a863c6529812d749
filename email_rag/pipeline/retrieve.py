"""Pipeline step ``retrieve``: the context the draft is written from.

Runs on the vector queue (``needs_vectors=True``). What was retrieved (ids,
scores, snippets, the sent replies, which stores answered) is the step's
detail (``email_steps.detail``): the draft step reads it from
``ctx.confirmed["retrieve"]`` and records it with the draft as its sources.
A store that is down gives reduced context (thread and history from
MariaDB), said in the detail and audited (``retrieval_reduced``); it never
fails the mail. Failure table: ``email_rag.indexing.retrieval``.
"""

from __future__ import annotations

from ..indexing.retrieval import Retriever
from .contract import StepContext, StepOutcome


def run(ctx: StepContext) -> StepOutcome:
    if ctx.email.needs_reply == 0:
        return StepOutcome(detail={"skipped": "the mail needs no reply", "similar": [],
                                   "thread": [], "sender_history": [], "reduced": False})
    detail, stores = Retriever(ctx.services).for_mail(ctx.email.as_row())
    events = [ctx.event("store_try_failed", {"store": name, "try": f.attempt, "error": f.error,
                                             "retry_in_s": f.retry_in_s, "purpose": "retrieval"})
              for name, r in stores.items() for f in r.failures]
    if detail["reduced"]:
        events.append(ctx.event("retrieval_reduced", {
            "missing": detail["missing"],
            "errors": {n: r.error for n, r in stores.items() if r.error},
            "kept": {"similar": len(detail["similar"]), "thread": len(detail["thread"]),
                     "sender_history": len(detail["sender_history"]),
                     "sender_history_source": detail["sender_history_source"]}}))
    return StepOutcome(detail=detail, events=events)
