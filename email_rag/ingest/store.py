"""One fetched batch -> one MariaDB transaction.

``prepare`` turns a fetched mail into the row to store (never raises): it
reads the headers only, computes the dedup and thread keys and decides what
kind of row it is:

  kind       | when                                   | status    | job?
  -----------|----------------------------------------|-----------|-----
  normal     | headers readable                       | received  | yes
  no_reply   | loop guard: our own mail, auto-reply,  | no_reply  | no (parsed inline,
             | bulk, list, bounce, calendar scheduling |           |  nothing else to do)
  too_large  | above the size limit (headers fetched) | manual    | no
  failed     | no header fields at all                | failed    | no
  reused_id  | a stored mail has its Message-ID but   | manual    | no (kept for a human,
             | other content (set by store_batch)     |           |  never dropped)
  missing_body | the server listed the UID but gave no | manual  | no (``missing_body_mail``)
             | body in missing_uid_polls polls        |           |
  history    | sent before the mailbox's cut-off      | history   | index only (history
  sent       | a reply of ours in the Sent folder     | history   |  queue; ``history``)

Each row also records whom a reply goes to and why (``addresses.choose_reply``:
``reply_addr``, ``reply_rule``).

``store_batch`` then writes, in ONE transaction: the mail rows (INSERT IGNORE ...
RETURNING, one bulk round trip per chunk: the unique (mailbox_id, dedup_key, content_hash)
makes exact duplicates no-ops; the same Message-ID with other content is a new
row for a human), the job rows of the new mails (``jobs.store.create_jobs``: INSERT
IGNORE on the unique job_key, each audited ``queued``), the cursor advance, the lease renewal (fence) and the audit events.
A crash before the commit leaves nothing behind and the next poll fetches the
same UIDs again; a crash after it leaves everything, and the cursor says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from ..core.ports import FetchedMail
from ..core.records import Job
from ..core.rows import FromRow, set_field
from ..core.states import Actor, IndexStatus, JobKind, MailStatus, ParseStatus
from ..db import Database, slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import BUSY_TRIES, Cursor, repeat_when_busy
from ..jobs.store import NewJob, create_jobs, mark_enqueued
from ..mail import mime
from ..mail.addresses import ReplyChoice, choose_reply
from ..mail.headers import (
    MailHeaders,
    clean,
    clip_bytes,
    content_hash,
    dedup_key,
    legacy_keys,
    loop_guard,
    parse_headers,
    sha256,
    thread_key,
)
from .mailbox_state import renew_lease

log = logging.getLogger(__name__)

# what new rows change elsewhere in the batch's transaction: (cursor, new rows) -> events
LinkNew = Callable[[Cursor, list[tuple[int, "PreparedMail"]]], list[AuditEvent]]

EMAIL_COLUMNS = 32
# the parameter names of one row of ``ingest_insert_emails`` (``slot_params(rows=[row])``)
_ROW_KEYS = tuple(slot_params(rows=[tuple(range(EMAIL_COLUMNS))]))
MAX_ROWS_PER_STATEMENT = 500
TEXT_BYTES = 60_000  # TEXT columns hold 65,535 bytes


@dataclass(frozen=True)
class PreparedMail:
    """A fetched mail as the row to store; a change (``reused``) is a new record."""

    uid: int
    raw: bytes  # what is stored in emails.raw (headers only when too large)
    size: int
    headers: MailHeaders
    dedup_key: str
    thread_key: str
    kind: str  # normal | no_reply | too_large | failed | reused_id
    status: MailStatus
    content_hash: str = ""
    reply: ReplyChoice | None = None
    status_reason: str | None = None
    parse_status: ParseStatus = ParseStatus.PENDING
    parse_error: str | None = None
    auto_reason: str | None = None
    body_text: str | None = None
    body_html: str | None = None
    attachments: str | None = None
    attachment_text: str | None = None
    reused_of: int | None = None  # kind reused_id: the stored mail with this Message-ID
    direction: str = "in"  # out: a reply of ours (the Sent folder)
    answered_via: str | None = None  # flag: the server marked it \Answered

    @property
    def needs_job(self) -> bool:
        return self.kind in ("normal", "history", "sent")

    @property
    def indexed(self) -> bool:
        """Its job indexes it (the others are recorded as index-skipped)."""
        return self.needs_job

    @cached_property
    def legacy(self) -> tuple[str, str]:
        """(dedup key, content hash) as rows were stored before the hash covered the MIME
        labels (``headers.legacy_keys``), computed once and only when needed."""
        if not self.headers.ok:
            return self.dedup_key, self.content_hash
        return legacy_keys(self.raw, self.size)

    def parsed(self, parsed: mime.ParsedMail) -> PreparedMail:
        """With the parse of a mail no job parses (it is parsed here, like every row)."""
        return replace(self, parse_status=parsed.parse_status, parse_error=parsed.reason,
                       body_text=parsed.body_text, body_html=parsed.body_html,
                       attachments=parsed.attachments_json())


def mail_keys(headers: MailHeaders, raw: bytes, size: int | None) -> tuple[str, str]:
    """A mail's natural key: (dedup key, content hash), unique per mailbox among stored
    mails, so a duplicate delivery or a re-poll finds the mail already stored."""
    return dedup_key(headers, raw, size), content_hash(headers, raw, size)


@dataclass
class PrepareOptions:
    message_id_domain: str
    own_addresses: frozenset[str] = frozenset()
    max_mail_bytes: int = 25_000_000
    max_attachment_bytes: int = 10_000_000
    list_headers: bool = True  # settings.loop_guard_list_headers
    keys: Callable[[MailHeaders, bytes, int | None], tuple[str, str]] = mail_keys


def prepare(mail: FetchedMail, opts: PrepareOptions) -> PreparedMail:
    """The row for one fetched mail. Never raises: bad input becomes a failed row."""
    try:
        return _prepare(mail, opts)
    except Exception as e:  # noqa: BLE001 - one bad mail must not stop the batch
        log.exception("could not prepare UID %s; stored as failed", mail.uid)
        key = dedup_key(MailHeaders(ok=False), mail.raw)
        reason = f"poller could not read the mail: {type(e).__name__}: {e}"[:1000]
        return PreparedMail(mail.uid, mail.raw, mail.size, MailHeaders(ok=False, reason=reason),
                            key, key, "failed", MailStatus.FAILED, key, None, reason,
                            ParseStatus.FAILED, reason)


def _prepare(mail: FetchedMail, opts: PrepareOptions) -> PreparedMail:
    headers = parse_headers(mail.raw)
    key, chash = opts.keys(headers, mail.raw, mail.size)
    tkey = thread_key(headers, key)
    if not headers.ok:
        reason = f"unparseable: {headers.reason}"
        return PreparedMail(mail.uid, mail.raw, mail.size, headers, key, tkey, "failed",
                            MailStatus.FAILED, chash, None, reason, ParseStatus.FAILED,
                            headers.reason)
    reply = choose_reply(headers.from_addrs, headers.reply_to, opts.own_addresses,
                         reply_to_field=headers.reply_to_field, from_field=headers.from_field)
    too_large = mail.headers_only or mail.size > opts.max_mail_bytes
    auto = loop_guard(headers, opts.message_id_domain, opts.own_addresses, mail.raw,
                      opts.list_headers)
    if auto:
        # nothing else processes this mail: listed, its attachments' text is not read
        parsed = mime.parse_mail(mail.raw, size=mail.size, headers_only=too_large,
                                 max_mail_bytes=opts.max_mail_bytes,
                                 max_attachment_bytes=opts.max_attachment_bytes, extract=False,
                                 headers=headers)
        return PreparedMail(mail.uid, mail.raw, mail.size, headers, key, tkey, "no_reply",
                            MailStatus.NO_REPLY, chash, reply, f"loop guard: {auto}",
                            parsed.parse_status, parsed.reason, auto, parsed.body_text,
                            parsed.body_html, parsed.attachments_json())
    if too_large:
        reason = mime.too_large_reason(mail.size, opts.max_mail_bytes)
        return PreparedMail(mail.uid, mail.raw, mail.size, headers, key, tkey, "too_large",
                            MailStatus.MANUAL, chash, reply,
                            f"too large to process automatically: {reason}",
                            ParseStatus.TOO_LARGE, reason)
    return PreparedMail(mail.uid, mail.raw, mail.size, headers, key, tkey, "normal",
                        MailStatus.RECEIVED, chash, reply)


def _row(mailbox_id: int, folder: str, uidvalidity: int, p: PreparedMail) -> tuple[Any, ...]:
    h = p.headers
    sent_at: datetime | None = h.sent_at
    reply = p.reply
    return (
        mailbox_id, p.dedup_key, p.content_hash, clean(h.message_id, 998) or None,
        clean(folder, 255),
        uidvalidity, p.uid, p.thread_key, clean(h.in_reply_to, 998) or None,
        clip_bytes(" ".join(h.references), TEXT_BYTES) or None,
        clean(h.from_addr, 320) or None, clean(h.from_name, 320) or None,
        clip_bytes(", ".join(h.to_addrs), TEXT_BYTES) or None,
        clip_bytes(", ".join(h.cc_addrs), TEXT_BYTES) or None,
        clean(reply.addr, 320) if reply and reply.addr else None,
        clean(reply.rule, 500) if reply else None,
        clean(h.subject, 998) or None, sent_at, p.raw, p.size,
        str(p.parse_status), clip_bytes(clean(p.parse_error), TEXT_BYTES) or None,
        clean(p.auto_reason, 100) or None, str(p.status),
        clip_bytes(clean(p.status_reason), TEXT_BYTES) or None,
        p.body_text, p.body_html, p.attachments, p.attachment_text,
        # only mails that get a job are indexed; the others are recorded as skipped
        str(IndexStatus.PENDING if p.indexed else IndexStatus.SKIPPED),
        p.direction, p.answered_via,
    )


@dataclass
class MissingUids:
    """What a batch changes in ``missing_uids`` (UIDs listed without a body), audited."""

    seen: list[tuple[int, int]] = field(default_factory=list)  # (uid, misses): still missing
    cleared: list[tuple[int, str, int]] = field(default_factory=list)  # (uid, event, misses)
    limit: int = 3

    def __bool__(self) -> bool:
        return bool(self.seen or self.cleared)


def missing_body_mail(uid: int, misses: int, t: BatchTarget) -> PreparedMail:
    """The row of a mail the server listed but never returned: kept for a human."""
    key = sha256(f"missing-uid:{t.mailbox_id}:{t.folder}:{t.uidvalidity}:{uid}")
    reason = (f"the IMAP server listed UID {uid} in {t.folder} but returned no body in "
              f"{misses} polls; the mail may be damaged on the server: a human checks the "
              "mailbox")
    return PreparedMail(uid, b"", 0, MailHeaders(ok=False, reason=reason), key, key,
                        "missing_body", MailStatus.MANUAL, key, None, reason,
                        ParseStatus.FAILED, reason)


@dataclass(frozen=True)
class StoredKey(FromRow):
    """A stored mail's natural key (``ingest_insert_emails`` RETURNING, ``ingest_existing_*``)."""

    id: int
    dedup_key: str
    content_hash: str = ""

    def __post_init__(self) -> None:
        set_field(self, "id", int(self.id))
        set_field(self, "content_hash", self.content_hash or "")

    @property
    def natural_key(self) -> tuple[str, str]:
        return self.dedup_key, self.content_hash


