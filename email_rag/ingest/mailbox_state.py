"""The mailboxes row: the poll lease and the poll health (backoff, failures).

Lease: polls of one mailbox never overlap. A poller takes the lease with one
conditional UPDATE (free, expired, or ours); it renews it inside every batch
transaction, where a lost lease rolls the batch back (a fence against a
poller that stalled past its lease); it releases it at the end. A poller that
died keeps the lease only until ``lease_until`` - or not at all when its owner
string names this host and a process id that no longer exists.

Health: an IMAP failure increments ``consecutive_failures`` and sets
``backoff_until`` (exponential, capped, with jitter: never given up), keeps
``failing_since`` from the first failure, the redacted ``last_error``, and
for a refused login ``needs_attention``. A success resets all of it.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from ..core.errors import ImapAuthError, LeaseLostError
from ..core.redact import redact_text
from ..core.retry import ExponentialBackoff
from ..core.rows import FromRow, set_field
from ..core.settings import MailboxConfig
from ..core.states import Actor
from ..core.timing import micros
from ..db import Database, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor

log = logging.getLogger(__name__)


def new_owner() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_is_dead(owner: str | None) -> bool:
    """True when ``owner`` names this host and a process that does not exist any more."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname()[:60] or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@dataclass(frozen=True)
class Mailbox(FromRow):
    """A mailboxes row as the poller reads it (``ingest_mailbox_by_name``): its poll health,
    its lease, and the database clock when it was read (``db_now``)."""

    id: int
    name: str
    consecutive_failures: int = 0
    needs_attention: bool = False
    failing_since: datetime | None = None
    last_error: str | None = None
    backoff_until: datetime | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    db_now: datetime | None = None
    max_allowed_packet: int | None = None  # of the connection that read the row

    def __post_init__(self) -> None:
        set_field(self, "consecutive_failures", int(self.consecutive_failures or 0))
        set_field(self, "needs_attention", bool(self.needs_attention))

    @property
    def in_backoff(self) -> bool:
        return (self.backoff_until is not None and self.db_now is not None
                and self.backoff_until > self.db_now)

    @property
    def lease_expired(self) -> bool:
        """No lease, or its time ran out (by the database clock)."""
        return (self.lease_until is None or self.db_now is None
                or self.lease_until < self.db_now)

    @property
    def lease_free(self) -> bool:
        return self.lease_owner is None or self.lease_expired

    def failed(self, failures: int) -> Mailbox:
        """As it is after a failure recorded with ``failures`` in a row."""
        return replace(self, consecutive_failures=failures)

    def recovered(self) -> Mailbox:
        """As it is after a successful poll."""
        return replace(self, consecutive_failures=0, needs_attention=False, failing_since=None)


def read_mailbox(cur: Cursor | Database, name: str) -> Mailbox | None:
    row = cur.fetchone(sql("ingest_mailbox_by_name"), {"name": name})
    return Mailbox.from_row(row) if row is not None else None


def ensure_mailbox(db: Database, config: MailboxConfig) -> Mailbox:
    """Upsert the mailboxes row by name and return it (with ``db_now``)."""
    with db.transaction() as cur:
        cur.execute(sql("ingest_upsert_mailbox"),
                    {"name": config.name, "address": config.reply_address})
        mailbox = read_mailbox(cur, config.name)
    assert mailbox is not None
    return mailbox


@dataclass(frozen=True)
class LeaseResult:
    got: bool
    why: str = ""  # when not got: "busy" or "backoff"
    holder: str | None = None
    backoff_until: datetime | None = None
    taken_over_from: str | None = None  # owner of an expired or dead lease we took
    mailbox: Mailbox | None = None  # the mailboxes row as read when taking the lease


def refusal(now: Mailbox, force: bool) -> LeaseResult:
    """Why a lease was not got, from the row read after the refusal: ``backoff`` when the
    lease is free but the mailbox waits (unless forced), else ``busy`` (someone holds it)."""
    if not force and now.in_backoff and now.lease_free:
        return LeaseResult(False, "backoff", backoff_until=now.backoff_until)
    return LeaseResult(False, "busy", holder=now.lease_owner, backoff_until=now.backoff_until)


