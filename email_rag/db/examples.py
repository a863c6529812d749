"""The team's labelled examples: what people confirmed about a mail's classification.

A human action that confirms a mail's labels calls ``record`` inside its own transaction,
so the example exists exactly when the action does, and ``embed_recorded`` after its commit
(the embedder is never called while the action holds its locks):

| action (module)                          | source     | labels                           |
|------------------------------------------|------------|----------------------------------|
| staff correct the classification (desk)  | correction | the corrected values             |
| staff approve a draft (sending.review)   | approval   | the mail's current labels        |
| staff confirm "no reply" (review.no_reply) | no_reply | the mail's labels, no reply      |
| staff ask for a reply after all          | correction | the mail's labels, needs a reply |
| a history mail linked to our reply       | history    | needs_reply only (see below)     |
| (ingest.history, in the poll's batch)    |            |                                  |

One row per mail (a later confirmation replaces the labels; a history example never
replaces a person's). A history example is not a person's confirmation: our reply proves
the mail needed one, nothing tells its category or priority, so both are NULL (unknown);
it is stored without vector and embedded once its index job parsed the mail
(``embed_for_mail``; else ``embed_missing``). How the classifier weighs it:
``email_rag.classification.history_model`` (docs/history.md). The vector is the mail's
vector by the configured embedder (``mail_vectors``: the mean of its sentences' embeddings;
float32 BLOB, with ``vector_name``).

Failure table:

| situation                               | retry?           | state known? | resume?                            |
|-----------------------------------------|------------------|--------------|------------------------------------|
| embedder unavailable / not installed    | no (not here)    | yes          | stored without vector; the classify |
| at the human action                     |                  |              | step embeds it (``unembedded``)    |
| the mail has no classification yet      | -                | yes          | nothing stored (no labels to learn) |
| the transaction rolls back              | -                | yes          | no example, as no action           |
| the process dies after the commit,      | -                | yes          | the classify step embeds it        |
| before the embedding                    |                  |              | (``unembedded``)                   |
| the configured embedder changed         | -                | yes          | re-embedded by the classify step   |
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..core.index_ports import Embedder
from ..core.records import Mail, RecordedExample
from ..core.rows import FromRow, Row
from .connection import Cursor, Database
from .queries import slot_params, sql

log = logging.getLogger(__name__)
SOURCES = ("correction", "approval", "no_reply", "history")
TEXT_CHARS = 4000  # of subject + body embedded per example (and per mail to classify)
SEGMENTS = 24  # sentences (the subject first) whose embeddings are averaged per mail
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


class HasEmbedder(Protocol):
    @property
    def embedder(self) -> Embedder: ...


@dataclass(frozen=True)
class StoredExample(FromRow):
    id: int
    mailbox_id: int
    email_id: int
    source: str
    category: str | None  # None: unknown (a history example)
    priority: str | None
    needs_reply: bool | int
    embedder: str | None = None
    vector: bytes | None = None

    def array(self) -> np.ndarray | None:
        return None if self.vector is None else np.frombuffer(self.vector, dtype="<f4")


@dataclass(frozen=True)
class ExamplesVersion:
    """What changes whenever the mailbox's examples change (the worker's cache key)."""

    count: int
    max_id: int | None
    changed: datetime | None
    unembedded: bool = False  # (``state`` only) some example lacks a vector of the embedder


def example_text(subject: str | None, body: str | None) -> str:
    """The text whose embedding stands for a mail (examples and mails to classify alike)."""
    return f"{subject or ''}\n{body or ''}"[:TEXT_CHARS]


def mail_segments(subject: str | None, body: str | None) -> list[str]:
    """The pieces a mail's vector is averaged from: the subject, then the body's lines and
    sentences, non-empty, within ``TEXT_CHARS`` and at most ``SEGMENTS`` of them."""
    text = example_text(subject, body)
    first, _, rest = text.partition("\n")
    parts = [first.strip()] + [p.strip() for p in _SENTENCE_END.split(rest)]
    return [p for p in parts if p][:SEGMENTS] or [""]


def mail_vectors(embedder: Embedder, mails: Sequence[tuple[str | None, str | None]]
                 ) -> list[bytes]:
    """The vector standing for each (subject, body) in the history model, packed: the
    normalised mean of its segments' embeddings (``mail_segments``), all in one embedder
    call. One embedding of the whole text lets greetings, signatures and order numbers
    drown the sentence that says what the mail is about; on the corpus's training part
    the mean lets 50 examples decide 47 % of categories at 0.9 accuracy instead of 44 %, and
    76 % of priorities instead of 70 % (docs/local-llm.md, "Learning curve")."""
    segments = [mail_segments(s, b) for s, b in mails]
    flat = embedder.embed([p for parts in segments for p in parts])
    out, at = [], 0
    for parts in segments:
        rows = np.asarray(flat[at:at + len(parts)], dtype=np.float64)
        at += len(parts)
        out.append(pack(rows.mean(axis=0)))
    return out


def vector_name(embedder: Embedder) -> str:
    """The name stored with an example's vector: the embedder's and how the vector was made
    (``mail_vectors``), so vectors of another kind are re-embedded (``embed_missing``)."""
    return f"{embedder.name}/sentences"


def pack(vector: Any) -> bytes:
    """A vector as a float32 little-endian BLOB, L2-normalised."""
    arr = np.asarray(vector, dtype="<f4")
    norm = float(np.linalg.norm(arr))
    return (arr / norm if norm else arr).astype("<f4").tobytes()


@dataclass(frozen=True)
class LabelledMail(FromRow):
    """A mail's labels and the text its example is embedded from (``examples_mail_labels``)."""

    id: int
    mailbox_id: int | None = None
    subject: str | None = None
    body_text: str | None = None
    category: str | None = None
    priority: str | None = None
    needs_reply: bool | int | None = None
    vector_of: str | None = None  # the embedder of its example's vector, if it has one