@dataclass(frozen=True)
class RawMail(FromRow):
    """A stored mail's raw bytes (``ingest_raw_for_hash``: rows stored before the hash)."""

    id: int
    raw: bytes = b""
    raw_size: int = 0

    def __post_init__(self) -> None:
        set_field(self, "id", int(self.id))
        set_field(self, "raw", bytes(self.raw or b""))
        set_field(self, "raw_size", int(self.raw_size or 0))


@dataclass(frozen=True)
class MissingUid(FromRow):
    """A UID the server listed without a body in ``misses`` polls (``missing_uids``)."""

    uid: int
    misses: int

    def __post_init__(self) -> None:
        set_field(self, "uid", int(self.uid))
        set_field(self, "misses", int(self.misses))


def read_missing(db: Cursor | Database, t: BatchTarget) -> dict[int, int]:
    """The target folder's UIDs still missing a body: UID -> polls that missed it."""
    rows = db.fetchall(sql("ingest_missing_uids"), {"mailbox_id": t.mailbox_id,
                                                    "folder": t.folder,
                                                    "uidvalidity": t.uidvalidity})
    return {m.uid: m.misses for m in MissingUid.from_rows(rows)}


@dataclass
class BatchResult:
    new: list[tuple[int, PreparedMail]] = field(default_factory=list)
    duplicates: list[tuple[int, PreparedMail]] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)  # the queue entries of the new mails


