"""The vector store: Qdrant through ``qdrant-client`` (the only module importing it).

Same code for both modes:

- local (``qdrant_url`` empty): Qdrant's embedded mode in a folder
  (``qdrant_path``). The client takes an exclusive lock on the folder; a
  second process (or a second client in the same process) gets
  ``RuntimeError: Storage folder ... is already accessed``. That becomes
  ``StoreLockedError`` naming the holder (we write ``.email-rag-owner.json``
  next to Qdrant's lock when we open the folder). Nothing is written by the
  refused opener, so the holder's data is untouched. In local mode exactly
  one process owns the folder: the worker started with ``--with-vectors``.
- server (``qdrant_url`` set): any number of processes.

Point ids are deterministic (``ports.point_id``: UUID5 of mail id and chunk
number), so indexing a mail again overwrites its points; chunks beyond the
new chunk count are deleted, so a shorter text leaves no stale chunk.

Errors: unreachable, timed out, 5xx/429 -> ``StoreUnavailableError``; a
refused request (4xx, wrong vector size) -> ``StoreRejectedError``. In local
mode the points are kept in a SQLite file per collection, with a write-ahead
log (``_write_ahead_log``): a write that finds it locked by another process
("database is locked" after SQLite's 5 s busy wait) is ``StoreUnavailableError``
too (the chaos harness's Qdrant outage); reading it at open still works.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from ..core.errors import (
    StoreLockedError,
    StoreNotOwnedError,
    StoreRejectedError,
    StoreUnavailableError,
)
from ..core.index_ports import ChunkPayload, VectorHit, VectorPoint
from ..core.redact import redact_text
from .embeddings import embedder_name

log = logging.getLogger(__name__)

OWNER_FILE = ".email-rag-owner.json"


def holder(path: Path | str) -> dict[str, Any] | None:
    """Who holds a local Qdrant folder, from our owner file (None if unknown or free).

    Adds ``alive``: whether that pid still runs (on this host).
    """
    f = Path(path) / OWNER_FILE
    try:
        info = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    alive = None
    if info.get("host") == socket.gethostname():
        try:
            os.kill(int(info.get("pid", 0)), 0)
            alive = True
        except (OSError, ValueError):
            alive = False
    info["alive"] = alive
    return info


def describe_holder(path: Path | str) -> str:
    info = holder(path)
    if not info:
        return "another process (unknown: no owner file)"
    state = {True: "running", False: "no longer running", None: "on another host"}[info["alive"]]
    return (f"pid {info.get('pid')} on {info.get('host')} ({info.get('command', '?')}, "
            f"since {info.get('since', '?')}, {state})")


_local_open_forbidden = False


def forbid_local_open() -> None:
    """This process is not the vector owner (a plain worker, the scheduler): it must never
    open a local Qdrant folder, not even lazily - a plain worker that did once kept the
    folder from its owner for good, and the pipeline stood still. Forked children (RQ's
    work-horses) inherit the decision."""
    global _local_open_forbidden
    _local_open_forbidden = True


class QdrantStore:
    """Implements ``ports.VectorStore``. Opens lazily; ``open()`` opens now."""

    def __init__(self, *, url: str = "", api_key: str = "", path: Path | str = "var/qdrant",
                 collection: str = "emails", dim: int = 384, timeout: float = 10.0,
                 embedder: str = "") -> None:
        self.embedder = embedder  # the embedder this process writes with ("": not checked)
        self.url = url
        self.api_key = api_key
        self.path = Path(path)
        self.collection = collection
        self.dim = dim
        self.timeout = timeout
        self.mode = "server" if url else "local"
        self._client: QdrantClient | None = None
        self._ready = False

    @classmethod
    def from_settings(cls, settings: Any) -> QdrantStore:
        return cls(url=settings.qdrant_url, api_key=settings.qdrant_api_key.get_secret_value(),
                   path=settings.qdrant_path, collection=settings.qdrant_collection,
                   dim=settings.vector_dim, timeout=settings.qdrant_timeout,
                   embedder=embedder_name(settings))

    @property
    def where(self) -> str:
        return redact_text(self.url) if self.url else f"local folder {self.path}"

    def __repr__(self) -> str:
        return f"QdrantStore({self.where}, collection={self.collection})"

    # --- lifecycle ---
    def open(self) -> None:
        """Connect (server) or take the folder (local), and make sure the collection exists."""
        if self._client is None:
            self._client = self._connect()
        if not self._ready:
            with self._translate("create collection"):
                self._ensure_collection(self._client)
                if self.mode == "local":
                    self._write_ahead_log(self._client)
            self._ready = True

    def _connect(self) -> QdrantClient:
        if self.mode == "local" and _local_open_forbidden:
            raise StoreNotOwnedError(
                f"this process ({os.getpid()}) is not the owner of the local Qdrant folder "
                f"{self.path} and never opens it: only the worker started with --with-vectors "
                "(or search/reindex when the folder is free) does. A vector step reached a "
                "plain worker: it belongs on the vector queue.", path=str(self.path))
        if self.mode == "server":
            return QdrantClient(url=self.url, api_key=self.api_key or None, timeout=self.timeout,
                                check_compatibility=False)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            client = QdrantClient(path=str(self.path))
        except RuntimeError as e:
            if "already accessed" in str(e):
                raise StoreLockedError(
                    f"the local Qdrant folder {self.path} is held by {describe_holder(self.path)}; "
                    "only one process may open it (the worker started with --with-vectors). "
                    "Nothing was written.", path=str(self.path)) from e
            raise StoreUnavailableError(f"local Qdrant at {self.path}: {e}") from e
        except (OSError, ValueError, sqlite3.Error) as e:
            raise StoreUnavailableError(f"local Qdrant at {self.path} cannot be opened: {e}") from e
        self._write_owner()
        return client

    def _write_owner(self) -> None:
        argv = list(sys.argv)
        if argv and argv[0].endswith("__main__.py"):  # python -m email_rag ...
            argv[0] = "email-rag"
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "command": " ".join(Path(a).name if i == 0 else a
                                    for i, a in enumerate(argv))[:200],
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            tmp = self.path / f"{OWNER_FILE}.{os.getpid()}"
            tmp.write_text(json.dumps(info))
            tmp.replace(self.path / OWNER_FILE)
        except OSError as e:  # informative only
            log.warning("could not write %s: %s", self.path / OWNER_FILE, e)

    def _ensure_collection(self, client: QdrantClient) -> None:
        if client.collection_exists(self.collection):
            info = client.get_collection(self.collection)
            size = getattr(info.config.params.vectors, "size", None)
            made_by = self._stored_embedder(client)
            if (size is not None and size != self.dim) or (
                    made_by and self.embedder and made_by != self.embedder):
                raise StoreRejectedError(
                    f"Qdrant collection {self.collection!r} holds vectors of size {size} made "
                    f"by {made_by or 'an unknown embedder'}; this process embeds with "
                    f"{self.embedder or 'another embedder'} ({self.dim} dimensions). Vectors of "
                    "two embedders are never mixed: set EMAIL_RAG_QDRANT_COLLECTION to a new "
                    "name and run `email-rag reindex --all` (docs/indexing.md), or set the "
                    "embedder back.")
            return
        client.create_collection(self.collection, vectors_config=models.VectorParams(
            size=self.dim, distance=models.Distance.COSINE))
        if self.mode == "server":  # payload indexes have no effect in local mode
            for key, schema in (("mailbox_id", models.PayloadSchemaType.INTEGER),
                                ("email_id", models.PayloadSchemaType.INTEGER)):
                client.create_payload_index(self.collection, key, field_schema=schema)

    def _write_ahead_log(self, client: QdrantClient) -> None:
        """Local mode: the collection's SQLite file keeps a write-ahead log. The embedded
        Qdrant commits every point on its own; in SQLite's default rollback journal each
        commit creates, syncs and deletes a journal besides syncing the file (12 ms per point
        on a busy disk here), with the log one append and one sync (2 ms), as durable
        (``synchronous=FULL``: a commit is on disk when it returns). Another connection's
        EXCLUSIVE lock still refuses our writes; reads go on."""
        try:
            storage = client._client.collections[self.collection].storage.storage
        except (AttributeError, KeyError):
            return  # a qdrant-client that keeps its points differently
        storage.execute("PRAGMA journal_mode=WAL")
        storage.execute("PRAGMA synchronous=FULL")

    def _stored_embedder(self, client: QdrantClient) -> str | None:
        """The embedder named in the payload of a stored point (None: empty or unnamed). One
        embedder writes a collection (the check above), so one point tells."""
        points, _ = client.scroll(self.collection, limit=1, with_payload=["embedder"],
                                  with_vectors=False)
        for p in points:
            name = (p.payload or {}).get("embedder")
            if name:
                return str(name)
        return None

    def close(self) -> None:
        client, self._client, self._ready = self._client, None, False
        if client is None:
            return
        try:
            client.close()
        except Exception:  # noqa: BLE001 - a dead client may fail to close
            pass
        if self.mode == "local":
            info = holder(self.path)
            if info and info.get("pid") == os.getpid() and info.get("host") == socket.gethostname():
                with contextlib.suppress(OSError):
                    (self.path / OWNER_FILE).unlink()

    @property
    def client(self) -> QdrantClient:
        self.open()
        assert self._client is not None
        return self._client

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        try:
            yield
        except (StoreUnavailableError, StoreRejectedError):
            raise
        except UnexpectedResponse as e:
            text = f"Qdrant at {self.where} answered {e.status_code} to {what}: " \
                   f"{redact_text(str(e.content[:300] if e.content else ''))}"
            if e.status_code is not None and (e.status_code >= 500 or e.status_code in (408, 429)):
                raise StoreUnavailableError(text) from e
            raise StoreRejectedError(text) from e
        except ResponseHandlingException as e:  # connection refused, timeout, broken response
            raise StoreUnavailableError(
                f"Qdrant at {self.where} unreachable during {what}: {redact_text(str(e))}") from e
        except OSError as e:
            raise StoreUnavailableError(f"Qdrant at {self.where} failed during {what}: {e}") from e
        except ValueError as e:  # local mode: wrong input (vector size ...)
            raise StoreRejectedError(f"Qdrant at {self.where} refused {what}: {e}") from e
        except RuntimeError as e:  # local mode: closed instance and the like
            raise StoreUnavailableError(f"Qdrant at {self.where} failed during {what}: {e}") from e
        except sqlite3.Error as e:  # local mode: its SQLite storage locked or failing
            raise StoreUnavailableError(
                f"Qdrant at {self.where}: its storage failed during {what}: {e}") from e

    # --- operations ---
    def replace_mail(self, email_id: int, points: Sequence[VectorPoint]) -> int:
        """Upsert the mail's chunks (deterministic ids) and delete its chunks beyond them.
        Points made by another embedder than this store's are refused, never written."""
        other = {p.payload.embedder for p in points} - {None, "", self.embedder}
        if self.embedder and other:
            raise StoreRejectedError(
                f"Qdrant collection {self.collection!r} takes vectors of {self.embedder}; "
                f"these were made by {', '.join(sorted(other))}: not written")
        client = self.client
        with self._translate("upsert"):
            if points:
                client.upsert(self.collection, wait=True, points=[
                    models.PointStruct(id=p.id, vector=p.vector, payload=p.payload.as_dict())
                    for p in points])
            stale = self._local_stale_ids(int(email_id), len(points))
            if stale is None:
                client.delete(self.collection, wait=True, points_selector=models.FilterSelector(
                    filter=models.Filter(must=[
                        _match("email_id", int(email_id)),
                        models.FieldCondition(key="chunk", range=models.Range(gte=len(points)))])))
            elif stale:
                client.delete(self.collection, wait=True,
                              points_selector=models.PointIdsList(points=stale))
        return len(points)

    def replace_mails(self, points: Mapping[int, Sequence[VectorPoint]]) -> int:
        """``replace_mail`` for many mails at once: one upsert of all their points, then
        their chunks beyond the new counts deleted (local: one pass over the collection;
        server: one filtered delete). Returns the points written."""
        everyone = [p for ps in points.values() for p in ps]
        other = {p.payload.embedder for p in everyone} - {None, "", self.embedder}
        if self.embedder and other:
            raise StoreRejectedError(
                f"Qdrant collection {self.collection!r} takes vectors of {self.embedder}; "
                f"these were made by {', '.join(sorted(other))}: not written")
        keep = {int(e): len(ps) for e, ps in points.items()}
        client = self.client
        with self._translate("upsert"):
            if everyone:
                client.upsert(self.collection, wait=True, points=[
                    models.PointStruct(id=p.id, vector=p.vector, payload=p.payload.as_dict())
                    for p in everyone])
            stale = self._local_stale_ids_of(keep)
            if stale is None and keep:
                client.delete(self.collection, wait=True, points_selector=models.FilterSelector(
                    filter=models.Filter(should=[models.Filter(must=[
                        _match("email_id", e),
                        models.FieldCondition(key="chunk", range=models.Range(gte=n))])
                        for e, n in sorted(keep.items())])))
            elif stale:
                client.delete(self.collection, wait=True,
                              points_selector=models.PointIdsList(points=stale))
        return len(everyone)

    def _local_stale_ids_of(self, keep: Mapping[int, int]) -> list[Any] | None:
        """``_local_stale_ids`` for many mails in one pass (mail id -> chunks kept)."""
        if self.mode != "local":
            return None
        try:
            coll = self.client._client.collections[self.collection]
            ids, payloads, deleted = coll.ids, coll.payload, coll.deleted
            out = []
            for pid, idx in ids.items():
                if deleted[idx]:
                    continue
                n = keep.get(payloads[idx].get("email_id"))
                if n is not None and _number(payloads[idx].get("chunk")) \
                        and payloads[idx]["chunk"] >= n:
                    out.append(pid)
            return out
        except (AttributeError, KeyError, IndexError, TypeError):
            return None

    def _local_stale_ids(self, email_id: int, keep: int) -> list[Any] | None:
        """Local mode: the ids of the mail's chunks ``>= keep``, found without a filter.

        A filtered delete in local mode evaluates the filter in Python against every
        point (no payload index): at 2,000 mails it was most of the index step. The
        embedded collection holds its points in memory; reading their payloads for the
        same two conditions (``email_id ==``, ``chunk >=``) is a plain loop, ~100x
        cheaper, and finds exactly what the filter would. None (use the filter) in
        server mode or if this qdrant-client keeps its points differently.
        """
        if self.mode != "local":
            return None
        try:
            coll = self.client._client.collections[self.collection]
            ids, payloads, deleted = coll.ids, coll.payload, coll.deleted
            return [pid for pid, idx in ids.items()
                    if not deleted[idx] and payloads[idx].get("email_id") == email_id
                    and _number(payloads[idx].get("chunk")) and payloads[idx]["chunk"] >= keep]
        except (AttributeError, KeyError, IndexError, TypeError):
            return None

    def search(self, vector: Sequence[float], *, mailbox_id: int | None = None,
               exclude_email_id: int | None = None, limit: int = 10) -> list[VectorHit]:
        hits = self._local_search(vector, mailbox_id, exclude_email_id, limit)
        if hits is not None:
            return hits
        must = [_match("mailbox_id", int(mailbox_id))] if mailbox_id is not None else []
        must_not = [_match("email_id", int(exclude_email_id))] if exclude_email_id else []
        return self._query(vector, limit, models.Filter(must=must or None,
                                                        must_not=must_not or None))

    def _query(self, vector: Sequence[float], limit: int,
               flt: models.Filter | None) -> list[VectorHit]:
        """Qdrant's own query (server mode; local mode where ``_local_search`` cannot run)."""
        client = self.client
        with self._translate("search"):
            result = client.query_points(
                self.collection, query=list(vector), limit=limit, with_payload=True,
                query_filter=flt)
        hits = [(ChunkPayload.from_row(p.payload), float(p.score)) for p in result.points
                if p.payload]
        return [VectorHit(int(c.email_id), int(c.chunk or 0), score, c) for c, score in hits]

    def _local_search(self, vector: Sequence[float], mailbox_id: int | None,
                      exclude_email_id: int | None, limit: int) -> list[VectorHit] | None:
        """Local mode: the search Qdrant's embedded mode makes (exact cosine over every
        point), done on the collection's in-memory matrix, without its per-point costs.

        Embedded Qdrant has no payload index: a filter is evaluated in Python against every
        point, and each returned point is built as a pydantic model with a deep copy of its
        payload (at 2,000 mails most of the retrieve step). Here the scores are one matrix
        product; the points are walked best first (ties: the older point first) and the two
        conditions (mailbox, excluded mail) read from the payloads in place, only until
        ``limit`` hits are found; only those become records. The same hits and scores as
        the filtered query (``tests/integration/test_fast_paths_keep_their_guarantees.py``).
        None (use the query) in server mode or if this qdrant-client keeps its points
        differently.
        """
        if self.mode != "local":
            return None
        try:
            coll = self.client._client.collections[self.collection]
            payloads = coll.payload
            n = len(payloads)
            matrix = coll.vectors[""][:n]
            dead = np.asarray(coll.deleted[:n], dtype=bool) \
                | np.asarray(coll.deleted_per_vector[""][:n], dtype=bool)
            if coll.get_vector_params("").distance != models.Distance.COSINE:
                return None
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            return None
        query = np.asarray(vector, dtype=np.float32)
        # the collection's vectors are unit length (cosine collections normalise on upsert)
        scores = matrix @ (query / max(float(np.linalg.norm(query)), 1e-12))
        scores[dead] = -np.inf
        hits: list[VectorHit] = []
        block = min(n, limit * 2 + 20)
        while block:
            if block < n:
                top = np.argpartition(-scores, block - 1)[:block]
            else:
                top = np.arange(n)
            hits = []
            for idx in sorted(top.tolist(), key=lambda i: (-scores[i], i)):
                payload = payloads[idx]
                if scores[idx] == -np.inf:
                    break
                if not payload or (mailbox_id is not None and payload.get("mailbox_id") != int(mailbox_id)) \
                        or (exclude_email_id and payload.get("email_id") == int(exclude_email_id)):
                    continue
                c = ChunkPayload.from_row(payload)
                hits.append(VectorHit(int(c.email_id), int(c.chunk or 0), float(scores[idx]), c))
                if len(hits) >= limit:
                    return hits
            if block >= n:
                break
            block = min(n, block * 4)  # the nearest were mostly other mails: look further
        return hits

    def count(self, email_id: int | None = None) -> int:
        flt = models.Filter(must=[_match("email_id", int(email_id))]) if email_id else None
        client = self.client
        with self._translate("count"):
            return int(client.count(self.collection, count_filter=flt, exact=True).count)

    def probe(self) -> str:
        """Health without side effects: a server is asked for its collections; a local
        folder is NOT opened (that would take it from its owner), only its holder read."""
        if self.mode == "local":
            if self._client is not None:
                return f"local folder {self.path}, open in this process"
            info = holder(self.path)
            if info and info.get("alive") is not False:
                return f"local folder {self.path}, held by {describe_holder(self.path)}"
            return f"local folder {self.path}, not held by a running process"
        client = self._client or self._connect()
        try:
            with self._translate("list collections"):
                names = [c.name for c in client.get_collections().collections]
        finally:
            if self._client is None:
                client.close()
        have = "present" if self.collection in names else "not created yet"
        return f"server {self.where}, collection {self.collection!r} {have}"

    def ping(self) -> str:
        client = self.client
        with self._translate("list collections"):
            names = [c.name for c in client.get_collections().collections]
        return f"{self.mode}; collections: {', '.join(names) or '(none)'}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _match(key: str, value: int) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))