def take_lease(db: Database, mailbox: Mailbox, owner: str, lease_seconds: float,
               force: bool = False) -> LeaseResult:
    with db.transaction() as cur:
        before = read_mailbox(cur, mailbox.name)
        assert before is not None
        got = _take_lease_in(cur, before, owner, lease_seconds, force)
    return _lease_result(db, got, before, owner, force)


def ensure_and_lease(db: Database, config: MailboxConfig, owner: str, lease_seconds: float,
                     force: bool = False) -> tuple[Mailbox, LeaseResult]:
    """``ensure_mailbox`` and ``take_lease`` in one transaction (one read of the row, one
    commit): the row as read before the lease was taken, and the lease's result."""
    with db.transaction() as cur:
        cur.execute(sql("ingest_upsert_mailbox"),
                    {"name": config.name, "address": config.reply_address})
        before = read_mailbox(cur, config.name)
        assert before is not None
        got = _take_lease_in(cur, before, owner, lease_seconds, force)
    return before, _lease_result(db, got, before, owner, force)


def _take_lease_in(cur: Cursor, before: Mailbox, owner: str, lease_seconds: float,
                   force: bool) -> bool:
    """The lease's conditional UPDATE (and the takeover of a dead owner's, audited) in the
    caller's transaction; ``before``: the row as read in it."""
    lease = {"owner": owner, "lease_us": micros(lease_seconds), "mailbox_id": before.id,
             "force": bool(force)}
    got = cur.execute(sql("ingest_take_lease"), lease) == 1
    holder = before.lease_owner
    if not got and holder and holder != owner and owner_is_dead(holder):
        got = cur.execute(sql("ingest_take_dead_lease"),
                          {**lease, "dead_owner": holder}) == 1
    if got and holder and holder != owner:
        write_events(cur, [AuditEvent(
            Actor.POLLER, "mailbox", before.name, "lease_taken_over",
            detail={"previous_owner": holder, "owner": owner,
                    "why": "lease expired" if before.lease_expired
                    else "owner process is dead"})])
    return got


def _lease_result(db: Database, got: bool, before: Mailbox, owner: str,
                  force: bool) -> LeaseResult:
    holder = before.lease_owner
    if got:
        return LeaseResult(True, taken_over_from=holder if holder and holder != owner else None,
                           mailbox=before)
    return refusal(read_mailbox(db, before.name) or before, force)


@dataclass(frozen=True)
class FolderCursor(FromRow):
    """A folder's poll cursor (``mailbox_cursors``): the UIDs up to ``last_uid`` of this
    ``uidvalidity`` are stored."""

    uidvalidity: int
    last_uid: int = 0

    def __post_init__(self) -> None:
        set_field(self, "uidvalidity", int(self.uidvalidity))
        set_field(self, "last_uid", int(self.last_uid or 0))


class CursorAction(StrEnum):
    NEW = "new"  # no cursor yet: create it at 0, fetch everything
    CONTINUE = "continue"  # same UIDVALIDITY: fetch above last_uid
    RESET = "reset"  # UIDVALIDITY changed: the old UIDs mean nothing; reset to 0 (audited)


@dataclass(frozen=True)
class CursorStart:
    action: CursorAction
    last_uid: int  # fetch the UIDs above this one


def cursor_start(stored: FolderCursor | None, uidvalidity: int) -> CursorStart:
    """Where a poll of a folder starts, given its stored cursor and the server's UIDVALIDITY."""
    if stored is None:
        return CursorStart(CursorAction.NEW, 0)
    if stored.uidvalidity == uidvalidity:
        return CursorStart(CursorAction.CONTINUE, stored.last_uid)
    return CursorStart(CursorAction.RESET, 0)