@dataclass
class BatchTarget:
    mailbox_id: int
    mailbox_name: str
    folder: str
    uidvalidity: int
    queue_name: str
    lease_owner: str | None = None
    lease_seconds: float = 300.0
    statement_bytes: int = 4_000_000  # raw bytes per multi-row INSERT (max_allowed_packet)
    history_queue: str = "email-rag-history"  # the index-only jobs of history mail


def store_batch(db: Database, target: BatchTarget, prepared: Sequence[PreparedMail],
                last_uid: int, enqueued: Sequence[int] = (),
                missing: MissingUids | None = None, link: LinkNew | None = None) -> BatchResult:
    """Mail rows, job rows, cursor, lease renewal and audit events in one transaction.

    ``enqueued``: jobs of the previous batch that reached Redis; their ``enqueued_at``
    is set here too, which saves a commit per batch (a crash before it leaves it NULL:
    redispatch then finds the job pending in Redis and leaves it alone).
    ``link``: what the new rows change elsewhere, in this transaction (a bounce moves the
    send attempt it names: email_rag/ingest/bounces.py); returns its audit events.
    """
    with db.transaction() as cur:
        if target.lease_owner:
            renew_lease(cur, target.mailbox_id, target.lease_owner, target.lease_seconds)
        result = _insert_mails(cur, target, prepared)
        job_events: list[AuditEvent] = []  # written with the batch's other events
        _insert_jobs(cur, target, result, job_events)
        cur.execute(sql("ingest_advance_cursor"),
                    {"mailbox_id": target.mailbox_id, "folder": target.folder,
                     "uidvalidity": target.uidvalidity, "last_uid": last_uid})
        events = job_events + _events(target, result)
        if link is not None:
            events += link(cur, result.new)
        if missing:
            events += write_missing(cur, target, missing)
        write_events(cur, events)
        mark_enqueued(cur, enqueued)
    return result


