"""History import: a mailbox's older mail becomes memory, not work (issue 31).

Each mailbox has a cut-off (``mailboxes.history_cutoff``, UTC): the configured
``MailboxConfig.history_cutoff``, else the time of its first poll, stored once
at that poll; ``email-rag mailboxes cutoff NAME DATE`` changes it (audited).
The poller stores every mail the same way (one batch transaction: rows,
jobs, cursor); ``classify`` only decides the kind of a prepared mail:

  mail                                           | kind    | status  | job
  -----------------------------------------------|---------|---------|----------------------
  inbound, Date before the cut-off               | history | history | index_history (history
  in the Sent folder (a reply of ours), any date | sent    | history |  queue, listened to last)
  anything else                                  | (as prepared: new mail is work)

A mail without a Date header is new work (never swallowed as history). History
rows are parsed and indexed by their job on the history queue (the poller, which
also brings new mail, only reads headers) and never reach classify, draft or
review. An inbound mail is linked to the reply that solved it:
``answered_via`` = ``flag`` (the server's ``\\Answered``), or ``sent_reply``
with ``answered_by`` = the row of our reply naming it by In-Reply-To /
References (``link_replies``, in the batch's transaction, either order of
arrival); each solved case is a labelled example of source ``history`` with only the
label the reply proves (needs_reply; ``db.examples``), embedded by the index job.

Failure table (situation | retry? | state known? | resume?):
  crash / kill mid-import (any point) | yes: next poll | committed batches stay (rows, jobs,
      cursor in one transaction) | from the cursor; dedup key + job key: no duplicates
  a second poller at once             | no: the lease lets one poll | yes | -
  re-run (cursor reset, UIDVALIDITY)  | - | duplicates recognised by the dedup key | -
  index job fails (a store down)      | the job retry cycle; a store missing -> partially_indexed
      (the periodic sync fills it) | yes | yes
  the mail row of a job is gone       | no (PermanentError) | yes: job dead | -

Index jobs run in batches (``history_index_batch``, 128): a job takes waiting, due
entries of its queue with it (``JobStore.claim_companions``, locked rows skipped), parses
their mails, indexes them together (``indexing.batch``: its own failure table for the
stores) and finishes them in one transaction with their index status and audit events.
A failed entry is never taken into a batch: it runs alone on its own delivery.

  batch situation                      | retry? | state known? | resume?
  one mail of the batch: parse raises  | as a job of one mail (unexpected: dead, ALARM) | yes:
      that entry only; the others are indexed and done | -
  one mail's entry: its mail is gone   | no (PermanentError) | that entry dead | -
  one mail's text the embedder refuses | no | yes: that mail partially_indexed, the others
      complete | the periodic sync
  SIGKILL / crash at any point before  | by the stuck reset | entries processing, mails
      the batch's commit                |  pending (nothing of the batch marked) | each entry
      runs again alone (failed entries are not batched); vector points overwritten (same
      ids): no duplicate
  crash after the commit               | - | done | the companions' own deliveries: no-op
  new mail while a batch runs          | - | - | waits for at most one batch (the history
      queue is listened to last)
  embedder fails at a solved case's   | no: the classify step's embed_missing | yes: the
      example (history label)         | example stays without vector | embedded later
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core.errors import ClaimLostError, EmailRagError, PermanentError
from ..core.index_ports import MailToIndex
from ..core.records import Job, Mail
from ..core.settings import MailboxConfig
from ..core.states import Actor, MailStatus, ParseStatus
from ..db import Database, examples, slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor
from ..indexing.batch import index_batch
from ..indexing.indexer import Indexer
from ..jobs.handoff import FINISHED, Finished
from ..mail import mime
from .store import PreparedMail

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

RATE_WINDOW_S = 600  # the rate of the progress: index jobs done in the last 10 minutes


@dataclass(frozen=True)
class HistoryPlan:
    """How the mails of one folder poll are sorted: the cut-off, the folder's \\Answered
    UIDs, and whether the folder is the Sent folder."""

    cutoff: datetime | None  # None: history import off (every mail is work)
    answered: frozenset[int] = frozenset()
    sent_folder: bool = False


def cutoff(db: Database, mailbox_id: int, config: MailboxConfig) -> datetime:
    """The mailbox's cut-off; stored at its first poll (the configured one, else now)."""
    db.execute(sql("history_cutoff_init"), {"mailbox_id": mailbox_id,
                                            "cutoff": _as_utc(config.history_cutoff)})
    row = db.fetchone(sql("history_cutoff"), {"mailbox_id": mailbox_id})
    return row["history_cutoff"]


