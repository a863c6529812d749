"""Pipeline step ``index``: the mail into the vector store and the graph store.

Runs on the vector queue (``needs_vectors=True``): with a local Qdrant folder
only the worker started with ``--with-vectors`` runs it. The step is always
confirmed: a store that stays unavailable makes the mail ``partially_indexed``
(``index_missing`` names it, audit event ``partially_indexed`` with the
errors) and processing continues with reduced context; the periodic sync
(``email_rag.indexing.sync``) fills the gap later. The policy and its failure
table are in ``email_rag.indexing.indexer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.records import Mail
from ..core.states import IndexStatus
from ..indexing.indexer import Indexer, SentReply, sent_replies
from .contract import StepContext, StepOutcome

if TYPE_CHECKING:
    from ..db.connection import Cursor
    from ..jobs.context import ServiceContext


def replies_read_ahead(cur: Cursor, mail: Mail, _svc: ServiceContext) -> list[SentReply]:
    """The mail's sent replies (the vector payload's ``has_sent_reply``), read with the mail
    at the start of the run (``StepSpec.read_ahead``: no transaction of their own)."""
    return sent_replies(cur, mail.id)


def run(ctx: StepContext) -> StepOutcome:
    replies = ctx.read_ahead if isinstance(ctx.read_ahead, list) else None
    result = Indexer(ctx.services).index(ctx.email.as_row(), replies=replies)
    status = result.status
    events = [ctx.event(name, detail) for name, detail in result.try_events()]
    if status == IndexStatus.PARTIALLY_INDEXED:
        events.append(ctx.event(
            "partially_indexed",
            {"missing": result.missing, "errors": result.errors(),
             "next": "the periodic sync (email-rag reindex) re-indexes the missing store(s)"},
            from_state=ctx.email.index_status, to_state=str(status)))
    elif status != ctx.email.index_status:
        events.append(ctx.event("indexed", {"stores": {s: r.state for s, r in
                                                       result.stores.items()}},
                                from_state=ctx.email.index_status, to_state=str(status)))
    return StepOutcome(
        detail=result.detail(),
        email_updates={"index_status": str(status),
                       "index_missing": ",".join(result.missing) or None},
        events=events)
