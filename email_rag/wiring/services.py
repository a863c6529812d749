"""The services of one process, built lazily from settings.

``Services.reset()`` drops every cached client (used after a MariaDB outage:
reconnect, clear caches, rebuild).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..adapters.queue import JobQueue
from ..core.index_ports import Embedder, GraphStore, VectorStore
from ..core.settings import Settings, get_settings
from ..db import Database
from ..db.audit import AuditLog

if TYPE_CHECKING:
    from ..adapters.llm import LLMClient
    from ..core.ports import MailSender, SentFolder
    from ..db.stores import Stores
    from ..ingest.poller import Poller
    from ..jobs.store import JobStore
    from ..pipeline.contract import StepSpec
    from ..pipeline.runner import PipelineRunner
    from ..sending.sender import SendService


class Services:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()

    @cached_property
    def db(self) -> Database:
        return Database.from_settings(self.settings)

    @cached_property
    def audit(self) -> AuditLog:
        return AuditLog(self.db, self.settings.audit_spool_path)

    # Indexing stores: built on first use. In local Qdrant mode only the vector worker
    # (and CLI commands that find the folder free) touch ``vectors``; see README.
    @cached_property
    def embedder(self) -> Embedder:
        from ..adapters.embeddings import build_embedder

        return build_embedder(self.settings)

    @cached_property
    def vectors(self) -> VectorStore:
        from ..adapters.vectors import QdrantStore  # imports qdrant-client: only when used

        return QdrantStore.from_settings(self.settings)

    @cached_property
    def graph(self) -> GraphStore | None:
        """The ArangoDB graph, or None when it is off (no arango_url)."""
        if not self.settings.arango_url:
            return None
        from ..adapters.graph import ArangoGraph

        return ArangoGraph.from_settings(self.settings)

    @cached_property
    def stores(self) -> Stores:
        """The status stores (one per record type)."""
        from ..db.stores import Stores

        return Stores.build()

    @cached_property
    def jobs(self) -> JobStore:
        """The queue-entry store (rebuilt with the connection after ``reset``)."""
        from ..core.retry import retry_policy
        from ..jobs.store import JobStore

        return JobStore(self.db, retry_policy(self.settings), self.stores)

    # The workers' domain objects, built here so that one process builds them one way.
    def pipeline_runner(self, pipeline: list[StepSpec],
                        also_runs: frozenset[str] = frozenset()) -> PipelineRunner:
        """Runs a mail's pipeline steps (the ``process_email`` handler)."""
        from ..pipeline.runner import PipelineRunner

        return PipelineRunner(self, pipeline, also_runs)

    def send_service(self) -> SendService:
        """Sends approved drafts (the ``send_draft`` handler)."""
        from ..sending.sender import SendService

        return SendService(self)

    def poller(self, **options: Any) -> Poller:
        """A mailbox poller (``Poller``'s keyword options: owner, stop, ...)."""
        from ..ingest.poller import Poller

        return Poller(self, **options)

    @cached_property
    def queue(self) -> JobQueue:
        return JobQueue(self.settings.redis_url, self.settings.job_timeout)

    @cached_property
    def mail_sender(self) -> MailSender:
        """The SMTP adapter behind the ``MailSender`` port."""
        from ..adapters.smtp import SmtpConfig, SmtpSender

        return SmtpSender(SmtpConfig.from_settings(self.settings))

    def sent_folder(self, mailbox_name: str) -> SentFolder:
        """A new IMAP connection to a mailbox's Sent folder (``SentFolder`` port); the
        send job keeps one per mailbox."""
        from ..adapters.imap import sent_folder

        return sent_folder(self.settings.mailbox(mailbox_name), self.settings.imap_timeout)

    @cached_property
    def coordination(self) -> Any:
        """A Redis client for coordination between processes (LLM call slots, job
        heartbeats), apart from the queue's connection (whose round trips are counted)."""
        import redis

        return redis.Redis.from_url(self.settings.redis_url, socket_connect_timeout=3,
                                    socket_timeout=10)

    @cached_property
    def llm(self) -> LLMClient:
        from ..adapters.llm import LLMClient  # imports openai (~0.5 s): only when used
        from ..llm.slots import EndpointSlots

        s = self.settings
        client = LLMClient.from_settings(s)
        if s.llm_max_concurrent > 0:
            client.slots = EndpointSlots(self.coordination, s.llm_base_url, s.llm_max_concurrent,
                                         lease=s.llm_timeout + min(30.0, s.llm_timeout),
                                         wait=s.slot_wait)
        return client

    def reset(self) -> None:
        """Close and forget every cached client; the next access rebuilds it.

        A local Qdrant folder is kept open: it is not a connection but the one-owner lock
        of the vector worker, which keeps it while it runs. Closing it on a MariaDB outage
        (found by the chaos harness) let another process take the folder meanwhile, and
        the worker's next index step failed on a store it had owned.
        """
        for name, value in list(vars(self).items()):
            if name == "settings" or (name == "vectors" and getattr(value, "mode", "") == "local"):
                continue
            close = getattr(value, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - a dead client may fail to close
                    pass
            del self.__dict__[name]

    def close(self) -> None:
        self.reset()
        vectors = self.__dict__.pop("vectors", None)
        if vectors is not None:
            vectors.close()