def record(cur: Cursor, email_id: int, source: str) -> RecordedExample | None:
    """Store the mail's current labels as an example (``source``), inside the caller's
    transaction, keeping a vector it has; the caller makes its vector after its commit
    (``embed_recorded``): no embedder call while the action's rows are locked. None when
    the mail has no complete classification to learn from."""
    if source not in SOURCES:
        raise ValueError(f"unknown example source {source!r}")
    row = cur.fetchone(sql("examples_mail_labels"), {"id": email_id})
    mail = LabelledMail.from_row(row) if row else None
    if mail is None or None in (mail.category, mail.priority, mail.needs_reply):
        return None
    cur.execute(sql("examples_upsert"), {
        "mailbox_id": mail.mailbox_id, "email_id": email_id, "source": source,
        "category": mail.category, "priority": mail.priority,
        "needs_reply": bool(mail.needs_reply), "embedder": None, "vector": None})
    return RecordedExample(email_id, mail.subject, mail.body_text, mail.vector_of)


def embed_recorded(db: Database, services: HasEmbedder, example: RecordedExample | None) -> bool:
    """The vector of an example ``record`` stored, once the action's transaction committed
    (one statement; none when its vector is of the configured embedder already). True when
    one was stored. No failure here fails the action: the example stays without vector and
    the classify step embeds it."""
    if example is None:
        return False
    try:
        embedder = services.embedder
        name = vector_name(embedder)
        if example.vector_of == name:
            return False
        vector = mail_vectors(embedder, [(example.subject, example.body_text)])[0]
        db.execute(sql("examples_set_vector_of_mail"), {
            "email_id": example.email_id, "embedder": name, "vector": vector})
        return True
    except Exception as e:  # any failure here must not undo or fail a person's action
        log.warning("example of mail %s stored without vector (%s); the classify step "
                    "embeds it later", example.email_id, type(e).__name__)
        return False


def record_history(cur: Cursor, email_ids: Sequence[int]) -> None:
    """The solved cases among ``email_ids`` (answered inbound history mails) as examples of
    source ``history``, inside the poll's batch transaction (one statement)."""
    ids = sorted({int(i) for i in email_ids})
    if ids:
        cur.execute(sql("examples_record_history", ids=len(ids)), slot_params(ids=ids))


