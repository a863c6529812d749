"""The graph store: ArangoDB through ``python-arango`` (the only module importing it).

Off unless ``settings.arango_url`` is set (``Services.graph`` is then None).

The graph ``email_rag``:

| collection | kind | _key |
|---|---|---|
| people | vertex (senders, recipients) | ``p_`` + sha256(lower-case address)[:40] |
| threads | vertex | ``t_`` + sha256(thread_key)[:40] |
| mails | vertex | ``m<emails.id>`` |
| replies | vertex (our sent replies) | ``d<drafts.id>`` |
| sent | edge people -> mails | sha256(_from + _to)[:40] |
| received | edge mails -> people (To and Cc) | same |
| in_thread | edge mails -> threads | same |
| reply_to | edge mails -> mails (In-Reply-To, when we have that mail) | same |
| answered_by | edge mails -> replies | same |

Every ``_key`` is derived from our own ids, and every write is an insert
with overwrite: indexing a mail again replaces its documents, never
duplicates them.

Errors: connection refused, timeout, 5xx -> ``StoreUnavailableError``;
401/403/404 and other refusals -> ``StoreRejectedError``. The HTTP client
does not retry by itself (``retry_attempts=0``): the index policy decides.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from arango import ArangoClient
from arango.database import StandardDatabase
from arango.exceptions import ArangoClientError, ArangoServerError
from arango.http import DefaultHTTPClient

from ..core.errors import StoreRejectedError, StoreUnavailableError
from ..core.index_ports import GraphMail, HistoryMail
from ..core.jsonvalue import JsonObject, JsonValue
from ..core.redact import redact_text

T = TypeVar("T")

GRAPH = "email_rag"
VERTICES = ("people", "threads", "mails", "replies")
EDGES: dict[str, tuple[str, str]] = {
    "sent": ("people", "mails"),
    "received": ("mails", "people"),
    "in_thread": ("mails", "threads"),
    "reply_to": ("mails", "mails"),
    "answered_by": ("mails", "replies"),
}
_DUPLICATE_NAME = 1207  # ArangoDB: duplicate name (a concurrent create won)
_DUPLICATE_DB = 1207


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def person_key(address: str) -> str:
    return "p_" + _h(address.strip().lower())


def thread_key(key: str) -> str:
    return "t_" + _h(key)


def mail_key(email_id: int) -> str:
    return f"m{int(email_id)}"


def reply_key(draft_id: int) -> str:
    return f"d{int(draft_id)}"


_ADDR = re.compile(r"[^\s<>,;\"']+@[^\s<>,;\"']+")


def addresses(value: Any) -> list[str]:
    """Addresses from a header-ish value (comma list, JSON list or list)."""
    if not value:
        return []
    if isinstance(value, list | tuple):
        value = ",".join(str(v) for v in value)
    seen: dict[str, None] = {}
    for a in _ADDR.findall(str(value)):
        seen.setdefault(a.strip().lower(), None)
    return list(seen)


@dataclass(frozen=True)
class Person:
    """Vertex ``people``: a sender or recipient (the name when a mail gave one)."""

    address: str
    name: str | None = None

    @property
    def key(self) -> str:
        return person_key(self.address)

    def doc(self) -> JsonObject:
        return {"_key": self.key, "address": self.address, **({"name": self.name}
                                                               if self.name else {})}


@dataclass(frozen=True)
class Thread:
    """Vertex ``threads``."""

    thread_key: str
    mailbox_id: int

    @property
    def key(self) -> str:
        return thread_key(self.thread_key)

    def doc(self) -> JsonObject:
        return {"_key": self.key, "thread_key": self.thread_key, "mailbox_id": self.mailbox_id}


@dataclass(frozen=True)
class Reply:
    """Vertex ``replies``: one of our replies that was sent."""

    draft_id: int
    email_id: int
    sent_at: str | None = None

    @property
    def key(self) -> str:
        return reply_key(self.draft_id)

    def doc(self) -> JsonObject:
        return {"_key": self.key, "draft_id": self.draft_id, "email_id": self.email_id,
                "sent_at": self.sent_at}


@dataclass(frozen=True)
class Edge:
    """An edge document: its key is derived from its two ends (a rewrite overwrites it)."""

    from_id: str
    to_id: str
    attrs: tuple[tuple[str, JsonValue], ...] = ()  # (name, value) of its other attributes

    @property
    def key(self) -> str:
        return _h(f"{self.from_id}|{self.to_id}")

    def doc(self) -> JsonObject:
        return {"_key": self.key, "_from": self.from_id, "_to": self.to_id, **dict(self.attrs)}


@dataclass
class GraphDocuments:
    """The vertices and edges of one mail, by collection."""

    mail: GraphMail
    people: list[Person] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    sent: list[Edge] = field(default_factory=list)
    received: list[Edge] = field(default_factory=list)
    in_thread: list[Edge] = field(default_factory=list)
    reply_to: list[Edge] = field(default_factory=list)
    answered_by: list[Edge] = field(default_factory=list)

    def mail_doc(self) -> JsonObject:
        m = self.mail
        return {"_key": mail_key(m.email_id), "email_id": m.email_id, "mailbox_id": m.mailbox_id,
                "message_id": m.message_id, "subject": m.subject, "thread_key": m.thread_key,
                "from_addr": (m.from_addr or "").lower() or None, "received_at": m.received_at,
                "category": m.category}

    def by_collection(self) -> dict[str, list[JsonObject]]:
        """What is written, per collection (vertices first, then edges)."""
        return {"people": [p.doc() for p in self.people],
                "threads": [t.doc() for t in self.threads],
                "mails": [self.mail_doc()],
                "replies": [r.doc() for r in self.replies],
                **{name: [e.doc() for e in getattr(self, name)] for name in EDGES}}


def documents(mail: GraphMail) -> GraphDocuments:
    """The vertex and edge documents of one mail (pure: no I/O)."""
    docs = GraphDocuments(mail)
    m_id = f"mails/{mail_key(mail.email_id)}"
    sender = addresses(mail.from_addr)
    if sender:
        person = Person(sender[0], mail.from_name or None)
        docs.people.append(person)
        docs.sent.append(Edge(f"people/{person.key}", m_id, (("at", mail.received_at),)))
    for kind, addrs in (("to", addresses(mail.to_addrs)), ("cc", addresses(mail.cc_addrs))):
        for a in addrs:
            person = Person(a)
            if all(p.key != person.key for p in docs.people):
                docs.people.append(person)
            e = Edge(m_id, f"people/{person.key}", (("kind", kind),))
            if all(d.key != e.key for d in docs.received):
                docs.received.append(e)
    if mail.thread_key:
        t = Thread(mail.thread_key, mail.mailbox_id)
        docs.threads.append(t)
        docs.in_thread.append(Edge(m_id, f"threads/{t.key}"))
    if mail.parent_email_id:
        docs.reply_to.append(Edge(m_id, f"mails/{mail_key(mail.parent_email_id)}"))
    for r in mail.replies:
        reply = Reply(r.draft_id, mail.email_id, r.sent_at)
        docs.replies.append(reply)
        docs.answered_by.append(Edge(m_id, f"replies/{reply.key}"))
    return docs


HISTORY_AQL = """
FOR m IN 1..1 OUTBOUND @person sent
  FILTER m.email_id != @exclude AND (@mailbox == null OR m.mailbox_id == @mailbox)
  SORT m.received_at DESC
  LIMIT @limit
  LET replied = LENGTH(FOR r IN 1..1 OUTBOUND m answered_by RETURN 1) > 0
  RETURN {email_id: m.email_id, subject: m.subject, received_at: m.received_at,
          thread_key: m.thread_key, category: m.category, replied: replied}