def set_cutoff(db: Database, name: str, when: datetime, by: str) -> dict[str, Any]:
    """The admin's change of a mailbox's cut-off, audited. Applies to mail stored from now
    on (stored rows keep their kind: history never turns into work, nor the reverse)."""
    when = _as_utc(when)
    with db.transaction() as cur:
        row = cur.fetchone(sql("history_cutoff_by_name"), {"name": name})
        if row is None:
            raise EmailRagError(f"no mailbox named {name} has been polled yet")
        before = row["history_cutoff"]
        cur.execute(sql("history_cutoff_set"), {"mailbox_id": row["id"], "cutoff": when})
        write_events(cur, [AuditEvent(by, "mailbox", name, "history_cutoff_changed",
                                      detail={"from": str(before) if before else None,
                                              "to": str(when)})])
    return {"mailbox": name, "from": str(before) if before else None, "to": str(when)}


def _as_utc(when: datetime | None) -> datetime | None:
    if when is None or when.tzinfo is None:
        return when
    return when.astimezone(UTC).replace(tzinfo=None)


def classify(p: PreparedMail, plan: HistoryPlan) -> PreparedMail:
    """The kind of a prepared mail under ``plan`` (see the module's table)."""
    if plan.cutoff is None or not p.headers.ok:
        return p
    if plan.sent_folder:
        if p.kind not in ("normal", "no_reply"):
            return p  # too large, reused id: kept for a human as prepared
        return replace(p, kind="sent", status=MailStatus.HISTORY, direction="out",
                       auto_reason=None, status_reason="a reply of ours from the Sent folder")
    # a Date header has whole seconds: a mail of the cut-off's own second is not older
    if (p.kind != "normal" or p.headers.sent_at is None
            or p.headers.sent_at >= plan.cutoff.replace(microsecond=0)):
        return p
    return replace(
        p, kind="history", status=MailStatus.HISTORY,
        answered_via="flag" if p.uid in plan.answered else None,
        status_reason=f"history: sent before the mailbox's cut-off {plan.cutoff:%Y-%m-%d %H:%M}")


# --- answered links, in the batch's transaction ---

def link_replies(cur: Cursor, mailbox_id: int, mailbox_name: str,
                 new: Sequence[tuple[int, PreparedMail]]) -> list[AuditEvent]:
    """Link inbound mails to the replies of ours that name them (either stored first); one
    lookup per direction and batch. Every solved case (linked, or flagged \\Answered) becomes
    a labelled example of source ``history`` (``db.examples.record_history``)."""
    links: dict[int, int] = {}  # inbound mail -> the reply answering it
    names: dict[str, int] = {}  # a Message-ID one of the new replies names -> that reply
    for email_id, p in new:
        if p.direction == "out":
            for m in [p.headers.in_reply_to, *p.headers.references]:
                if m:
                    names.setdefault(m.lower(), email_id)  # the column compares caseless
    if names:
        keys = sorted(names)
        for r in cur.fetchall(sql("history_answered_candidates", ids=len(keys)),
                              {"mailbox_id": mailbox_id, **slot_params(ids=keys)}):
            links.setdefault(int(r["id"]), names[r["message_id"].lower()])
    inbound = {p.headers.message_id.lower(): email_id for email_id, p in new
               if p.direction == "in" and p.headers.ok and p.headers.message_id
               and email_id not in links}
    if inbound:
        keys = sorted(inbound)
        for r in cur.fetchall(sql("history_replies_to", ids=len(keys)),
                              {"mailbox_id": mailbox_id, **slot_params(ids=keys)}):
            links.setdefault(inbound[r["in_reply_to"].lower()], int(r["id"]))
    for email_id, reply_id in sorted(links.items()):
        cur.execute(sql("history_set_answered_by"), {"id": email_id, "reply_id": reply_id})
    examples.record_history(cur, [*links, *(i for i, p in new if p.answered_via == "flag")])
    return [_linked(email_id, reply_id, mailbox_name)
            for email_id, reply_id in sorted(links.items())]


