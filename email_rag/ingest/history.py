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
  embedder fails at a solved case's   | no: the classify step's embed_missing | yes: the
      example (history label)         | example stays without vector | embedded later
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ..core.errors import EmailRagError, PermanentError
from ..core.records import Job, Mail
from ..core.settings import MailboxConfig
from ..core.states import Actor, MailStatus, ParseStatus
from ..db import Database, examples, slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor
from ..indexing.indexer import Indexer
from ..mail import mime
from .store import PreparedMail

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

def run_index_job(services: Any, job: Job, worker: str) -> None:
    """Handler of ``index_history`` entries: parse the mail (once), index it, record its
    index status. A repeat after a crash parses nothing twice and overwrites the same
    index entries (deterministic ids)."""
    mail, raw = _mail(services, job)
    if mail.parse_status == ParseStatus.PENDING:
        mail = _parse(services, mail, raw)
    del raw
    result = Indexer(services).index(mail.as_row())
    status, missing = result.status, result.missing
    actor = f"{Actor.WORKER}:{worker}"
    events = [AuditEvent(actor, "email", mail.id, name, detail={**d, "purpose": "history"})
              for name, d in result.try_events()]
    events.append(AuditEvent(actor, "email", mail.id,
                             "partially_indexed" if missing else "indexed",
                             str(mail.index_status), str(status),
                             detail={"purpose": "history", "missing": missing,
                                     "stores": {s: r.state for s, r in result.stores.items()}}))
    with services.db.transaction() as cur:
        cur.execute(sql("index_get_for_update"), {"id": mail.id})
        cur.execute(sql("index_set_status"), {"id": mail.id, "status": str(status),
                                              "missing": ",".join(missing) or None})
        write_events(cur, events)
    _embed_examples(services, mail)


def _embed_examples(services: Any, mail: Mail) -> None:
    """The vector of the solved case this mail completes (its own example, or the one of
    the question our reply answers); the classify step embeds what is left when the
    embedder fails here."""
    if mail.mailbox_id is None:
        return
    try:
        examples.embed_for_mail(services.db, services.embedder, mail.mailbox_id, mail.id,
                                mail.in_reply_to)
    except Exception as e:  # noqa: BLE001 - the example is an aid; the index job is done
        log.warning("mail %s: example not embedded (%s); the classify step embeds it",
                    mail.id, type(e).__name__)


def _mail(services: Any, job: Job) -> tuple[Mail, bytes]:
    """The job's mail and its raw source, in one statement (a history mail is parsed on
    its first run)."""
    row = services.db.fetchone(sql("pipeline_run_mail_raw"), {"id": job.email_id})
    if row is None:
        raise PermanentError(f"email {job.email_id} of job {job.id} does not exist")
    return Mail.from_row(row), bytes(row.get("raw") or b"")


def _parse(services: Any, mail: Mail, raw: bytes) -> Mail:
    """Parse the raw mail, store the result (unless another run did already: the same
    parse of the same bytes) and return the mail with it."""
    s = services.settings
    parsed = mime.parse_mail(raw, size=int(mail.raw_size or len(raw)),
                             max_mail_bytes=s.max_mail_bytes,
                             max_attachment_bytes=s.max_attachment_bytes)
    columns = {"parse_status": str(parsed.parse_status), "parse_error": parsed.reason,
               "body_text": parsed.body_text, "body_html": parsed.body_html,
               "attachments": parsed.attachments_json(),
               "attachment_text": parsed.attachment_text}
    services.db.execute(sql("history_set_parsed"), {"id": mail.id, **columns})
    return mail.with_columns(columns)


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