"""


class ArangoGraph:
    """Implements ``ports.GraphStore``; connects and creates the collections lazily."""

    def __init__(self, url: str, database: str = "email_rag", user: str = "root",
                 password: str = "", timeout: float = 5.0) -> None:
        self.url = url
        self.database = database
        self.user = user
        self._password = password
        self._client = ArangoClient(
            hosts=url, resolver_max_tries=1,
            http_client=DefaultHTTPClient(request_timeout=timeout, retry_attempts=0))
        self._db: StandardDatabase | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> ArangoGraph:
        return cls(settings.arango_url, settings.arango_db, settings.arango_user,
                   settings.arango_password.get_secret_value(), settings.arango_timeout)

    def __repr__(self) -> str:  # never shows the password
        return f"ArangoGraph({redact_text(self.url)}/{self.database})"

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except ArangoServerError as e:
            text = (f"ArangoDB at {redact_text(self.url)} answered {e.http_code} to {what}: "
                    f"{redact_text(str(e.error_message or e))[:300]}")
            if e.http_code is not None and (e.http_code >= 500 or e.http_code in (408, 429)):
                raise StoreUnavailableError(text) from e
            raise StoreRejectedError(text) from e
        except (OSError, ArangoClientError) as e:  # refused, timed out (requests errors are OSError)
            raise StoreUnavailableError(
                f"ArangoDB at {redact_text(self.url)} unreachable during {what}: "
                f"{type(e).__name__}: {redact_text(str(e))[:300]}") from e

    def db(self) -> StandardDatabase:
        if self._db is None:
            self._db = self._call("connect", self._prepare)
        return self._db

    def _prepare(self) -> StandardDatabase:
        sys_db = self._client.db("_system", username=self.user, password=self._password,
                                 verify=False)
        try:
            if not sys_db.has_database(self.database):
                sys_db.create_database(self.database)
        except ArangoServerError as e:
            # no rights on _system (the database was made by an admin), or a concurrent create
            if e.http_code not in (401, 403, 409) and e.error_code != _DUPLICATE_DB:
                raise
        db = self._client.db(self.database, username=self.user, password=self._password,
                             verify=False)
        for name in VERTICES:
            _create(lambda n=name: db.create_collection(n), db.has_collection(name))
        for name in EDGES:
            _create(lambda n=name: db.create_collection(n, edge=True), db.has_collection(name))
        if not db.has_graph(GRAPH):
            _create(lambda: db.create_graph(GRAPH, edge_definitions=[
                {"edge_collection": e, "from_vertex_collections": [f],
                 "to_vertex_collections": [t]} for e, (f, t) in EDGES.items()]), False)
        return db

    def upsert_mail(self, mail: GraphMail) -> None:
        db = self.db()
        docs = documents(mail).by_collection()

        def write() -> None:
            for name, batch in docs.items():
                if not batch:
                    continue
                # people are merged (a name learnt from one mail is kept); the rest replaced
                mode = "update" if name == "people" else "replace"
                db.collection(name).insert_many(batch, overwrite_mode=mode,
                                                raise_on_document_error=True)
        self._call(f"write mail {mail.email_id}", write)

    def forget_mail(self, mail: GraphMail, address: str | None,
                    children: Sequence[int] = ()) -> None:
        """Erasure (email_rag.privacy.erasure): delete the mail's documents as ``upsert_mail``
        wrote them (the mail, its replies, every edge it made), the reply_to edges of the
        mails that answer it (``children``: their ids) and the person ``address`` (None: no
        person vertex, as for retention). Deleting by key: a document already gone is no
        error, so a repeat is harmless. Other people's vertices and the (hash-keyed) thread
        vertex stay."""
        db = self.db()
        docs = documents(mail).by_collection()
        docs["people"] = [p for p in docs["people"]
                          if address is not None and p["_key"] == person_key(address)]
        m_id = f"mails/{mail_key(mail.email_id)}"
        docs["reply_to"] = [*docs.get("reply_to", []), *(
            Edge(f"mails/{mail_key(c)}", m_id).doc() for c in children)]
        docs.pop("threads")

        def delete() -> None:
            for name in [*EDGES, "replies", "mails", "people"]:
                keys = [d["_key"] for d in docs.get(name, [])]
                if keys:
                    db.collection(name).delete_many(keys, silent=True)
        self._call(f"erase mail {mail.email_id}", delete)

    def forget_people(self, addresses: Sequence[str]) -> None:
        """Erasure: delete the person vertices of ``addresses`` (retention, once no stored
        mail names them). A vertex already gone is no error."""
        keys = [person_key(a) for a in addresses]
        if keys:
            db = self.db()
            self._call(f"erase {len(keys)} person vertex(es)",
                       lambda: db.collection("people").delete_many(keys, silent=True))

    def sender_history(self, address: str, *, exclude_email_id: int | None = None,
                       limit: int = 10, mailbox_id: int | None = None) -> list[HistoryMail]:
        found = addresses(address)
        if not found:
            return []
        db = self.db()

        def query() -> list[HistoryMail]:
            cursor = db.aql.execute(HISTORY_AQL, bind_vars={
                "person": f"people/{person_key(found[0])}", "exclude": exclude_email_id or -1,
                "mailbox": mailbox_id, "limit": int(limit)})
            return [HistoryMail.from_row(d) for d in cursor]  # type: ignore[union-attr]
        return self._call("sender history", query)

    def server_version(self) -> str:
        """The server version, without creating anything (health check)."""
        sys_db = self._client.db("_system", username=self.user, password=self._password,
                                 verify=False)
        return str(self._call("version", sys_db.version))

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing a dead session may fail
            pass
        self._db = None


def _create(fn: Callable[[], Any], exists: bool) -> None:
    if exists:
        return
    try:
        fn()
    except ArangoServerError as e:
        if e.error_code != _DUPLICATE_NAME and e.http_code != 409:
            raise
