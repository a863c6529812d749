"""The counter-check columns (seed 003): the product hardened except for ONE safeguard, one
column per safeguard, beside the hardened and the naive column, so the report shows which
safeguard prevents which defect class.

| column | the one safeguard removed | through (the product's public seams, naive.py) |
|---|---|---|
| ``no_idempotency_keys`` | one send attempt per draft (the draft's send key): every approval arms a send | ``KeylessSendStore`` (``insert_query``) |
| ``no_claim_fence`` | one worker runs an entry, only when it is queued or failed and due | ``NaiveJobStore`` (``claim_query``) |
| ``no_reconciliation`` | an attempted send is reconciled (journal, Sent folder) before any resend | ``UnreconciledSendStore`` (``attempt_query``) and the ``SendService`` with ``Unconfirmed.RESEND`` |
| ``no_dedup`` | a mail is stored once (its natural key) | ``NaivePoller`` |

Everything else is the product's own class. Each column's processes run
``python -m email_rag_harness.chaos.counter_cli`` with ``COUNTER_CHECK`` naming the column
(a variable of the harness, never read by the product).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from email_rag.core.retry import retry_policy
from email_rag.db.stores import DraftStore, JobStates, MailStore, SendStore, Stores
from email_rag.ingest.poller import Poller
from email_rag.jobs.store import JobStore
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services

from .naive import NaiveJobStore, NaivePoller, resending_send_service

VARIABLE = "COUNTER_CHECK"  # the column a counter_cli process builds


class KeylessSendStore(SendStore):
    insert_query = "sends_insert_naive"  # no "one attempt per draft"


class UnreconciledSendStore(SendStore):
    attempt_query = "sends_mark_attempted_naive"  # an attempted send is taken again


def _stores(sends: SendStore) -> Stores:
    return Stores(MailStore(), DraftStore(), sends, JobStates())


class WithoutIdempotencyKeys(Services):
    @cached_property
    def stores(self) -> Stores:
        return _stores(KeylessSendStore())


class WithoutClaimFence(Services):
    @cached_property
    def jobs(self) -> JobStore:
        return NaiveJobStore(self.db, retry_policy(self.settings), self.stores)


class WithoutReconciliation(Services):
    @cached_property
    def stores(self) -> Stores:
        return _stores(UnreconciledSendStore())

    def send_service(self) -> SendService:
        return resending_send_service(self)


class WithoutDedup(Services):
    def poller(self, **options: Any) -> Poller:
        options.setdefault("imap_factory", self.imap_mailbox)  # the mailbox's own login
        return NaivePoller(self, **options)


# column -> (what builds its services, the safeguard it removes, as the report says it)
COLUMNS: dict[str, tuple[type[Services], str]] = {
    "no_idempotency_keys": (WithoutIdempotencyKeys, "idempotency keys"),
    "no_claim_fence": (WithoutClaimFence, "claim fence"),
    "no_reconciliation": (WithoutReconciliation, "reconciliation before resend"),
    "no_dedup": (WithoutDedup, "dedup"),
}


def services_class(column: str) -> type[Services]:
    if column not in COLUMNS:
        raise SystemExit(f"{VARIABLE}={column!r}: not a counter-check column "
                         f"({', '.join(COLUMNS)})")
    return COLUMNS[column][0]
