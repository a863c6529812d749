"""The periodic sync: re-index what is missing, and on demand re-index everything.

``sync(services, scope)`` does the work where the vector store may be opened:
in the vector worker (an ``index_sync`` queue entry) or in-process from
``email-rag reindex`` when the store is free (server mode, or a local folder
no other process holds). ``schedule(services)`` is the periodic job of the
scheduler: it never opens a store, it only arms one ``index_sync:partial``
queue entry on the vector queue when partially_indexed mail exists.

Scopes: ``partial`` (every partially_indexed mail, only its missing stores),
``all`` (every mail whose index step ran, every store), ``email:<id>``.

Failure table (one sync run):

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a store is still down | store_tries for the first mail needing it, then not tried again in this run | yes: mails stay partially_indexed; `reindex_failed` for the mail that was tried; one `index_sync_run` event with the counts | the next periodic run |
| a store came back | - | yes: `reindexed` (partially_indexed -> complete) in the same transaction as the status | - |
| the vector worker is not running (local mode) | - | yes: the index_sync entry stays queued in MariaDB | runs when the worker starts (re-dispatch) |
| crash mid-run | the entry is reset by the stuck-job cleanup | yes: each mail's status is committed on its own, with the run's checkpoint (sync_run.py) | re-run: continues the checkpoint; idempotent (deterministic ids) |
| an arming while a run is queued or running | - | yes: coalesced into that run | - |
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..core.errors import PermanentError
from ..core.jsonvalue import JsonObject
from ..core.records import Mail
from ..core.routing import queues
from ..core.states import Actor, IndexStatus, JobKind
from ..db import sql
from ..db.audit import AuditEvent, write_events
from ..jobs.arming import arm_run
from ..jobs.store import NewJob
from .indexer import STORES, Indexer, IndexResult

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

BATCH = 200


@dataclass
class SyncReport:
    scope: str
    examined: int = 0
    reindexed: list[int] = field(default_factory=list)
    still_missing: dict[int, list[str]] = field(default_factory=dict)
    unchanged: int = 0  # not tried: their stores were already down in this run (left as is)
    errors: dict[str, str] = field(default_factory=dict)
    stopped: bool = False  # ``stop`` was set: the walk ended after the mail in hand

    @property
    def ok(self) -> bool:
        return not self.still_missing and not self.unchanged

    def as_dict(self) -> JsonObject:
        return {"scope": self.scope, "examined": self.examined, "reindexed": self.reindexed,
                "still_missing": {str(k): v for k, v in self.still_missing.items()},
                "unchanged": self.unchanged, "errors": self.errors, "stopped": self.stopped}


def configured(settings: Any) -> set[str]:
    """The stores this configuration writes to."""
    return {"vectors", "graph"} if settings.arango_url else {"vectors"}


def parse_scope(scope: str) -> tuple[str, int | None]:
    if scope in ("partial", "all"):
        return scope, None
    if scope.startswith("email:") and scope[6:].isdigit():
        return "email", int(scope[6:])
    raise PermanentError(f"unknown index sync scope {scope!r}")


# the caller's checkpoint, written in each mail's transaction: (cursor, mail id, report)
OnMail = Callable[[Any, int, SyncReport], None]


def sync(services: ServiceContext, scope: str = "partial", actor: str = Actor.SCHEDULER,
         sleep: Callable[[float], None] = time.sleep, start_after: int = 0,
         on_mail: OnMail | None = None,
         stop: threading.Event | None = None) -> SyncReport:
    """Re-index the mails of ``scope`` in id order, each written with its audit events
    in its own transaction. ``start_after``: a mail id (``--all`` continued from a
    checkpoint); ``on_mail(cur, id, report)``: inside each mail's transaction, so the
    caller's checkpoint commits with the mail; ``stop``: when set, the walk ends after the
    mail in hand."""
    kind, email_id = parse_scope(scope)
    report = SyncReport(scope)
    indexer = Indexer(services, sleep)
    down: set[str] = set()
    db = services.db
    if kind == "email":
        row = db.fetchone(sql("pipeline_mail"), {"id": email_id})
        if row is None:
            raise PermanentError(f"email {email_id} does not exist")
        _one(services, indexer, Mail.from_row(row), None, down, report, actor, on_mail)
    else:
        query = sql("index_partial_batch" if kind == "partial" else "index_all_batch")
        after = start_after
        while not report.stopped:
            mails = [Mail.from_row(r) for r in db.fetchall(query, {"after": after, "limit": BATCH})]
            if not mails:
                break
            for mail in mails:
                if stop is not None and stop.is_set():
                    report.stopped = True
                    break
                after = mail.id
                only = None
                if kind == "partial":
                    only = [s for s in (mail.index_missing or "").split(",") if s] or list(STORES)
                wanted = set(only) if only is not None else configured(services.settings)
                if wanted <= down:  # its stores are down in this run: leave it as it is
                    report.examined += 1
                    report.unchanged += 1
                    if kind == "partial":
                        report.still_missing[after] = sorted(wanted)
                else:
                    _one(services, indexer, mail, only, down, report, actor, on_mail)
            if len(mails) < BATCH:
                break
    services.audit.record(AuditEvent(actor, "system", "index_sync", "index_sync_run", detail={
        "scope": scope, "examined": report.examined, "reindexed": len(report.reindexed),
        "still_missing": len(report.still_missing), "unchanged": report.unchanged,
        "errors": report.errors}))
    if report.reindexed or report.still_missing:
        log.info("index sync %s: %d re-indexed, %d still missing", scope, len(report.reindexed),
                 len(report.still_missing))
    return report


def _one(services: ServiceContext, indexer: Indexer, mail: Mail, only: list[str] | None,
         down: set[str], report: SyncReport, actor: str, on_mail: OnMail | None = None) -> None:
    report.examined += 1
    result = indexer.index(mail.as_row(), only, down)
    before = str(mail.index_status)
    missing = result.missing  # of the stores tried; the others were fine before
    status = result.status
    for s in missing:  # the first real error of the run (later mails say "not tried")
        report.errors.setdefault(s, result.stores[s].error or "missing")
    events = [AuditEvent(actor, "email", mail.id, name, detail={**d, "purpose": "sync"})
              for name, d in result.try_events()]
    events.append(_result_event(actor, mail, result, before, status))
    if missing:
        report.still_missing[mail.id] = missing
    else:
        report.reindexed.append(mail.id)
    with services.db.transaction() as cur:
        cur.execute(sql("index_get_for_update"), {"id": mail.id})
        cur.execute(sql("index_set_status"), {"id": mail.id, "status": str(status),
                                              "missing": ",".join(missing) or None})
        write_events(cur, events)
        if on_mail is not None:  # the caller's checkpoint commits with the mail
            on_mail(cur, mail.id, report)


def _result_event(actor: str, mail: Mail, result: IndexResult, before: str,
                  status: IndexStatus) -> AuditEvent:
    stores = {s: r.state for s, r in result.stores.items()}
    if result.missing:
        return AuditEvent(actor, "email", mail.id, "reindex_failed", before, status,
                          detail={"missing": result.missing, "errors": result.errors(),
                                  "stores": stores, "next": "the next periodic sync"})
    return AuditEvent(actor, "email", mail.id, "reindexed", before, status,
                      detail={"stores": stores, "chunks": result.chunks})


# --- queue side: the scheduler and CLI arm a run for the vector worker ---

def sync_queue(settings: Any) -> str:
    return queues(settings)[1]


class Armed(TypedDict):
    """A sync run asked for: its queue entry, and whether this call (re)armed it."""

    job_id: int
    job_key: str
    queue: str
    state: str
    armed: bool  # False: a pending run was joined
    enqueued: bool  # False: left in MariaDB for re-dispatch


def arm(services: ServiceContext, scope: str = "partial", actor: str = Actor.SCHEDULER) -> Armed:
    """Queue a sync run of ``scope`` on the vector queue (coalesced with one pending)."""
    parse_scope(scope)
    queue = sync_queue(services.settings)
    new = NewJob(JobKind.INDEX_SYNC, scope, queue, detail={"scope": scope, "queue": queue})
    job, armed, enqueued = arm_run(services, new, actor, "reindex_scheduled")
    key = new.key
    return Armed(job_id=job.id, job_key=key, queue=job.queue, state=str(job.state),
                 armed=armed, enqueued=bool(enqueued))


def schedule(services: ServiceContext) -> JsonObject:
    """The periodic job: arm a run when partially_indexed mail exists. Opens no store."""
    n = int(services.db.fetchone(sql("index_count_partial"))["n"])
    if not n:
        return {}
    return {"partially_indexed": n, **arm(services, "partial", Actor.SCHEDULER)}

