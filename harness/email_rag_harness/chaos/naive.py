"""The counter-check's pipeline: the product with its safeguards taken out, for the chaos
harness's naive column only.

The naive column must show the defects the safeguards prevent (duplicate mails, drafts
and sends, reopened mail, lost events), or the harness is blind. Each class here is the
product class with one guarantee removed, through a public seam the product offers (a
class attribute naming a query, a public method, a constructor argument), never by
overriding a private method:

| guarantee (product) | removed by |
|---|---|
| a status moves only along its record's transition table, from the status the caller acts on | ``NaiveMailStore``, ``NaiveDraftStore``, ``NaiveSendStore``, ``NaiveJobStates``: any move (``allowed``, ``check_expected``) |
| one approval per draft: the draft row is locked, an approved draft is not approved again | ``NaiveDraftStore``: no row lock (``lock_query``); any move re-approves |
| one send attempt per draft | ``NaiveSendStore``: every approval re-arms the send (``insert_query``) |
| an attempted send is reconciled (journal, Sent folder), never sent blindly | ``NaiveSendStore`` (``attempt_query``), the product's ``SendService`` built with ``Unconfirmed.RESEND`` (at least once) |
| a newer draft supersedes the open one | ``NaiveDraftStore``: the worker leaves earlier drafts open |
| one worker runs an entry, only when it is queued or failed and due | ``NaiveJobStore`` (``claim_query``) |
| a confirmed step is not run again | ``NaivePipelineRunner`` (``skips``) |
| a mail is stored once (dedup on its natural key) | ``NaivePoller``: every delivery and re-poll looks new |

``NaiveServices`` builds all of them; the harness's naive column uses it in its own
process (staff, admin acts) and starts every other process of the column (workers, the
scheduler, the IDLE watcher, admin CLI calls) through ``email_rag_harness.chaos.naive_cli``,
which runs the real CLI with ``NaiveServices``. The naive queries live in
``naive.sql`` beside this module, loaded into the named-query registry when this module
is imported.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from email_rag.core.records import Job
from email_rag.core.retry import retry_policy
from email_rag.core.settings import MailboxConfig
from email_rag.core.states import Actor
from email_rag.db.queries import add_query_file
from email_rag.db.stores import DraftStore, JobStates, MailStore, SendStore, Stores
from email_rag.ingest.poller import Poller
from email_rag.ingest.store import PrepareOptions
from email_rag.jobs.store import JobStore
from email_rag.mail.headers import MailHeaders
from email_rag.pipeline.contract import StepSpec
from email_rag.pipeline.runner import PipelineRunner
from email_rag.sending.sender import SendService, Unconfirmed
from email_rag.wiring.services import Services

QUERIES = Path(__file__).with_name("naive.sql")
add_query_file(QUERIES)


class AnyMove:
    """A store that writes any move: no transition table, no expected status."""

    def allowed(self, current: Any, wanted: Any) -> bool:
        return True

    def check_expected(self, record_id: Any, current: Any, wanted: Any,
                       expect: Iterable[Any] | None) -> None:
        return None


class NaiveMailStore(AnyMove, MailStore):
    pass


class NaiveDraftStore(AnyMove, DraftStore):
    lock_query = "drafts_get"  # approval reads the draft without locking it

    def supersede_open(self, cur: Any, email_id: int, actor: str, reason: str) -> list[int]:
        """The worker's new draft leaves the earlier open drafts open (a re-run draft step
        adds a duplicate); staff's Regenerate still supersedes."""
        if actor == Actor.WORKER:
            return []
        return super().supersede_open(cur, email_id, actor, reason)


class NaiveSendStore(AnyMove, SendStore):
    insert_query = "sends_insert_naive"
    attempt_query = "sends_mark_attempted_naive"


class NaiveJobStates(AnyMove, JobStates):
    pass


def naive_stores() -> Stores:
    return Stores(NaiveMailStore(), NaiveDraftStore(), NaiveSendStore(), NaiveJobStates())


@dataclass
class NaiveJobStore(JobStore):
    claim_query: str = "jobs_claim_naive"


class NaivePipelineRunner(PipelineRunner):
    def skips(self, spec: StepSpec, confirmed: dict[str, Any], target: str,
              job: Job) -> bool:
        """Confirmed steps of the entry's own queue run again (a step of another queue is
        still skipped: the entry would be handed off there instead)."""
        return spec.step in confirmed and target != job.queue


def resending_send_service(services: Services) -> SendService:
    """The product's send service, at least once: an attempted send, or one whose relay
    answer was lost, is sent again blindly (no journal, no Sent folder)."""
    return SendService(services, unconfirmed=Unconfirmed.RESEND)


def fresh_keys(headers: MailHeaders, raw: bytes, size: int | None) -> tuple[str, str]:
    """A new key for every delivery: duplicates and re-polls are stored again."""
    key = uuid.uuid4().hex * 2
    return key, key


class NaivePoller(Poller):
    def prepare_options(self, config: MailboxConfig, max_mail: int) -> PrepareOptions:
        return dataclasses.replace(super().prepare_options(config, max_mail), keys=fresh_keys)


class NaiveServices(Services):
    """``Services`` that build the naive variants above (rebuilt the same way after a
    ``reset``)."""

    @cached_property
    def stores(self) -> Stores:
        return naive_stores()

    @cached_property
    def jobs(self) -> JobStore:
        return NaiveJobStore(self.db, retry_policy(self.settings), self.stores)

    def pipeline_runner(self, pipeline: list[StepSpec],
                        also_runs: frozenset[str] = frozenset()) -> PipelineRunner:
        return NaivePipelineRunner(self, pipeline, also_runs)

    def send_service(self) -> SendService:
        return resending_send_service(self)

    def poller(self, **options: Any) -> Poller:
        options.setdefault("imap_factory", self.imap_mailbox)  # the mailbox's own login
        return NaivePoller(self, **options)
