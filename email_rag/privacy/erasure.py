"""Deleting mails and everything derived from them, in every store: the one way to delete a
mail's data. ``privacy forget`` (a person's mails) and retention (a mailbox's expired cases)
both call ``erase_batch``.

One batch of mails goes through four phases:

1. **mark**: ``erasure_marks`` gets a row per mail (committed): its erasure has begun, and a
   later run of the same cause finishes it even when nothing else would find the mail again;
2. **vector store**: every point of each mail (``replace_mail(id, [])``, through the adapter);
3. **graph store**: each mail's documents, computed as the indexer wrote them, and the
   person's vertex (forget) or the vertices of the people no other stored mail names
   (retention) (skipped when no graph is configured); the send journal's files of the mails' settled send attempts;
   the audit spool flushed to MariaDB;
4. **MariaDB**, one transaction: the mails and their queue entries locked, the ones a worker
   holds or whose reply is in flight left (``busy``, marked: the next run finishes them),
   the ones the caller no longer wants deleted released (``keep``: their index is marked for
   the periodic sync), the personal text of the audit detail of the others erased in place
   (``erase_audit_detail``: the events stay), every row of the others deleted with their
   marks, and the caller's audit events written.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| vector or graph store down (phase 2/3) | no: ``StoreUnavailableError`` to the caller | yes: the batch is marked, its rows untouched | the next run of the cause erases the marked mails first |
| killed between any two phases | - | yes: the marks are committed before phase 2; phase 4 is one transaction | as above (phases 2 and 3 are idempotent: deleting what is gone is no error) |
| a worker claims a mail's entry during phases 2-3 | - | phase 4 sees it ``processing`` and leaves the mail (marked) | the next run, after the job |
| MariaDB down | the caller's | yes: a transaction is all or nothing | run again |

No audit event is deleted: what happened, when and by whom stays; only its detail's personal
text goes (docs/privacy.md, "The audit log and erasure").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.index_ports import MailToIndex
from ..core.redact import erase_personal
from ..db import slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import repeat_when_busy
from ..indexing.indexer import Indexer
from ..sending.journal import SendJournal

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

PLAN_BATCH = 200  # mails counted per round trip
ROW_DELETES = ("privacy_delete_jobs", "privacy_delete_draft_jobs", "privacy_delete_send_attempts",
               "privacy_unlink_bounces", "privacy_unlink_answers", "privacy_delete_queue_keys", "privacy_delete_drafts",
               "privacy_delete_steps", "privacy_delete_examples", "privacy_delete_knowledge_candidates",
               "privacy_delete_mails")
# draft_edits, draft_presence and mail_assignments go with ON DELETE CASCADE


def batches(ids: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start:start + size])


def row_counts(db: Any, ids: list[int]) -> dict[str, int]:
    """What deleting ``ids`` removes in MariaDB, per table (``db``: the Database or a cursor)."""
    counts = {"mails": 0, "drafts": 0, "send_attempts": 0, "draft_edits": 0,
              "labelled_examples": 0, "jobs": 0}
    for batch in batches(ids, PLAN_BATCH):
        row = db.fetchone(sql("privacy_plan_counts", ids=len(batch)),
                          slot_params(ids=batch)) or {}
        for k in counts:
            counts[k] += int(row.get(k) or 0)
    return counts


def attachment_count(db: Any, ids: list[int]) -> int:
    n = 0
    for batch in batches(ids, PLAN_BATCH):
        n += int((db.fetchone(sql("erasure_attachment_count", ids=len(batch)),
                              slot_params(ids=batch)) or {}).get("n") or 0)
    return n


def busy(db: Any, ids: list[int]) -> set[int]:
    """The mails a worker holds or whose reply is in flight: never deleted now."""
    found: set[int] = set()
    for batch in batches(ids, PLAN_BATCH):
        rows = db.fetchall(sql("erasure_busy", ids=len(batch)), slot_params(ids=batch))
        found |= {int(r["email_id"]) for r in rows}
    return found


def marked(svc: ServiceContext, cause: str, mailbox_id: int, after: int, limit: int) -> list[int]:
    """Mails of ``mailbox_id`` whose erasure for ``cause`` began and did not finish."""
    rows = svc.db.fetchall(sql("erasure_marked"), {"cause": cause, "mailbox": mailbox_id,
                                                   "after": after, "limit": limit})
    return [int(r["email_id"]) for r in rows]


def release(svc: ServiceContext, ids: list[int]) -> None:
    """Call off the begun erasure of ``ids`` (their cause no longer wants them deleted):
    their marks go, and their index is marked for the periodic sync (points or graph
    documents may be gone already)."""
    if ids:
        params = slot_params(ids=ids)
        with svc.db.transaction() as cur:
            cur.execute(sql("erasure_reindex", ids=len(ids)), params)
            cur.execute(sql("erasure_unmark", ids=len(ids)), params)


@dataclass
class BatchResult:
    erased: list[int] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)  # left marked: a worker holds them
    released: list[int] = field(default_factory=list)  # the caller's keep() said no more
    counts: dict[str, int] = field(default_factory=dict)  # rows deleted per table


Keep = Callable[[Any, list[int]], set[int]]  # (cursor, ids) -> the ids still to delete
Events = Callable[[BatchResult], list[AuditEvent]]  # the batch's audit events


def erase_batch(svc: ServiceContext, ids: list[int], cause: str, *, person: str | None = None,
                keep: Keep | None = None, events: Events | None = None) -> BatchResult:
    """Delete the mails ``ids`` (one batch, all in MariaDB) in every store, in the four
    phases of this module's docstring. ``person``: the address being forgotten (its graph
    vertex goes too); ``keep``: the caller's re-check inside the final transaction;
    ``events``: audit events written in that transaction. ``StoreUnavailableError`` from
    a store leaves the batch marked for the next run."""
    if not ids:
        return BatchResult()
    params = slot_params(ids=ids)
    with svc.db.transaction() as cur:
        cur.execute(sql("erasure_mark", ids=len(ids)), {**params, "cause": cause})
    for email_id in ids:
        svc.vectors.replace_mail(email_id, [])
    if svc.graph is not None:
        indexer = Indexer(svc)
        children: dict[int, list[int]] = {}
        for row in svc.db.fetchall(sql("erasure_children", ids=len(ids)), params):
            children.setdefault(int(row["parent"]), []).append(int(row["child"]))
        named: set[str] = set()
        for row in svc.db.fetchall(sql("privacy_mails", ids=len(ids)), params):
            mail = MailToIndex.from_row(row)
            svc.graph.forget_mail(indexer.graph_mail(mail), person, children.get(mail.id, []))
            named |= _addresses(mail)
        if person is None:  # retention: the people no mail names any more go too
            svc.graph.forget_people(sorted(a for a in named if not svc.db.fetchone(
                sql("erasure_person_kept", ids=len(ids)), {**params, "address": a})["kept"]))
    journal = SendJournal(svc.settings.send_journal_dir)
    for row in svc.db.fetchall(sql("erasure_attempts", ids=len(ids)), params):
        journal.clear(int(row["id"]))
    svc.audit.flush_spool()  # events of these mails waiting there get their detail erased too
    return repeat_when_busy(lambda: _delete_rows(svc, ids, keep, events),
                            f"erasure of {len(ids)} mail(s)")


def erase_audit_detail(cur: Any, ids: list[int]) -> int:
    """Overwrite the personal content of the audit detail of the mails ``ids`` and of their
    drafts, send attempts and queue entries (``redact.erase_personal``), inside the
    caller's transaction, before those rows go; the events themselves stay. The one update
    the audit log allows (migration 0360). Returns the number of events changed."""
    keys: dict[str, list[str]] = {"email": [str(i) for i in ids], "draft": [],
                                  "send_attempt": [], "job": []}
    for row in cur.fetchall(sql("erasure_audit_entities", ids=len(ids)), slot_params(ids=ids)):
        keys[str(row["entity_type"])].append(str(row["entity_id"]))
    m, d, s, j = (keys[k] or ["-"] for k in ("email", "draft", "send_attempt", "job"))
    changed = []
    for row in cur.fetchall(sql("erasure_audit_details", mails=len(m), drafts=len(d),
                                sends=len(s), jobs=len(j)),
                            slot_params(mails=m, drafts=d, sends=s, jobs=j)):
        raw = row["detail"]
        try:
            detail = json.loads(raw)
        except ValueError:
            detail = raw if isinstance(raw, str) else bytes(raw).decode("utf-8", "replace")
        erased = erase_personal(detail)
        if erased != detail:
            changed.append({"id": int(row["id"]), "detail": json.dumps(erased)})
    if changed:
        cur.execute(sql("audit_erasure_begin"))
        try:
            cur.executemany(sql("audit_erase_detail"), changed)
        finally:
            cur.execute(sql("audit_erasure_end"))
    return len(changed)


def _addresses(mail: MailToIndex) -> set[str]:
    """The addresses a mail's graph documents name (sender, To, Cc), as the parsed columns
    hold them, lower-cased."""
    found = {(mail.from_addr or "").strip().lower()}
    for listed in (mail.to_addrs, mail.cc_addrs):
        parts = listed if isinstance(listed, list) else (listed or "").split(",")
        found |= {str(a).strip().lower() for a in parts}
    return {a for a in found if "@" in a}


def _delete_rows(svc: ServiceContext, ids: list[int], keep: Keep | None,
                 events: Events | None) -> BatchResult:
    """Phase 4, one transaction (repeated whole when MariaDB rolls it back for a deadlock or
    a lock wait timeout, e.g. against a worker's claim)."""
    result = BatchResult()
    params = slot_params(ids=ids)
    with svc.db.transaction() as cur:
        present = {int(r["id"]) for r in cur.fetchall(sql("privacy_lock_mails", ids=len(ids)),
                                                      params)}
        cur.fetchall(sql("erasure_lock_jobs", ids=len(ids)), params)
        held = busy(cur, sorted(present))
        wanted = keep(cur, sorted(present - held)) if keep else present - held
        result.busy = sorted(held)
        result.released = sorted(present - held - wanted)
        result.erased = sorted(wanted)
        if result.erased:
            result.counts = row_counts(cur, result.erased)
            result.counts["attachments"] = attachment_count(cur, result.erased)
            erase_audit_detail(cur, result.erased)
            gone = slot_params(ids=result.erased)
            for name in ROW_DELETES:
                cur.execute(sql(name, ids=len(result.erased)), gone)
        if result.released:
            cur.execute(sql("erasure_reindex", ids=len(result.released)),
                        slot_params(ids=result.released))
        done = result.erased + result.released + sorted(set(ids) - present)
        if done:
            cur.execute(sql("erasure_unmark", ids=len(done)), slot_params(ids=done))
        if events:
            write_events(cur, events(result))
    return result