def write_missing(cur: Cursor, t: BatchTarget, missing: MissingUids) -> list[AuditEvent]:
    """Record UIDs still missing and clear recovered / given-up / gone ones; their events."""
    where = {"mailbox_id": t.mailbox_id, "folder": t.folder, "uidvalidity": t.uidvalidity}
    events = []
    for uid, misses in missing.seen:
        cur.execute(sql("ingest_missing_uid_seen"), {**where, "uid": uid, "misses": misses})
        events.append(AuditEvent(Actor.POLLER, "mailbox", t.mailbox_name, "uid_missing", detail={
            "folder": t.folder, "uid": uid, "uidvalidity": t.uidvalidity, "misses": misses,
            "limit": missing.limit,
            "action": "listed without a body: the cursor stays below it, fetched again"}))
    for uid, event, misses in missing.cleared:
        cur.execute(sql("ingest_missing_uid_clear"), {**where, "uid": uid})
        events.append(AuditEvent(Actor.POLLER, "mailbox", t.mailbox_name, event, detail={
            "folder": t.folder, "uid": uid, "uidvalidity": t.uidvalidity, "misses": misses}))
    return events


def store_batch_retrying(db: Database, target: BatchTarget, prepared: Sequence[PreparedMail],
                         last_uid: int, enqueued: Sequence[int] = (),
                         attempts: int = BUSY_TRIES, missing: MissingUids | None = None,
                         link: LinkNew | None = None) -> BatchResult:
    """``store_batch``, with a deadlock or lock wait timeout repeated (the whole transaction
    was rolled back, so a repeat is safe; with the lease held this should not happen)."""
    return repeat_when_busy(
        lambda: store_batch(db, target, prepared, last_uid, enqueued, missing, link),
        "batch transaction", tries=attempts, logger=log)


