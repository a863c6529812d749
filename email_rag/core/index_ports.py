"""The interfaces the indexing domain code sees; the adapters implement them.

``Embedder`` (email_rag.adapters.embeddings), ``VectorStore``
(email_rag.adapters.vectors, qdrant-client) and ``GraphStore``
(email_rag.adapters.graph, python-arango). This module imports no client
library, so importing it is cheap.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Protocol

from .jsonvalue import JsonObject
from .rows import FromRow, set_field

# Fixed namespace: point ids must never change between releases (a changed id
# would duplicate every point on the next re-index).
POINT_NAMESPACE = uuid.UUID("6f1c7a52-3d0e-5b8e-9a43-0e2a61d5c0b7")


def point_id(email_id: int, chunk: int) -> str:
    """Deterministic Qdrant point id of one chunk of one mail (UUID5)."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"email:{int(email_id)}:chunk:{int(chunk)}"))


@dataclass(frozen=True)
class ChunkPayload(FromRow):
    """What a vector point carries about its chunk and mail (the Qdrant payload): enough to
    filter by mailbox and to show a hit without MariaDB. ``from_row`` reads a stored
    payload (keys it does not name are ignored); ``as_dict`` is what is written."""

    email_id: int
    mailbox_id: int | None = None
    chunk: int = 0
    subject: str | None = None
    thread_key: str | None = None
    from_addr: str | None = None
    category: str | None = None
    language: str | None = None
    received_at: str | None = None  # ISO text
    has_sent_reply: bool | None = None  # when indexed; MariaDB decides "sent" (retrieval)
    embedder: str | None = None  # what produced the vector
    source: str | None = None  # "body" or "attachment" (attachment content is untrusted)
    text: str | None = None  # the chunk's first characters (snippet)

    def as_dict(self) -> JsonObject:
        return asdict(self)


@dataclass(frozen=True)
class VectorPoint:
    email_id: int
    chunk: int
    vector: list[float]
    payload: ChunkPayload

    @property
    def id(self) -> str:
        return point_id(self.email_id, self.chunk)


@dataclass(frozen=True)
class VectorHit:
    email_id: int
    chunk: int
    score: float
    payload: ChunkPayload


@dataclass(frozen=True)
class MailToIndex(FromRow):
    """The columns of a mail that indexing and retrieval read (a row of ``emails``; never
    its raw bytes)."""

    id: int
    mailbox_id: int
    subject: str | None = None
    body_text: str | None = None
    attachment_text: str | None = None
    thread_key: str | None = None
    message_id: str | None = None
    in_reply_to: str | None = None
    from_addr: str | None = None
    from_name: str | None = None
    to_addrs: str | list[str] | None = None  # comma-separated text or a JSON list
    cc_addrs: str | list[str] | None = None
    received_at: datetime | str | None = None
    category: str | None = None
    language: str | None = None

    def __post_init__(self) -> None:
        set_field(self, "id", int(self.id))
        set_field(self, "mailbox_id", int(self.mailbox_id))

    @classmethod
    def of(cls, mail: MailToIndex | Mapping[str, Any]) -> MailToIndex:
        """The record, from a caller's ``emails`` row or the record itself."""
        return mail if isinstance(mail, MailToIndex) else cls.from_row(mail)


@dataclass(frozen=True)
class GraphReply:
    """One of our replies to a mail that was sent (graph vertex ``replies``)."""

    draft_id: int
    sent_at: str | None = None


@dataclass(frozen=True)
class HistoryMail(FromRow):
    """One earlier mail of a sender (retrieval context): from the graph (``replied``) or from
    MariaDB (``status``); ``as_dict`` gives the fields its source knows."""

    email_id: int
    subject: str | None = None
    received_at: str | None = None
    thread_key: str | None = None
    category: str | None = None
    replied: bool | None = None  # graph: one of our replies to it was sent
    status: str | None = None  # MariaDB: its business status

    def as_dict(self) -> JsonObject:
        d = asdict(self)
        if self.replied is None:
            del d["replied"]
        if self.status is None:
            del d["status"]
        return d


@dataclass
class GraphMail:
    """What the graph stores about one mail: people, thread, replies."""

    email_id: int
    mailbox_id: int
    message_id: str | None
    subject: str | None
    thread_key: str | None
    from_addr: str | None
    from_name: str | None
    to_addrs: list[str] = field(default_factory=list)
    cc_addrs: list[str] = field(default_factory=list)
    received_at: str | None = None
    category: str | None = None
    parent_email_id: int | None = None  # the mail it answers (In-Reply-To), if we have it
    replies: list[GraphReply] = field(default_factory=list)  # our sent replies


class Embedder(Protocol):
    name: str  # says what produced the vectors (stored in the payload)
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def close(self) -> None: ...


class VectorStore(Protocol):
    mode: str  # "local" (a folder, one owner process) or "server" (a URL)

    def open(self) -> None: ...

    def replace_mail(self, email_id: int, points: Sequence[VectorPoint]) -> int: ...

    def replace_mails(self, points: Mapping[int, Sequence[VectorPoint]]) -> int: ...

    def search(self, vector: Sequence[float], *, mailbox_id: int | None = None,
               exclude_email_id: int | None = None, limit: int = 10) -> list[VectorHit]: ...

    def count(self, email_id: int | None = None) -> int: ...

    def close(self) -> None: ...


class GraphStore(Protocol):
    def upsert_mail(self, mail: GraphMail) -> None: ...

    def forget_mail(self, mail: GraphMail, address: str | None,
                    children: Sequence[int] = ()) -> None: ...

    def forget_people(self, addresses: Sequence[str]) -> None: ...

    def sender_history(self, address: str, *, exclude_email_id: int | None = None,
                       limit: int = 10, mailbox_id: int | None = None) -> list[HistoryMail]: ...

    def close(self) -> None: ...