def version(db: Database, mailbox_id: int) -> ExamplesVersion:
    row = db.fetchone(sql("examples_version"), {"mailbox_id": mailbox_id}) or {}
    return ExamplesVersion(int(row.get("n") or 0), row.get("max_id"), row.get("changed"))


def state(db: Database | Cursor, mailbox_id: int, embedder: str) -> ExamplesVersion:
    """``version`` and whether ``embed_missing`` has examples to embed, in one statement
    (``db``: the connection, or the cursor of a transaction it joins)."""
    row = db.fetchone(sql("examples_state"), {"mailbox_id": mailbox_id,
                                              "embedder": embedder}) or {}
    return ExamplesVersion(int(row.get("n") or 0), row.get("max_id"), row.get("changed"),
                           bool(row.get("unembedded")))


def of_mailbox(db: Database, mailbox_id: int) -> list[StoredExample]:
    return [StoredExample.from_row(r)
            for r in db.fetchall(sql("examples_of_mailbox"), {"mailbox_id": mailbox_id})]


def embed_missing(db: Database, embedder: Embedder, mailbox_id: int, limit: int = 200) -> int:
    """Embed the mailbox's examples that have no vector of ``embedder`` (stored without
    one, or by another embedder); returns how many were embedded. The embedder's errors
    propagate (the caller goes on without them)."""
    rows = db.fetchall(sql("examples_unembedded"), {"mailbox_id": mailbox_id,
                                                    "embedder": vector_name(embedder), "limit": limit})
    return _embed(db, embedder, rows)


def embed_for_mail(db: Database, embedder: Embedder, mailbox_id: int, email_id: int,
                   in_reply_to: str | None) -> int:
    """``embed_missing`` for the examples one indexed mail completes: its own, and that of
    the mail it replies to."""
    rows = db.fetchall(sql("examples_unembedded_of_mail"), {
        "id": email_id, "mailbox_id": mailbox_id, "in_reply_to": in_reply_to or "",
        "embedder": vector_name(embedder)})
    return _embed(db, embedder, rows)


def embed_for_mails(db: Database, embedder: Embedder, mails: Sequence[Mail]) -> int:
    """``embed_for_mail`` for a batch of indexed mails, in one embedder call."""
    ids = [m.id for m in mails]
    mids = sorted({m.in_reply_to for m in mails if m.in_reply_to}) or [""]
    boxes = sorted({m.mailbox_id for m in mails if m.mailbox_id is not None}) or [0]
    if not ids:
        return 0
    rows = db.fetchall(sql("examples_unembedded_of_mails", ids=len(ids), mids=len(mids),
                           boxes=len(boxes)),
                       {"embedder": vector_name(embedder),
                        **slot_params(ids=ids, mids=mids, boxes=boxes)})
    return _embed(db, embedder, rows)


def _embed(db: Database, embedder: Embedder, rows: list[dict[str, Any]]) -> int:
    if not rows:
        return 0
    vectors = mail_vectors(embedder, [(r["subject"], r["body_text"]) for r in rows])
    with db.transaction() as cur:
        cur.executemany(sql("examples_set_vector"), [
            {"id": r["id"], "embedder": vector_name(embedder), "vector": v}
            for r, v in zip(rows, vectors, strict=True)])
    return len(rows)


def texts(db: Database, email_ids: list[int], chars: int = 600) -> dict[int, tuple[str, str]]:
    """(subject, start of the body) of the given mails, for few-shot prompts."""
    if not email_ids:
        return {}
    rows = db.fetchall(sql("examples_texts"), {"ids": ",".join(str(int(i)) for i in email_ids),
                                               "chars": chars})
    return {int(r["id"]): (r["subject"] or "", r["body"] or "") for r in rows}


def mail_labels(db: Database, email_id: int) -> Row:
    """The mail's labels and ``classification_sources`` (for the draft page's line)."""
    return db.fetchone(sql("examples_mail_sources"), {"id": email_id}) or {}