def _chunks(prepared: Sequence[PreparedMail], max_bytes: int) -> list[list[PreparedMail]]:
    chunks: list[list[PreparedMail]] = [[]]
    size = 0
    for p in prepared:
        if chunks[-1] and (size + len(p.raw) > max_bytes
                           or len(chunks[-1]) >= MAX_ROWS_PER_STATEMENT):
            chunks.append([])
            size = 0
        chunks[-1].append(p)
        size += len(p.raw)
    return [c for c in chunks if c]


def _insert_mails(cur: Cursor, t: BatchTarget, prepared: Sequence[PreparedMail]) -> BatchResult:
    """Insert the new mails; sort out exact duplicates and reused Message-IDs.

    ``known``: (dedup key -> [(content hash, id)]) of the stored mails with the batch's
    keys, grown as rows are inserted. A mail whose key and hash are known is a duplicate;
    whose key is known with another hash reuses a Message-ID: it is stored for a human
    (``reused``). Two mails of one batch with one key and different content are
    inserted in two rounds, so the second one can name the first one's id.
    """
    result = BatchResult()
    known = _known(cur, t, prepared)
    pending = list(prepared)
    dup_later: list[PreparedMail] = []
    while pending:
        round_rows: list[PreparedMail] = []
        round_keys: dict[str, str] = {}
        deferred: list[PreparedMail] = []
        for p in pending:
            stored = known.get(p.dedup_key, [])
            same = next((i for h, i in stored if h == p.content_hash), None)
            if same is None and stored:  # a row stored under the old hash formula?
                same = next((i for h, i in stored if h == p.legacy[1]), None)
            if same is not None:
                result.duplicates.append((same, p))
            elif p.dedup_key in round_keys:
                (dup_later if round_keys[p.dedup_key] == p.content_hash else deferred).append(p)
            else:
                if stored:
                    p = reused(p, stored[0][1])
                round_keys[p.dedup_key] = p.content_hash
                round_rows.append(p)
        for chunk in _chunks(round_rows, t.statement_bytes):
            params = [dict(zip(_ROW_KEYS, _row(t.mailbox_id, t.folder, t.uidvalidity, p),
                               strict=True)) for p in chunk]
            statement = sql("ingest_insert_emails", rows=(1, EMAIL_COLUMNS))
            ids = {k.natural_key: k.id
                   for k in StoredKey.from_rows(cur.fetchall_many(statement, params))}
            skipped = [p for p in chunk if (p.dedup_key, p.content_hash) not in ids]
            concurrent = _concurrent(cur, t, skipped) if skipped else {}
            for p in chunk:
                email_id = ids.get((p.dedup_key, p.content_hash))
                if email_id is None:  # another poller stored it after our lookup
                    result.duplicates.append((concurrent[(p.dedup_key, p.content_hash)], p))
                    continue
                result.new.append((email_id, p))
                known.setdefault(p.dedup_key, []).append((p.content_hash, email_id))
        pending = deferred
    for p in dup_later:
        email_id = next(i for h, i in known[p.dedup_key] if h == p.content_hash)
        result.duplicates.append((email_id, p))
    return result


def _known(cur: Cursor, t: BatchTarget, prepared: Sequence[PreparedMail]
           ) -> dict[str, list[tuple[str, int]]]:
    # rows stored under the old formula with another key (no Message-ID, a BOM): found too
    aliases = {p.legacy[0]: p.dedup_key for p in prepared
               if p.raw.startswith(b"\xef\xbb\xbf") or not p.headers.message_id}
    aliases = {old: new for old, new in aliases.items() if old != new}
    keys = sorted({p.dedup_key for p in prepared} | set(aliases))
    if not keys:
        return {}
    stored = StoredKey.from_rows(cur.fetchall(sql("ingest_existing_emails", keys=len(keys)),
                                              {"mailbox_id": t.mailbox_id,
                                               **slot_params(keys=keys)}))
    legacy = [k.id for k in stored if not k.content_hash]
    hashes = _hash_legacy(cur, legacy) if legacy else {}
    known: dict[str, list[tuple[str, int]]] = {}
    for k in stored:
        chash = k.content_hash or hashes.get(k.id, "")
        known.setdefault(aliases.get(k.dedup_key, k.dedup_key), []).append((chash, k.id))
    return known