def _linked(email_id: int, reply_id: int, mailbox: str) -> AuditEvent:
    return AuditEvent(Actor.POLLER, "email", email_id, "answered_linked",
                      detail={"reply_email_id": reply_id, "mailbox": mailbox,
                              "via": "sent_reply"})


# --- the index-only job (history queue) ---

def run_index_job(services: ServiceContext, job: Job, worker: str) -> Finished:
    """Handler of ``index_history`` entries: ``job`` and up to ``history_index_batch`` - 1
    waiting ones are taken together (``JobStore.claim_companions``); their mails are
    parsed (once), indexed with one embedder call and one vector upsert
    (``indexing.batch``), and their index status, audit events and the entries' finish
    are written in one transaction. A repeat after a crash parses nothing twice and
    overwrites the same index entries (deterministic ids). See the module's failure
    table for a mail of the batch that fails."""
    jobs = [job, *services.jobs.claim_companions(
        job, worker, int(services.settings.history_index_batch) - 1)]
    mails = _parse_pending(services, _mails(services, jobs, worker), worker)
    if not mails:
        return FINISHED
    results = index_batch(Indexer(services), [MailToIndex.of(m.as_row()) for _, m in mails])
    actor = f"{Actor.WORKER}:{worker}"
    events: list[AuditEvent] = []
    for _, mail in mails:
        result = results[mail.id]
        events.extend(AuditEvent(actor, "email", mail.id, name,
                                 detail={**d, "purpose": "history"})
                      for name, d in result.try_events())
        events.append(AuditEvent(actor, "email", mail.id,
                                 "partially_indexed" if result.missing else "indexed",
                                 str(mail.index_status), str(result.status),
                                 detail={"purpose": "history", "missing": result.missing,
                                         "batch": len(mails),
                                         "stores": {s: r.state
                                                    for s, r in result.stores.items()}}))
    finished = set()
    with services.db.transaction() as cur:
        cur.executemany(sql("index_set_status"), [
            {"id": mail.id, "status": str(results[mail.id].status),
             "missing": ",".join(results[mail.id].missing) or None} for _, mail in mails])
        for j, _ in mails:
            if services.jobs.finish_in(cur, j, worker, events):
                finished.add(j.id)
        write_events(cur, events)
    _embed_examples(services, [m for _, m in mails])
    if job.id not in finished and any(j.id == job.id for j, _ in mails):
        raise ClaimLostError(f"job {job.id} was reset while its batch ran: its index "
                             "status is written, the entry is left to its new run")
    return FINISHED


def _mails(services: ServiceContext, jobs: list[Job], worker: str) -> list[tuple[Job, Mail]]:
    """The mails of ``jobs`` (one statement, without the raw mail); an entry whose mail is
    gone is dead (PermanentError), the others go on."""
    ids = [int(j.email_id) for j in jobs if j.email_id is not None]
    rows = {int(r["id"]): Mail.from_row(r) for r in services.db.fetchall(
        sql("history_batch_mails", ids=len(ids)), slot_params(ids=ids))} if ids else {}
    out = []
    for j in jobs:
        mail = rows.get(int(j.email_id)) if j.email_id is not None else None
        if mail is None:
            services.jobs.fail(j, worker, PermanentError(
                f"email {j.email_id} of job {j.id} does not exist"))
        else:
            out.append((j, mail))
    return out


RAW_PER_READ = 32 * 1024 * 1024  # raw bytes read in one statement for the parse


