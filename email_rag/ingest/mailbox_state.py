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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.errors import ImapAuthError, LeaseLostError
from ..core.redact import redact_text
from ..core.retry import ExponentialBackoff
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


def ensure_mailbox(db: Database, config: MailboxConfig) -> dict[str, Any]:
    """Upsert the mailboxes row by name and return it (with ``db_now``)."""
    with db.transaction() as cur:
        cur.execute(sql("ingest_upsert_mailbox"),
                    {"name": config.name, "address": config.reply_address})
        row = cur.fetchone(sql("ingest_mailbox_by_name"), {"name": config.name})
    assert row is not None
    return row


@dataclass
class LeaseResult:
    got: bool
    why: str = ""  # when not got: "busy" or "backoff"
    holder: str | None = None
    backoff_until: datetime | None = None
    taken_over_from: str | None = None  # owner of an expired or dead lease we took
    row: dict[str, Any] | None = None  # the mailboxes row as read when taking the lease


def take_lease(db: Database, row: dict[str, Any], owner: str, lease_seconds: float,
               force: bool = False) -> LeaseResult:
    mailbox_id = row["id"]
    with db.transaction() as cur:
        before = cur.fetchone(sql("ingest_mailbox_by_name"), {"name": row["name"]})
        assert before is not None
        lease = {"owner": owner, "lease_us": micros(lease_seconds), "mailbox_id": mailbox_id,
                 "force": bool(force)}
        got = cur.execute(sql("ingest_take_lease"), lease) == 1
        holder = before["lease_owner"]
        if not got and holder and holder != owner and owner_is_dead(holder):
            got = cur.execute(sql("ingest_take_dead_lease"),
                              {**lease, "dead_owner": holder}) == 1
        if got and holder and holder != owner:
            expired = before["lease_until"] is None or before["lease_until"] < before["db_now"]
            write_events(cur, [AuditEvent(
                Actor.POLLER, "mailbox", row["name"], "lease_taken_over",
                detail={"previous_owner": holder, "owner": owner,
                        "why": "lease expired" if expired else "owner process is dead"})])
    if got:
        return LeaseResult(True, taken_over_from=holder if holder and holder != owner else None,
                           row=before)
    now = db.fetchone(sql("ingest_mailbox_by_name"), {"name": row["name"]}) or before
    in_backoff = (not force and now["backoff_until"] is not None
                  and now["backoff_until"] > now["db_now"])
    lease_free = (now["lease_owner"] is None or now["lease_until"] is None
                  or now["lease_until"] < now["db_now"])
    if in_backoff and lease_free:
        return LeaseResult(False, "backoff", backoff_until=now["backoff_until"])
    return LeaseResult(False, "busy", holder=now["lease_owner"],
                       backoff_until=now["backoff_until"])


def renew_lease(cur: Cursor, mailbox_id: int, owner: str, lease_seconds: float) -> None:
    """Inside a batch transaction: extend the lease, or fail the batch if it was lost."""
    lease = {"lease_us": micros(lease_seconds), "mailbox_id": mailbox_id, "owner": owner}
    if cur.execute(sql("ingest_renew_lease"), lease) != 1:
        raise LeaseLostError(f"lease of mailbox {mailbox_id} is no longer held by {owner}")


def release_lease(db: Database, mailbox_id: int, owner: str) -> None:
    try:
        db.execute(sql("ingest_release_lease"), {"mailbox_id": mailbox_id, "owner": owner})
    except Exception as e:  # noqa: BLE001 - the lease expires by itself
        log.warning("could not release the poll lease of mailbox %s (%s); it expires by itself",
                    mailbox_id, e)


def record_failure(db: Database, row: dict[str, Any], error: BaseException,
                   backoff: ExponentialBackoff) -> tuple[int, float]:
    """Count the failure, set the backoff and audit it; returns (failures, delay s)."""
    failures = int(row["consecutive_failures"]) + 1
    delay = backoff.delay(failures)
    auth = isinstance(error, ImapAuthError)
    message = redact_text(f"{type(error).__name__}: {error}")[:2000]
    with db.transaction() as cur:
        cur.execute(sql("ingest_poll_failed"),
                    {"failures": failures, "backoff_us": micros(delay), "error": message,
                     "needs_attention": auth, "mailbox_id": row["id"]})
        write_events(cur, [AuditEvent(
            Actor.POLLER, "mailbox", row["name"], "poll_failed", attempt=failures,
            detail={"error": message, "error_type": type(error).__name__,
                    "retry_in_seconds": round(delay, 3), "needs_attention": auth or None,
                    "consecutive_failures": failures})])
    return failures, delay


def record_success(db: Database, row: dict[str, Any]) -> None:
    with db.transaction() as cur:
        cur.execute(sql("ingest_poll_succeeded"), {"mailbox_id": row["id"]})
        if int(row["consecutive_failures"]) > 0 or row["needs_attention"]:
            write_events(cur, [AuditEvent(
                Actor.POLLER, "mailbox", row["name"], "poll_recovered",
                detail={"after_failures": int(row["consecutive_failures"]),
                        "failing_since": row["failing_since"]})])
