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
from ..core.states import Actor
from ..db import Database
from ..db.audit import AuditEvent, AuditLog

if TYPE_CHECKING:
    from ..adapters.imap import IdleSession, ImapMailbox
    from ..adapters.llm import LLMClient
    from ..adapters.oauth2 import TokenSource
    from ..core.ports import MailSender, SentFolder
    from ..core.settings import MailboxConfig
    from ..db.mailbox_configs import MailboxDirectory
    from ..db.oauth_tokens import TokenStore
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
    def mailboxes(self) -> MailboxDirectory:
        """The mailboxes: EMAIL_RAG_MAILBOXES (read-only) and those added in the web admin or
        the CLI (MariaDB), re-read within a poll interval (db/mailbox_configs.py)."""
        from ..db.mailbox_configs import MailboxConfigStore, MailboxDirectory
        from ..db.oauth_tokens import TokenCipher

        s = self.settings
        store = MailboxConfigStore(self.db, lambda: TokenCipher.from_settings(s))
        return MailboxDirectory(s.mailboxes, store, max_age=min(30.0, s.poll_interval_seconds))

    def mailbox(self, name: str) -> MailboxConfig:
        """A mailbox's settings by name, polled or not (KeyError when unknown)."""
        return self.mailboxes.get(name)

    @cached_property
    def audit(self) -> AuditLog:
        return AuditLog(self.db, self.settings.audit_spool_path)

    # Indexing stores: built on first use. In local Qdrant mode only the vector worker
    # (and CLI commands that find the folder free) touch ``vectors``; see docs/states.md (workers).
    @cached_property
    def embedder(self) -> Embedder:
        from ..adapters.embeddings import RecentEmbeddings, build_embedder

        return RecentEmbeddings(build_embedder(self.settings))

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
        """A mailbox poller (``Poller``'s keyword options: owner, stop, ...); its IMAP
        connections log in with each mailbox's own credentials (``imap_mailbox``)."""
        from ..ingest.poller import Poller

        options.setdefault("imap_factory", self.imap_mailbox)
        return Poller(self, **options)

    @cached_property
    def queue(self) -> JobQueue:
        return JobQueue(self.settings.redis_url, self.settings.job_timeout)

    @cached_property
    def mail_sender(self) -> MailSender:
        """The global relay (SMTP adapter behind the ``MailSender`` port)."""
        from ..adapters.smtp import SmtpConfig, SmtpSender

        return SmtpSender(SmtpConfig.from_settings(self.settings))

    def mail_sender_for(self, mailbox_name: str) -> MailSender:
        """The SMTP server a mailbox's replies leave through: its own (``smtp`` in its
        settings: host, security, auth, OAuth2 token) or else the global relay."""

        try:
            mb = self.mailbox(mailbox_name)
        except KeyError:
            return self.mail_sender
        return self.mail_sender_of(mb)

    def mail_sender_of(self, mb: MailboxConfig) -> MailSender:
        """``mail_sender_for`` of these settings (a mailbox not saved yet: its check)."""
        from ..adapters.smtp import SmtpConfig, SmtpSender

        if mb.smtp is None:
            return self.mail_sender
        senders = self.__dict__.setdefault("_smtp_senders", {})
        cached = senders.get(mb.name)
        if cached is None or cached[0] is not mb:  # settings changed: a new sender
            ident, s = mb.smtp, self.settings
            auth = ident.auth or mb.auth
            user = ident.username or (mb.username if auth != "password" else "")
            cached = senders[mb.name] = (mb, SmtpSender(SmtpConfig(
                ident.host, ident.port, user, ident.password.get_secret_value(),
                timeout=s.smtp_timeout, security=ident.security, ca_file=ident.ca_file,
                auth=auth, tokens=self.token_source_of(mb) if auth != "password"
                else None)))
        return cached[1]

    def sent_folder(self, mailbox_name: str) -> SentFolder:
        """A new IMAP connection to a mailbox's Sent folder (``SentFolder`` port); the
        send job keeps one per mailbox."""
        from ..adapters.imap import sent_folder

        mb = self.mailbox(mailbox_name)
        return sent_folder(mb, self.settings.imap_timeout, self.token_source_of(mb))

    def imap_mailbox(self, config: MailboxConfig, timeout: float | None = None) -> ImapMailbox:
        """An IMAP connection (not yet open) to a mailbox, with its OAuth2 token source."""
        from ..adapters.imap import ImapMailbox

        return ImapMailbox(config, self.settings.imap_timeout if timeout is None else timeout,
                           self.token_source_of(config))

    def idle_session(self, config: MailboxConfig, folder: str, timeout: float) -> IdleSession:
        """An IDLE connection to one folder of a mailbox, with its OAuth2 token source."""
        from ..adapters.imap import IdleSession

        return IdleSession(config, folder, timeout, self.token_source_of(config))

    # --- OAuth2 ---
    @cached_property
    def oauth_tokens(self) -> TokenStore:
        """The mailboxes' OAuth2 tokens in MariaDB, encrypted (needs oauth_token_key)."""
        from ..db.oauth_tokens import TokenCipher, TokenStore

        return TokenStore(self.db, TokenCipher.from_settings(self.settings))

    def token_source(self, mailbox_name: str) -> TokenSource | None:
        """The mailbox's OAuth2 access tokens (one source per mailbox and process, so its
        token is reused across polls and sends); None for a password mailbox."""
        try:
            mb = self.mailbox(mailbox_name)
        except KeyError:
            return None
        return self.token_source_of(mb)

    def token_source_of(self, mb: MailboxConfig) -> TokenSource | None:
        """``token_source`` of these settings (kept while the settings are the same)."""
        from ..adapters.oauth2 import (
            ClientCredentialsSource,
            OAuthClient,
            RefreshJournal,
            RefreshTokenSource,
        )

        uses_oauth = mb.auth != "password" or (mb.smtp is not None and mb.smtp.auth not in
                                                ("", "password"))
        if mb.oauth is None or not uses_oauth:
            return None
        mailbox_name = mb.name
        sources = self.__dict__.setdefault("_token_sources", {})
        if mailbox_name in sources and sources[mailbox_name][0] is mb:
            return sources[mailbox_name][1]
        s, o = self.settings, mb.oauth
        client = OAuthClient(o.token_url, o.client_id, o.secret(), tuple(o.scopes),
                             s.oauth_timeout)
        def waited(detail: dict[str, object]) -> None:  # a token endpoint's Retry-After
            self.audit.record(AuditEvent(Actor.SYSTEM, "mailbox", mailbox_name,
                                         "oauth_retry_after", detail=detail))

        if o.grant == "client_credentials":
            source: TokenSource = ClientCredentialsSource(
                client, s.oauth_refresh_skew_seconds, s.oauth_max_retry_after, waited)
        else:
            seed = ""
            if o.refresh_token_file:
                from pathlib import Path

                seed = Path(o.refresh_token_file).read_text().strip()
            store = self.oauth_tokens
            journal = RefreshJournal(s.oauth_journal_dir, store.cipher.encrypt,
                                     store.cipher.decrypt)
            source = RefreshTokenSource(mailbox_name, client, store, journal,
                                        s.oauth_refresh_skew_seconds, seed,
                                        s.oauth_max_retry_after, waited)
        sources[mailbox_name] = (mb, source)
        return source

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
