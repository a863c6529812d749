"""The IMAP poller: mailbox -> email rows + job rows, never losing or doubling a mail.

For each configured mailbox: take the lease, connect, and for each folder
fetch the mails above the cursor in batches. Each batch is one MariaDB
transaction (mail rows, job rows, cursor, lease renewal, audit; see
``store``); after the commit its jobs go to RQ in one pipeline. Guarantees:
a mail row and its job are created exactly once per mailbox (unique dedup
key and job key, cursor moved in the same transaction); hand-off to Redis is
at-least-once (the outbox: rows stay ``queued`` until ``dispatch.redispatch``
finds them missing in Redis; a double delivery is harmless, the worker's
claim in MariaDB decides).

Failure table (situation | retry? | state known? | resume?):
  IMAP refused / timeout / BYE mid-fetch | yes: backoff (exp., capped, jitter, forever) |
      committed batches stay; the batch in flight is discarded | next poll from the cursor
  IMAP login refused               | yes, same schedule + needs_attention | nothing fetched | same
  mailbox in backoff               | skipped until backoff_until (unless --force) | unchanged | -
  another poller holds the lease   | skipped (status busy)  | the other one polls | -
  poller dies mid-batch (SIGKILL)  | lease expires / dead owner detected | batch rolled back | same UIDs again
  crash after commit, before enqueue | redispatch enqueues the queued rows | rows queued | yes
  Redis down at hand-off           | no retry in this run; redispatch later | rows stay queued | yes
  MariaDB down                     | --once: exit 1; loop: next cycle | nothing half-written | from cursor
  UIDVALIDITY changed              | cursor reset, audited; dedup absorbs repeats | - | from UID 1
  mail without headers / too large | stored as failed / manual with the reason | - | -
  lease lost mid-run (stalled past expiry) | batch rolled back, run stops | other poller continues | -
  deadlock / lock wait timeout in a batch | the batch transaction is repeated (3 tries) | rolled back | yes
  SIGTERM / SIGINT (loop or --once)  | no: the batch in hand is committed, then it stops | yes | next run
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..adapters.imap import FolderState, ImapMailbox
from ..adapters.imap import connect as imap_connect
from ..core.errors import DatabaseUnavailableError, EmailRagError, ImapError, QueueUnavailableError
from ..core.records import Job
from ..core.redact import redact_text
from ..core.retry import ExponentialBackoff
from ..core.settings import MailboxConfig
from ..core.states import Actor
from ..db import sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor
from ..jobs.dispatch import left_for_redispatch
from ..jobs.store import mark_enqueued
from . import history
from . import mailbox_state as ms
from .bounces import link_bounces
from .store import (
    BatchTarget,
    MissingUids,
    PreparedMail,
    PrepareOptions,
    missing_body_mail,
    prepare,
    read_missing,
    store_batch_retrying,
    write_missing,
)

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

COUNTERS = ("fetched", "new", "duplicate", "queued", "skipped", "failed", "too_large",
            "reused_id", "missing", "enqueued", "enqueue_failed")
PACKET_HEADROOM = 256_000


@dataclass
class FolderResult:
    folder: str
    uidvalidity: int | None = None
    last_uid: int = 0
    uidvalidity_changed: bool = False
    batches: int = 0
    fetched: int = 0  # mails fetched from IMAP
    new: int = 0  # stored now (every kind)
    duplicate: int = 0  # already stored (same Message-ID or content)
    queued: int = 0  # of the new: job rows created
    skipped: int = 0  # of the new: loop guard (own mail, auto-reply, bounce), no job
    failed: int = 0  # of the new: unparseable, stored raw with the reason, no job
    too_large: int = 0  # of the new: headers only, waiting for a human, no job
    reused_id: int = 0  # of the new: another mail's Message-ID, waiting for a human, no job
    missing: int = 0  # UIDs listed without a body (fetched again; see missing_uids)
    enqueued: int = 0  # jobs handed to Redis
    enqueue_failed: int = 0  # jobs left queued for redispatch (Redis down)
    history: int = 0  # of the new: history (before the cut-off, or our replies in Sent)


@dataclass
class MailboxResult:
    name: str
    status: str = "ok"  # ok | interrupted | failed | backoff | busy | error
    error: str | None = None
    consecutive_failures: int = 0
    backoff_until: datetime | None = None
    needs_attention: bool = False
    seconds: float = 0.0
    folders: list[FolderResult] = field(default_factory=list)
    # counted in MariaDB under the lease, before and after (``poll(recount=True)``)
    recounted: dict[str, int] | None = None

    def total(self, counter: str) -> int:
        return sum(getattr(f, counter) for f in self.folders)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["backoff_until"] = self.backoff_until.isoformat() if self.backoff_until else None
        d["totals"] = {c: self.total(c) for c in COUNTERS}
        return d


@dataclass
class PollResult:
    mailboxes: list[MailboxResult] = field(default_factory=list)

    def total(self, counter: str) -> int:
        return sum(m.total(counter) for m in self.mailboxes)

    @property
    def totals(self) -> dict[str, int]:
        return {c: self.total(c) for c in COUNTERS}

    @property
    def unpolled(self) -> list[MailboxResult]:
        """Mailboxes that could not be polled (IMAP failure, backoff, error)."""
        return [m for m in self.mailboxes if m.status in ("failed", "backoff", "error")]


class Poller:
    def __init__(self, services: ServiceContext, *, owner: str | None = None,
                 stop: threading.Event | None = None,
                 imap_factory: Callable[[MailboxConfig, float], ImapMailbox] = imap_connect,
                 backoff: ExponentialBackoff | None = None) -> None:
        self.svc = services
        self.settings = services.settings
        self.owner = owner or ms.new_owner()
        self.stop = stop or threading.Event()
        self.imap_factory = imap_factory
        self.backoff = backoff or ExponentialBackoff(
            base=self.settings.imap_backoff_base, cap=self.settings.imap_backoff_cap)
        self._redis_down: str | None = None
        self._limits: tuple[int, int] | None = None
        self._enqueued: list[int] = []  # handed to Redis, enqueued_at not yet written

    # --- public ---
    def poll(self, names: Iterable[str] | None = None, force: bool = False,
             recount: bool = False) -> PollResult:
        """Poll the configured mailboxes (only ``names``, when given). ``recount``: count each
        polled mailbox's mail rows and entries in MariaDB before and after, under its lease
        (``MailboxResult.recounted``), to check the reported figures against."""
        configs = self.svc.mailboxes.active(fresh=True)
        if names is not None:
            wanted = list(names)
            unknown = [n for n in wanted if n not in {c.name for c in configs}]
            if unknown:
                raise EmailRagError(f"no mailbox named {', '.join(unknown)} is polled "
                                    "(`email-rag mailboxes list` shows every mailbox)")
            configs = [c for c in configs if c.name in wanted]
        self._redis_down = None
        result = PollResult()
        for config in configs:
            if self.stop.is_set():
                break
            result.mailboxes.append(self.poll_mailbox(config, force=force, recount=recount))
        return result

    def poll_mailbox(self, config: MailboxConfig, force: bool = False,
                     recount: bool = False) -> MailboxResult:
        started = time.monotonic()
        res = MailboxResult(config.name)
        db = self.svc.db
        mailbox, lease = ms.ensure_and_lease(db, config, self.owner,
                                             self.settings.poll_lease_seconds, force)
        if not lease.got:
            res.status = lease.why
            res.backoff_until = lease.backoff_until
            res.consecutive_failures = mailbox.consecutive_failures
            res.needs_attention = mailbox.needs_attention
            res.error = (f"lease held by {lease.holder}" if lease.why == "busy"
                         else f"in backoff until {lease.backoff_until} after "
                              f"{mailbox.consecutive_failures} failure(s): {mailbox.last_error}")
            return res
        released = False  # a successful poll releases the lease with its success record
        try:
            before = ms.count_stored(db, mailbox.id) if recount else None
            # a recount counts before the lease goes: the success record then leaves it held
            released = self._poll_held(config, lease.mailbox or mailbox, res,
                                       release=before is None)[1]
            if before is not None and res.status in ("ok", "interrupted"):
                after = ms.count_stored(db, mailbox.id)
                res.recounted = {"mails": after["mails"] - before["mails"],
                                 "jobs": after["jobs"] - before["jobs"],
                                 "mails_now": after["mails"]}
        finally:
            if not released:
                ms.release_lease(db, mailbox.id, self.owner)
            res.seconds = round(time.monotonic() - started, 3)
        return res

    def poll_held(self, config: MailboxConfig, mailbox: ms.Mailbox,
                  folders: Iterable[str] | None = None) -> tuple[MailboxResult, ms.Mailbox]:
        """Poll ``config`` (only ``folders`` of it, when given) under a lease the caller holds
        and keeps (the IDLE watcher): same path, same guarantees as ``poll_mailbox``.
        Returns the result and ``mailbox`` with the failure count the outcome left in
        MariaDB."""
        started = time.monotonic()
        res = MailboxResult(config.name)
        self._redis_down = None
        try:
            mailbox = self._poll_held(config, mailbox, res, folders=folders)[0]
        finally:
            res.seconds = round(time.monotonic() - started, 3)
        return res, mailbox

    def _poll_held(self, config: MailboxConfig, mailbox: ms.Mailbox, res: MailboxResult,
                   folders: Iterable[str] | None = None,
                   release: bool = False) -> tuple[ms.Mailbox, bool]:
        """Poll under the lease; returns the mailbox as the outcome left it and whether the
        lease was released (``release``: with the success record, in its statement; a
        failed poll leaves the lease to the caller)."""
        db = self.svc.db
        released = False
        try:
            self._poll_leased(config, mailbox, res, folders)
            ms.record_success(db, mailbox, self.owner if release else None)
            released = release
            mailbox = mailbox.recovered()
            if self.stop.is_set():
                res.status = "interrupted"
        except ImapError as e:
            failures, delay = ms.record_failure(db, mailbox, e, self.backoff)
            fresh = ms.read_mailbox(db, config.name) or mailbox
            mailbox = mailbox.failed(failures)
            res.status = "failed"
            res.error = redact_text(f"{e} (failure {failures}; next try in {delay:.0f} s)")
            res.consecutive_failures = failures
            res.needs_attention = fresh.needs_attention
            res.backoff_until = fresh.backoff_until
            log.warning("mailbox %s: poll failed (%s); failure %d, retry in %.1f s",
                        config.name, e, failures, delay)
        except ms.LeaseLostError as e:
            res.status, res.error = "busy", str(e)
        except Exception as e:  # noqa: BLE001 - one mailbox must not stop the others
            log.exception("mailbox %s: poll stopped by an unexpected error", config.name)
            res.status, res.error = "error", redact_text(f"{type(e).__name__}: {e}")
            if not isinstance(e, DatabaseUnavailableError):
                try:
                    mailbox = mailbox.failed(ms.record_failure(db, mailbox, e, self.backoff)[0])
                except Exception:  # noqa: BLE001 - MariaDB itself may be what failed
                    log.warning("could not record the failure of mailbox %s", config.name)
        return mailbox, released

    # --- internals ---
    def _poll_leased(self, config: MailboxConfig, mailbox: ms.Mailbox,
                     res: MailboxResult, folders: Iterable[str] | None = None) -> None:
        imap = self.imap_factory(config, self.settings.imap_timeout)
        wanted = config.folders if folders is None else [f for f in config.folders
                                                         if f in set(folders)]
        cutoff = (history.cutoff(self.svc.db, mailbox.id, config)
                  if self.settings.history_import else None)
        try:
            imap.connect()
            sent = self._sent_folder(imap, config) if cutoff is not None else None
            if sent and sent not in wanted and folders is None:
                wanted = [*wanted, sent]  # the team's earlier replies: history too
            for folder in wanted:
                if self.stop.is_set():
                    break
                fres = FolderResult(folder)
                res.folders.append(fres)
                self._poll_folder(imap, config, mailbox, fres, cutoff, folder == sent)
        finally:
            imap.close()

    def _limits_for_packet(self, mailbox: ms.Mailbox) -> tuple[int, int]:
        """(largest mail stored whole, raw bytes per INSERT) under max_allowed_packet (as
        read with the mailbox's row; else asked)."""
        if self._limits is None:
            packet = mailbox.max_allowed_packet
            if packet is None:
                r = self.svc.db.fetchone(sql("ingest_max_allowed_packet"))
                packet = int(r["packet"]) if r else 16 * 1024 * 1024
            max_mail = min(self.settings.max_mail_bytes, packet - PACKET_HEADROOM)
            if max_mail < self.settings.max_mail_bytes:
                log.info("max_mail_bytes %d exceeds what MariaDB accepts in one packet "
                            "(max_allowed_packet %d); mails above %d bytes are stored "
                            "headers-only", self.settings.max_mail_bytes, packet, max_mail)
            self._limits = (max_mail, max(1_000_000, packet // 3))
        return self._limits

    def prepare_options(self, config: MailboxConfig, max_mail: int) -> PrepareOptions:
        """How a fetched mail of this mailbox becomes a row (``max_mail``: larger mails are
        stored headers-only)."""
        s = self.settings
        return PrepareOptions(message_id_domain=s.message_id_domain,
                              own_addresses=frozenset({config.reply_address.lower()}),
                              max_mail_bytes=max_mail,
                              max_attachment_bytes=s.max_attachment_bytes,
                              list_headers=s.loop_guard_list_headers)

    @staticmethod
    def _sent_folder(imap: ImapMailbox, config: MailboxConfig) -> str | None:
        """The Sent folder whose replies are imported as history (when it exists)."""
        name = config.sent_folder or imap.special_folder(b"\\Sent") or "Sent"
        return name if imap.folder_exists(name) else None

    def _poll_folder(self, imap: ImapMailbox, config: MailboxConfig, mailbox: ms.Mailbox,
                     fres: FolderResult, cutoff: datetime | None = None,
                     sent: bool = False) -> None:
        s = self.settings
        config_folder = fres.folder
        state = imap.select(config_folder)
        fres.uidvalidity = state.uidvalidity
        max_mail, statement_bytes = self._limits_for_packet(mailbox)
        opts = self.prepare_options(config, max_mail)
        target = BatchTarget(mailbox.id, config.name, config_folder, state.uidvalidity,
                             s.queue_name, self.owner, s.poll_lease_seconds, statement_bytes,
                             s.history_queue_name)
        last_uid, pending = self._cursor(mailbox, state, fres, target)
        answered = (frozenset(imap.uids_where(config_folder, "UID", f"{last_uid + 1}:*",
                                              "ANSWERED"))
                    if cutoff is not None and not sent else frozenset())
        plan = history.HistoryPlan(cutoff, answered, sent)
        try:
            self._fetch_and_store(imap, config, target, opts, last_uid, fres, max_mail, plan,
                                  pending)
        finally:  # enqueued_at of the last batch (earlier ones went with the next batch)
            if self._enqueued:
                try:
                    with self.svc.db.transaction() as cur:
                        mark_enqueued(cur, self._enqueued)
                except EmailRagError as e:  # harmless: redispatch sees them pending in Redis
                    log.warning("could not set enqueued_at of %d job(s): %s",
                                len(self._enqueued), e)
                self._enqueued = []

    def _fetch_and_store(self, imap: ImapMailbox, config: MailboxConfig, target: BatchTarget,
                         opts: PrepareOptions, last_uid: int, fres: FolderResult,
                         max_mail: int, plan: history.HistoryPlan,
                         pending: dict[int, int]) -> None:
        """``pending``: the folder's UIDs still missing a body (UID -> polls that missed it)."""
        s = self.settings
        config_folder = fres.folder
        db = self.svc.db
        hold: int | None = None  # lowest UID still missing: the cursor stays below it
        for batch in imap.fetch_new(config_folder, last_uid, s.imap_fetch_batch,
                                    s.imap_fetch_batch_bytes, max_mail):
            prepared = [history.classify(prepare(m, opts), plan) for m in batch.mails]
            missing = MissingUids(limit=s.missing_uid_polls)
            for m in batch.mails:
                if m.uid in pending:
                    missing.cleared.append((m.uid, "uid_recovered", pending.pop(m.uid)))
            for uid in batch.missing:
                misses = pending.pop(uid, 0) + 1
                fres.missing += 1
                if misses >= s.missing_uid_polls:
                    prepared.append(missing_body_mail(uid, misses, target))
                    missing.cleared.append((uid, "uid_given_up", misses))
                else:
                    missing.seen.append((uid, misses))
                    hold = uid if hold is None else min(hold, uid)
            cursor = batch.last_uid if hold is None else min(batch.last_uid, hold - 1)
            stored = store_batch_retrying(db, target, prepared, cursor, self._enqueued,
                                          missing=missing,
                                          link=lambda cur, new: self._link(cur, target, new))
            self._enqueued = []
            fres.batches += 1
            fres.last_uid = max(fres.last_uid, cursor)
            fres.fetched += len(batch.mails)
            fres.new += len(stored.new)
            fres.duplicate += len(stored.duplicates)
            fres.queued += len(stored.jobs)
            for _, p in stored.new:
                if p.kind == "no_reply":
                    fres.skipped += 1
                elif p.kind in ("failed", "missing_body"):
                    fres.failed += 1
                elif p.kind == "too_large":
                    fres.too_large += 1
                elif p.kind == "reused_id":
                    fres.reused_id += 1
                elif p.kind in ("history", "sent"):
                    fres.history += 1
            self._hand_off(stored.jobs, fres)
            del prepared, stored, batch
            if self.stop.is_set():
                log.info("mailbox %s/%s: stop requested; stopped after a committed batch "
                         "at UID %d", config.name, config_folder, fres.last_uid)
                return
        if pending:  # listed as missing before, not listed any more: expunged on the server
            with db.transaction() as cur:
                write_events(cur, write_missing(cur, target, MissingUids(
                    cleared=[(uid, "uid_gone", n) for uid, n in pending.items()])))
        log.info("mailbox %s/%s: fetched %d, new %d, duplicate %d, skipped %d, failed %d",
                 config.name, config_folder, fres.fetched, fres.new, fres.duplicate,
                 fres.skipped, fres.failed)

    def _link(self, cur: Cursor, target: BatchTarget,
              new: list[tuple[int, PreparedMail]]) -> list[AuditEvent]:
        """A stored bounce moves the send attempt it names (email_rag/ingest/bounces.py); a
        stored reply of ours links the mails it answers (email_rag/ingest/history.py)."""
        events = link_bounces(cur, self.svc.stores, self.settings,
                              [(i, p) for i, p in new if p.direction == "in"])
        if self.settings.history_import and new:
            events += history.link_replies(cur, target.mailbox_id, target.mailbox_name, new)
        return events

    def _cursor(self, mailbox: ms.Mailbox, state: FolderState, fres: FolderResult,
                target: BatchTarget) -> tuple[int, dict[int, int]]:
        """Where the folder's poll starts (resetting the cursor when it is new or the
        UIDVALIDITY changed) and its UIDs still missing a body, both read in one
        transaction."""
        db = self.svc.db
        with db.transaction() as cur:
            stored = ms.read_cursor(cur, mailbox.id, state.folder)
            pending = read_missing(cur, target)
        start = ms.cursor_start(stored, state.uidvalidity)
        reset = {"mailbox_id": mailbox.id, "folder": state.folder,
                 "uidvalidity": state.uidvalidity}
        if start.action == ms.CursorAction.CONTINUE:
            fres.last_uid = start.last_uid
            return fres.last_uid, pending
        if start.action == ms.CursorAction.NEW or stored is None:
            db.execute(sql("ingest_reset_cursor"), reset)
            return start.last_uid, pending
        fres.uidvalidity_changed = True
        with db.transaction() as c:
            c.execute(sql("ingest_reset_cursor"), reset)
            write_events(c, [AuditEvent(
                Actor.POLLER, "mailbox", mailbox.name, "uidvalidity_changed",
                detail={"folder": state.folder, "old_uidvalidity": stored.uidvalidity,
                        "new_uidvalidity": state.uidvalidity,
                        "old_last_uid": stored.last_uid,
                        "action": "cursor reset to 0; dedup keeps stored mails from repeating"})])
        log.warning("mailbox %s/%s: UIDVALIDITY changed %s -> %s; starting the folder over",
                    mailbox.name, state.folder, stored.uidvalidity, state.uidvalidity)
        return start.last_uid, pending

    def _hand_off(self, jobs: list[Job], fres: FolderResult) -> None:
        """After the commit: enqueue the batch's jobs in one pipeline (outbox on failure)."""
        if not jobs:
            return
        if self._redis_down is None:  # once Redis failed, the rest of this run does not wait on it
            try:
                self.svc.queue.enqueue((j.queue, j.id) for j in jobs)
                self._enqueued = [j.id for j in jobs]  # set with the next commit
                fres.enqueued += len(jobs)
                return
            except QueueUnavailableError as e:
                self._redis_down = redact_text(str(e))
        fres.enqueue_failed += len(jobs)
        left_for_redispatch(self.svc, jobs, Actor.POLLER, self._redis_down, "enqueue")