def _concurrent(cur: Cursor, t: BatchTarget, skipped: list[PreparedMail]
                ) -> dict[tuple[str, str], int]:
    keys = sorted({p.dedup_key for p in skipped})
    rows = cur.fetchall(sql("ingest_existing_emails_locking", keys=len(keys)),
                        {"mailbox_id": t.mailbox_id, **slot_params(keys=keys)})
    found = {k.natural_key: k.id for k in StoredKey.from_rows(rows)}
    for p in skipped:  # cannot happen: INSERT IGNORE skipped it, so the key exists
        if (p.dedup_key, p.content_hash) not in found:
            raise RuntimeError(f"dedup key {p.dedup_key} neither inserted nor found")
    return found


def _hash_legacy(cur: Cursor, ids: list[int]) -> dict[int, str]:
    """Content hashes of rows stored before the hash existed, from their raw mail (once:
    the hash is written back)."""
    out = {}
    for m in RawMail.from_rows(cur.fetchall(sql("ingest_raw_for_hash", ids=len(ids)),
                                            slot_params(ids=ids))):
        out[m.id] = content_hash(parse_headers(m.raw), m.raw, m.raw_size)
        cur.execute(sql("ingest_set_content_hash"), {"content_hash": out[m.id], "id": m.id})
    return out


def reused(p: PreparedMail, first_id: int) -> PreparedMail:
    """A different mail under a Message-ID already stored: kept, for a human (never
    dropped as a duplicate, never answered automatically)."""
    out = replace(p, kind="reused_id", status=MailStatus.MANUAL, reused_of=first_id,
                  status_reason=(f"Message-ID {p.headers.message_id} is already used by mail "
                                 f"#{first_id} with different content (a sender reusing ids, "
                                 "or an altered copy): kept for a human, not processed "
                                 "automatically"))
    if out.parse_status == ParseStatus.PENDING:  # no job parses it: parsed here, like every row
        return out.parsed(mime.parse_mail(p.raw, size=p.size, extract=False))
    return out


def _insert_jobs(cur: Cursor, t: BatchTarget, result: BatchResult,
                 events: list[AuditEvent]) -> None:
    wanted = [NewJob(JobKind.PROCESS_EMAIL, email_id, t.queue_name, email_id=email_id,
                     detail={"mailbox": t.mailbox_name}) if p.kind == "normal" else
              NewJob(JobKind.INDEX_HISTORY, email_id, t.history_queue, email_id=email_id,
                     detail={"mailbox": t.mailbox_name, "kind": p.kind})
              for email_id, p in result.new if p.needs_job]
    if not wanted:
        return
    result.jobs = create_jobs(cur, wanted, actor=Actor.POLLER, event="queued", events=events)
    history = [j.id for j in result.jobs if j.kind == JobKind.INDEX_HISTORY]
    if history:  # they wait while the mailbox's history import is paused
        cur.execute(sql("history_import_park_new", ids=len(history)),
                    {"mailbox_id": t.mailbox_id, **slot_params(ids=history)})
    if len(result.jobs) != len(wanted):  # a job row already existed: kept, none created
        log.warning("%d job row(s) already existed for new mails",
                    len(wanted) - len(result.jobs))


def _events(t: BatchTarget, result: BatchResult) -> list[AuditEvent]:
    events = []
    job_of = {j.email_id: (j.id, j.queue) for j in result.jobs}
    for email_id, p in result.new:
        detail: dict[str, Any] = {
            "mailbox": t.mailbox_name, "folder": t.folder, "uid": p.uid,
            "uidvalidity": t.uidvalidity, "size": p.size,
            "dedup": "message_id" if p.headers.ok and p.headers.message_id else "content",
            "kind": p.kind,
        }
        if p.status_reason:
            detail["reason"] = p.status_reason
        if p.reused_of is not None:
            detail["message_id_reused_of"] = p.reused_of
        if email_id in job_of:  # its job row was created in the same transaction, queued
            detail["job_id"], detail["queue"] = job_of[email_id]
        events.append(AuditEvent(Actor.POLLER, "email", email_id, "received", None,
                                 str(p.status), detail=detail))
    for email_id, p in result.duplicates:
        events.append(AuditEvent(Actor.POLLER, "email", email_id, "duplicate_delivery",
                                 detail={"mailbox": t.mailbox_name, "folder": t.folder,
                                         "uid": p.uid, "uidvalidity": t.uidvalidity}))
    return events