def _parse_pending(services: ServiceContext, mails: list[tuple[Job, Mail]], worker: str
                   ) -> list[tuple[Job, Mail]]:
    """The batch with its mails parsed: those not parsed yet are (their raw read in groups
    of at most RAW_PER_READ bytes: a batch of large mails never sits in memory at once), the
    results stored in one transaction. A mail whose parse raises leaves the batch and its
    entry fails (the retry cycle); the others go on."""
    parsed: dict[int, dict[str, Any]] = {}
    failed: set[int] = set()
    for group in _raw_groups([m for _, m in mails if m.parse_status == ParseStatus.PENDING]):
        ids = [m.id for m in group]
        raws = {int(r["id"]): bytes(r["raw"] or b"") for r in services.db.fetchall(
            sql("history_raws", ids=len(ids)), slot_params(ids=ids))}
        for m in group:
            try:
                parsed[m.id] = _parsed_columns(services.settings, m, raws.get(m.id, b""))
            except EmailRagError:
                raise
            except Exception as e:  # noqa: BLE001 - this mail's entry fails, the batch goes on
                log.warning("history mail %s not parsed (%s): its entry fails, the batch "
                            "goes on", m.id, type(e).__name__)
                failed.add(m.id)
                services.jobs.fail(next(j for j, x in mails if x.id == m.id), worker, e)
        del raws
    if parsed:
        with services.db.transaction() as cur:
            cur.executemany(sql("history_set_parsed"),
                            [{"id": i, **c} for i, c in parsed.items()])
    return [(j, m.with_columns(parsed[m.id]) if m.id in parsed else m)
            for j, m in mails if m.id not in failed]


def _raw_groups(mails: list[Mail]) -> list[list[Mail]]:
    groups: list[list[Mail]] = []
    size = 0
    for m in mails:
        n = int(m.raw_size or 0)
        if not groups or (groups[-1] and size + n > RAW_PER_READ):
            groups.append([])
            size = 0
        groups[-1].append(m)
        size += n
    return groups


def _parsed_columns(s: Any, mail: Mail, raw: bytes) -> dict[str, Any]:
    p = mime.parse_mail(raw, size=int(mail.raw_size or len(raw)),
                        max_mail_bytes=s.max_mail_bytes,
                        max_attachment_bytes=s.max_attachment_bytes)
    return {"parse_status": str(p.parse_status), "parse_error": p.reason,
            "body_text": p.body_text, "body_html": p.body_html,
            "attachments": p.attachments_json(), "attachment_text": p.attachment_text}


def _embed_examples(services: ServiceContext, mails: list[Mail]) -> None:
    """The vectors of the solved cases these mails complete (their own examples, or those
    of the questions our replies answer), in one embedder call; the classify step embeds
    what is left when the embedder fails here."""
    try:
        examples.embed_for_mails(services.db, services.embedder, mails)
    except Exception as e:  # noqa: BLE001 - the examples are an aid; the index job is done
        log.warning("%d mails: examples not embedded (%s); the classify step embeds them",
                    len(mails), type(e).__name__)


# --- progress ---

@dataclass(frozen=True)
class Progress:
    total: int  # history rows stored (inbound and our replies)
    done: int  # of them indexed (complete, partially indexed or nothing to index)
    replies: int
    answered: int
    rate_per_s: float  # index jobs done per second over the last RATE_WINDOW_S

    @property
    def left(self) -> int:
        return self.total - self.done

    @property
    def seconds_left(self) -> float | None:
        if not self.left:
            return 0.0
        return round(self.left / self.rate_per_s, 1) if self.rate_per_s > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total, "done": self.done, "left": self.left,
                "replies": self.replies, "answered": self.answered,
                "rate_per_s": self.rate_per_s, "seconds_left": self.seconds_left}


def progress(db: Database) -> Progress:
    r = db.fetchone(sql("history_progress"))
    n = db.fetchone(sql("history_recent_done"), {"window_s": RATE_WINDOW_S})
    return Progress(int(r["total"]), int(r["done"]), int(r["replies"]), int(r["answered"]),
                    round(int(n["n"]) / RATE_WINDOW_S, 3))
