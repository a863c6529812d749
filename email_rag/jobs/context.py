"""What the domain code reads of a process's services, as a port.

The stages and the desk below ``wiring/`` (jobs, indexing, ingest, pipeline, sending, review)
receive a ``ServiceContext`` and name nothing of the layer that builds it: the composition
root (``email_rag.wiring.services.Services``) is one, a test's double is another. Each member
is a store, a port or a value: the database and its status stores, the job store and the
queue, the audit log, the indexing ports, the LLM port, the mailboxes and their SMTP / Sent
folder connections.
"""

from __future__ import annotations

from typing import Protocol

from ..adapters.queue import JobQueue
from ..core.index_ports import Embedder, GraphStore, VectorStore
from ..core.ports import ChatModel, MailSender, SentFolder
from ..core.settings import MailboxConfig, Settings
from ..db.audit import AuditLog
from ..db.connection import Database
from ..db.mailbox_configs import MailboxDirectory
from ..db.stores import Stores
from .store import JobStore


class ServiceContext(Protocol):
    settings: Settings
    db: Database  # MariaDB
    stores: Stores  # the status stores, one per record type
    jobs: JobStore  # the queue entries in MariaDB
    queue: JobQueue  # the Redis queue the workers take job ids from
    audit: AuditLog
    mailboxes: MailboxDirectory  # the mailboxes' settings, polled or not
    embedder: Embedder
    vectors: VectorStore
    graph: GraphStore | None  # None when the graph is off
    llm: ChatModel

    def mailbox(self, name: str) -> MailboxConfig:
        """A mailbox's settings by name (KeyError when unknown)."""
        ...

    def mail_sender_for(self, mailbox_name: str) -> MailSender:
        """The SMTP server a mailbox's replies leave through."""
        ...

    def sent_folder(self, mailbox_name: str) -> SentFolder:
        """A new connection to a mailbox's Sent folder."""
        ...
