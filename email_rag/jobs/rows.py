"""``JobRows`` (core/ports.py) on MariaDB: the named queries of jobs.sql and the status
stores (db/stores.py), typed records at the boundary (``from_row``).

The worker's moves are compare-and-set UPDATEs (``... AND state = 'processing' AND
worker = %(worker)s``): their row count says whether the entry was still this worker's.
Concurrency (two workers, a stuck reset racing a finish) is decided here, by MariaDB;
the integration tests prove it, the unit tests prove the decisions above it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from ..core.jsonvalue import JsonObject
from ..core.ports import NewJob
from ..core.records import Job, Mail, SendAttempt
from ..core.rows import Params, Row
from ..core.states import DraftStatus, JobState, MailStatus
from ..db import Database, slot_params, sql
from ..db.audit import AuditEvent, write_events
from ..db.connection import Cursor
from ..db.stores import Stores

MOVE_QUERIES = {"requeue": "jobs_move_requeue", "close": "jobs_move_close",
                "resolve": "jobs_move_resolve"}


@dataclass
class MariaJobRows:
    db: Database
    stores: Stores
    claim_query: str = "jobs_claim"  # queued/failed, due, of the delivery's queue -> processing
    cur: Cursor | None = None  # the open transaction these rows are read and written in

    @contextmanager
    def transaction(self) -> Iterator[MariaJobRows]:
        with self.db.transaction() as cur:
            yield self.within(cur)

    def within(self, cur: Any) -> MariaJobRows:
        return replace(self, cur=cur)

    def _one(self, name: str, params: Params) -> Row | None:
        if self.cur is not None:
            return self.cur.fetchone(sql(name), params)
        return self.db.fetchone(sql(name), params)

    def _all(self, name: str, params: Params) -> list[Row]:
        if self.cur is not None:
            return self.cur.fetchall(sql(name), params)
        return self.db.fetchall(sql(name), params)

    def _cur(self) -> Cursor:
        assert self.cur is not None, "a write runs inside transaction() or within(cur)"
        return self.cur

    def _set(self, name: str, params: Params) -> bool:
        return self._cur().execute(sql(name), params) == 1

    # --- reads ---
    def get(self, job_id: int, lock: bool = False) -> Job | None:
        row = self._one("jobs_get_for_update" if lock else "jobs_get", {"id": job_id})
        return Job.from_row(row) if row else None

    def by_key(self, job_key: str) -> Job | None:
        row = self._one("jobs_by_key_for_update", {"job_key": job_key})
        return Job.from_row(row) if row else None

    def stuck(self, older_than_s: float, limit: int) -> list[Job]:
        return [Job.from_row(r) for r in self._all(
            "jobs_stuck", {"seconds": older_than_s, "limit": limit})]

    def open_of_mail(self, email_id: int) -> list[Job]:
        return [Job.from_row(r) for r in self._all("jobs_open_of_mail_for_update",
                                                   {"email_id": email_id})]

    def mail(self, email_id: int) -> Mail | None:
        row = self._one("emails_get_for_update", {"id": email_id})
        return Mail.from_row(row) if row else None

    def unknown_send(self, email_id: int) -> int | None:
        rows = self._all("web_mail_unknown_sends", {"email_id": email_id})
        return int(rows[0]["id"]) if rows else None

    def send_of_draft(self, draft_id: int) -> SendAttempt | None:
        row = self._one("sends_by_draft_for_update", {"draft_id": draft_id})
        return SendAttempt.from_row(row) if row else None

    def confirmed_steps(self, email_id: int) -> set[str]:
        return {r["step"] for r in self._all("steps_confirmed", {"email_id": email_id})}

    # --- the worker's compare-and-set moves ---
    def claim(self, job_id: int, worker: str, queue: str | None) -> Job | None:
        if not self._set(self.claim_query, {"id": job_id, "worker": worker, "queue": queue}):
            return None
        return self.get(job_id)

    def claim_companions(self, job: Job, worker: str, limit: int) -> list[Job]:
        ids = [int(r["id"]) for r in self._all("jobs_companions_for_update", {
            "kind": job.kind, "queue": job.queue, "id": job.id, "limit": limit})]
        if not ids:
            return []
        params = {"worker": worker, **slot_params(ids=ids)}
        self._cur().execute(sql("jobs_claim_many", ids=len(ids)), params)
        return [Job.from_row(r) for r in self._cur().fetchall(
            sql("jobs_get_mine_many", ids=len(ids)), params)]

    def still_mine(self, job_id: int, worker: str, lock: bool = False) -> bool:
        name = "jobs_still_mine_for_update" if lock else "jobs_still_mine"
        return self._one(name, {"id": job_id, "worker": worker}) is not None

    def finish(self, job: Job, worker: str) -> bool:
        return self._set("jobs_finish", {"id": job.id, "worker": worker})

    def handoff(self, job: Job, worker: str, queue: str) -> bool:
        return self._set("jobs_handoff", {"id": job.id, "worker": worker, "queue": queue})

    def fail(self, job: Job, worker: str, state: JobState, error: str, delay: float) -> bool:
        return self._set("jobs_fail", {"id": job.id, "worker": worker, "state": state,
                                       "error": error, "delay": delay})

    def reset_stuck(self, job: Job, state: JobState, error: str, delay: float) -> bool:
        return self._set("jobs_reset_stuck", {
            "id": job.id, "state": state, "error": error, "delay": delay,
            "worker": job.worker, "started_at": job.started_at})

    def create(self, new: Sequence[NewJob], *, actor: str, event: str) -> list[Job]:
        return create_jobs(self._cur(), new, actor=actor, event=event)

    # --- moves along the transition tables ---
    def move_job(self, job: Job, to: JobState, how: str, *, actor: str, event: str,
                 detail: JsonObject | None = None, queue: str | None = None,
                 note: str | None = None) -> Job:
        columns: Params = {"queue": queue} if how == "requeue" else {}
        if how == "resolve":
            columns["note"] = note
        self.stores.jobs.move(self._cur(), job.id, to, actor=actor, event=event,
                              query=MOVE_QUERIES[how], current=job.state,
                              attempt=job.attempts if how == "requeue" else None,
                              detail=detail, **columns)
        if how == "requeue":
            return replace(job, state=to, attempts=0, worker=None, started_at=None,
                           finished_at=None, last_error=None, queue=queue or job.queue)
        return replace(job, state=to)

    def move_mail(self, mail: Mail, to: MailStatus, *, actor: str, reason: str | None,
                  detail: JsonObject | None = None, attempt: int | None = None) -> None:
        self.stores.mails.move(self._cur(), mail.id, to, actor=actor, reason=reason,
                               current=mail.status, detail=detail, attempt=attempt)

    def return_draft(self, draft_id: int, *, actor: str, reason: str,
                     detail: JsonObject) -> None:
        self.stores.drafts.move(self._cur(), draft_id, DraftStatus.PENDING_REVIEW, actor=actor,
                                event="returned_to_review", reason=reason, detail=detail)

    def record(self, events: Sequence[AuditEvent]) -> None:
        write_events(self._cur(), list(events))


MAX_JOB_ROWS = 500  # rows per bulk INSERT
# the parameter names of one row of ``jobs_insert`` (``slot_params(rows=[row])``)
_ROW_KEYS = tuple(slot_params(rows=[tuple(range(6))]))


def create_jobs(cur: Cursor, new: Sequence[NewJob], *, actor: str, event: str,
                events: list[AuditEvent] | None = None) -> list[Job]:
    """The one way job rows are created (``JobStore.queue_work``, the poller's batch, the
    index sync's arming), in the caller's transaction: INSERT IGNORE on the natural key
    (named query ``jobs_insert``: its one-row form, ``MAX_JOB_ROWS`` rows per bulk round
    trip, as the mail rows are inserted). Every created row gets its audit event
    (``event``: none -> queued, with the entry's ``detail``); an entry whose key exists is
    left as it is and not returned (the caller decides what it means: a fresh cycle, a
    coalesced run, a row kept). ``events``: the caller's list of the transaction's events,
    written by the caller in the same transaction (one insert for all); None: written
    here."""
    created: list[Job] = []
    keys = [n.key for n in new]
    statement = sql("jobs_insert", rows=(1, 6))
    for i in range(0, len(new), MAX_JOB_ROWS):
        chunk = zip(new[i:i + MAX_JOB_ROWS], keys[i:i + MAX_JOB_ROWS], strict=True)
        rows = cur.fetchall_many(statement, [
            dict(zip(_ROW_KEYS, (str(n.kind), key, n.email_id, n.draft_id, n.queue,
                                 str(JobState.QUEUED)), strict=True))
            for n, key in chunk])
        created += [Job.from_row(r) for r in rows]
    detail = dict(zip(keys, (n.detail for n in new), strict=True))
    mine = [AuditEvent(actor, "job", j.id, event, None, JobState.QUEUED,
                       detail=detail[j.job_key]) for j in created]
    if events is None:
        write_events(cur, mine)
    else:
        events += mine
    return created