def read_cursor(db: Cursor | Database, mailbox_id: int, folder: str) -> FolderCursor | None:
    row = db.fetchone(sql("ingest_cursor"), {"mailbox_id": mailbox_id, "folder": folder})
    return FolderCursor.from_row(row) if row is not None else None


def renew_lease(cur: Cursor, mailbox_id: int, owner: str, lease_seconds: float) -> None:
    """Inside a batch transaction: extend the lease, or fail the batch if it was lost."""
    lease = {"lease_us": micros(lease_seconds), "mailbox_id": mailbox_id, "owner": owner}
    if cur.execute(sql("ingest_renew_lease"), lease) != 1:
        raise LeaseLostError(f"lease of mailbox {mailbox_id} is no longer held by {owner}")


def count_stored(db: Database, mailbox_id: int) -> dict[str, int]:
    """Mail rows of a mailbox and the entries a poll creates for them (process_email,
    index_history), counted in MariaDB."""
    row = db.fetchone(sql("poll_count_stored"), {"mailbox_id": mailbox_id}) or {}
    return {"mails": int(row.get("mails") or 0), "jobs": int(row.get("jobs") or 0)}


def release_lease(db: Database, mailbox_id: int, owner: str) -> None:
    try:
        db.execute(sql("ingest_release_lease"), {"mailbox_id": mailbox_id, "owner": owner})
    except Exception as e:  # noqa: BLE001 - the lease expires by itself
        log.warning("could not release the poll lease of mailbox %s (%s); it expires by itself",
                    mailbox_id, e)


def record_failure(db: Database, mailbox: Mailbox, error: BaseException,
                   backoff: ExponentialBackoff) -> tuple[int, float]:
    """Count the failure, set the backoff and audit it; returns (failures, delay s)."""
    failures = mailbox.consecutive_failures + 1
    delay = backoff.delay(failures)
    auth = isinstance(error, ImapAuthError)
    message = redact_text(f"{type(error).__name__}: {error}")[:2000]
    with db.transaction() as cur:
        cur.execute(sql("ingest_poll_failed"),
                    {"failures": failures, "backoff_us": micros(delay), "error": message,
                     "needs_attention": auth, "mailbox_id": mailbox.id})
        write_events(cur, [AuditEvent(
            Actor.POLLER, "mailbox", mailbox.name, "poll_failed", attempt=failures,
            detail={"error": message, "error_type": type(error).__name__,
                    "retry_in_seconds": round(delay, 3), "needs_attention": auth or None,
                    "consecutive_failures": failures})])
    return failures, delay


def record_success(db: Database, mailbox: Mailbox, release_owner: str | None = None) -> None:
    """Reset the poll health after a successful poll (audited when it had failed);
    ``release_owner``: also release that owner's lease, in the same statement."""
    with db.transaction() as cur:
        if release_owner is None:
            cur.execute(sql("ingest_poll_succeeded"), {"mailbox_id": mailbox.id})
        else:
            cur.execute(sql("ingest_poll_succeeded_release"),
                        {"mailbox_id": mailbox.id, "owner": release_owner})
        if mailbox.consecutive_failures > 0 or mailbox.needs_attention:
            write_events(cur, [AuditEvent(
                Actor.POLLER, "mailbox", mailbox.name, "poll_recovered",
                detail={"after_failures": mailbox.consecutive_failures,
                        "failing_since": None if mailbox.failing_since is None
                        else str(mailbox.failing_since)})])


def poll_soon(db: Database, name: str, actor: str, why: str) -> bool:
    """End the mailbox's backoff (a new OAuth2 consent): the next poll tries at once;
    audited. False when it was not in backoff."""
    with db.transaction() as cur:
        cleared = cur.execute(sql("mailbox_backoff_clear"), {"name": name}) == 1
        if cleared:
            write_events(cur, [AuditEvent(actor, "mailbox", name, "poll_backoff_cleared",
                                          detail={"why": why})])
    return cleared
