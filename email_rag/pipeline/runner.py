"""Runs the steps of one mail's process_email job, with a checkpoint per step.

A step's confirmed result is committed (email_steps row, mail columns, status,
audit events: one transaction) before the next step starts; a re-run skips
confirmed steps. Steps that need the vector store run on the vector queue:
when the next step needs another queue, the job is handed off there - unless
this process may run that queue's steps itself (``also_runs``: the worker that
owns the local vector store runs vector steps of any job it holds, without a
hand-off; steps of the default queue after them are still handed back, so the
LLM work spreads over all workers). Continuing in-process changes nothing in
the guarantees: the claim is the same, every step still has its checkpoint,
and a failure retries the job from its own queue, where the confirmed steps
are skipped and the vector step is handed off again if needed.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from ..audit import AuditEvent, write_events
from ..db import sql, update_emails
from ..db.connection import DatabaseBusyError
from ..errors import PermanentError
from ..routing import queues
from ..states import Actor, Step
from .contract import StepContext, StepOutcome, StepSpec

log = logging.getLogger(__name__)

CHECKPOINT_TRIES = 3  # a deadlock / lock wait timeout is retried in place this often


class ClaimLostError(Exception):
    """The entry is no longer ours (reset by cleanup); stop without writing anything."""


@dataclass(frozen=True)
class Handoff:
    queue: str
    reason: str


class PipelineRunner:
    def __init__(self, services: Any, pipeline: list[StepSpec],
                 also_runs: frozenset[str] = frozenset()) -> None:
        self.services = services
        self.pipeline = pipeline
        self.also_runs = also_runs  # queues whose steps this process runs without a hand-off

    def run(self, job: dict[str, Any], worker: str) -> Handoff | None:
        db = self.services.db
        email_id = job["email_id"]
        if email_id is None:
            raise PermanentError(f"job {job['id']} has no email_id")
        with db.transaction() as cur:  # one read transaction (one commit) for both
            confirmed = {
                r["step"]: json.loads(r["detail"]) if r["detail"] else {}
                for r in cur.fetchall(sql("steps_confirmed"), {"email_id": email_id})
            }
            # read once per run; each checkpoint's columns are applied below
            email = cur.fetchone(sql("emails_get"), {"id": email_id})
        default_q, vector_q = queues(self.services.settings)
        naive = self.services.stores.naive  # the chaos counter-check's variant, chosen once
        for spec in self.pipeline:
            target = vector_q if spec.needs_vectors else default_q
            # naive (chaos counter-check only): confirmed steps of this queue run again
            if spec.step in confirmed and (not naive or target != job["queue"]):
                continue
            if target != job["queue"] and target not in self.also_runs:
                return Handoff(target, f"step {spec.step} runs on queue {target}")
            if email is None:
                raise PermanentError(f"email {email_id} of job {job['id']} does not exist")
            ctx = StepContext(self.services, email, job, spec.step, dict(confirmed))
            outcome = spec.run(ctx)
            self.checkpoint(job, worker, email, spec.step, outcome)
            email = {**email, **checkpoint_columns(outcome)}
            if outcome.confirmed:
                confirmed[spec.step] = outcome.detail
            if outcome.stop:
                break
        return None

    def checkpoint(self, job: dict[str, Any], worker: str, email: dict[str, Any], step: Step,
                   outcome: StepOutcome) -> None:
        """One transaction: checkpoint row, mail columns and status, extra writes, audit.

        A deadlock or lock wait timeout (two workers writing drafts of different mails
        took gap locks in the same index range: seen with two processes in the worker
        benchmark) rolled the whole transaction back, so it is repeated at once, up to
        ``CHECKPOINT_TRIES`` times; the repeat is audited in the committed transaction.
        After that the error fails the attempt like any transient error.
        """
        retried: list[AuditEvent] = []
        for attempt in range(1, CHECKPOINT_TRIES + 1):
            try:
                return self._checkpoint(job, worker, email, step, outcome, retried)
            except DatabaseBusyError as e:
                if attempt == CHECKPOINT_TRIES:
                    raise
                log.warning("checkpoint of step %s (job %s) hit %s; repeating it (try %d of %d)",
                            step, job["id"], e, attempt + 1, CHECKPOINT_TRIES)
                retried.append(AuditEvent(
                    Actor.WORKER, "email", email["id"], "checkpoint_retried",
                    attempt=job["attempts"],
                    detail={"step": str(step), "job_id": job["id"], "error": str(e),
                            "try": attempt + 1}))
                time.sleep(0.01 * attempt)

    def _checkpoint(self, job: dict[str, Any], worker: str, email: dict[str, Any], step: Step,
                    outcome: StepOutcome, retried: list[AuditEvent]) -> None:
        with self.services.db.transaction() as cur:
            if cur.fetchone(sql("jobs_still_mine_for_update"),
                            {"id": job["id"], "worker": worker}) is None:
                raise ClaimLostError(f"job {job['id']} is no longer claimed by {worker}")
            updates = {c: _db_value(v) for c, v in outcome.email_updates.items()}
            if updates:
                cur.execute(*update_emails(email["id"], updates))
            if outcome.confirmed:
                cur.execute(sql("steps_confirm"), {
                    "email_id": email["id"], "step": str(step),
                    "detail": json.dumps(outcome.detail, default=str)})
            if outcome.write is not None:
                outcome.write(cur)
            events = [*retried, *outcome.events]
            events.append(AuditEvent(
                Actor.WORKER, "email", email["id"],
                "step_confirmed" if outcome.confirmed else "step_not_confirmed",
                attempt=job["attempts"],
                detail={"step": str(step), "job_id": job["id"],
                        **({"reason": outcome.status_reason} if outcome.status_reason else {})}))
            if outcome.mail_status is not None:  # the entry is ours (locked above): the
                # status this run read is current unless someone else moved it; the
                # store's conditional UPDATE refuses the move then
                self.services.stores.mails.move(
                    cur, email["id"], outcome.mail_status, actor=Actor.WORKER,
                    reason=outcome.status_reason, attempt=job["attempts"],
                    current=email["status"], events=events,
                    detail={"step": str(step), "job_id": job["id"]})
            write_events(cur, events)


def checkpoint_columns(outcome: StepOutcome) -> dict[str, Any]:
    """The ``emails`` columns a checkpoint writes, as written: the next step of the same
    run sees the row with them (the same values a fresh read would give for the columns
    the steps use; this saves a read of the whole row, raw mail included, per step)."""
    updates = {c: _db_value(v) for c, v in outcome.email_updates.items()}
    if outcome.mail_status is not None:
        updates["status"] = str(outcome.mail_status)
        updates["status_reason"] = outcome.status_reason
    return updates


def _db_value(v: Any) -> Any:
    if isinstance(v, dict | list):
        return json.dumps(v, default=str)
    return str(v) if hasattr(v, "value") and isinstance(v, str) else v
