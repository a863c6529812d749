"""Runs the steps of one mail's process_email job, with a checkpoint per step.

A step's confirmed result is committed (email_steps row, mail columns, status,
audit events: one transaction) before the next step starts; a re-run skips
confirmed steps. Steps that need the vector store run on the vector queue:
when the next step needs another queue, the job is handed off there.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from ..audit import AuditEvent, write_events
from ..db import sql
from ..errors import PermanentError
from ..states import Actor, Step
from .contract import StepContext, StepOutcome, StepSpec

log = logging.getLogger(__name__)


class ClaimLostError(Exception):
    """The entry is no longer ours (reset by cleanup); stop without writing anything."""


@dataclass(frozen=True)
class Handoff:
    queue: str
    reason: str


def queues(settings: Any) -> tuple[str, str]:
    """(default queue, vector queue). With a Qdrant server they are the same queue."""
    vector = settings.queue_name if settings.qdrant_url else settings.vector_queue_name
    return settings.queue_name, vector


class PipelineRunner:
    def __init__(self, services: Any, pipeline: list[StepSpec]) -> None:
        self.services = services
        self.pipeline = pipeline

    def run(self, job: dict[str, Any], worker: str) -> Handoff | None:
        db = self.services.db
        email_id = job["email_id"]
        if email_id is None:
            raise PermanentError(f"job {job['id']} has no email_id")
        confirmed = {
            r["step"]: json.loads(r["detail"]) if r["detail"] else {}
            for r in db.fetchall(sql("steps_confirmed"), {"email_id": email_id})
        }
        default_q, vector_q = queues(self.services.settings)
        safeguards = self.services.settings.safeguards
        for spec in self.pipeline:
            target = vector_q if spec.needs_vectors else default_q
            # naive (chaos counter-check only): confirmed steps of this queue run again
            if spec.step in confirmed and (safeguards or target != job["queue"]):
                continue
            if target != job["queue"]:
                return Handoff(target, f"step {spec.step} runs on queue {target}")
            email = db.fetchone(sql("emails_get"), {"id": email_id})
            if email is None:
                raise PermanentError(f"email {email_id} of job {job['id']} does not exist")
            ctx = StepContext(self.services, email, job, spec.step, dict(confirmed))
            outcome = spec.run(ctx)
            self.checkpoint(job, worker, email, spec.step, outcome)
            if outcome.confirmed:
                confirmed[spec.step] = outcome.detail
            if outcome.stop:
                break
        return None

    def checkpoint(self, job: dict[str, Any], worker: str, email: dict[str, Any], step: Step,
                   outcome: StepOutcome) -> None:
        """One transaction: checkpoint row, mail columns and status, extra writes, audit."""
        with self.services.db.transaction() as cur:
            if cur.fetchone(sql("jobs_still_mine") + " FOR UPDATE",
                            {"id": job["id"], "worker": worker}) is None:
                raise ClaimLostError(f"job {job['id']} is no longer claimed by {worker}")
            updates = dict(outcome.email_updates)
            if outcome.mail_status is not None:
                updates["status"] = str(outcome.mail_status)
                updates["status_reason"] = outcome.status_reason
            if updates:
                cols = ", ".join(f"`{c}` = %s" for c in updates)
                cur.execute(f"UPDATE emails SET {cols} WHERE id = %s",
                            (*[_db_value(v) for v in updates.values()], email["id"]))
            if outcome.confirmed:
                cur.execute(sql("steps_confirm"), {
                    "email_id": email["id"], "step": str(step),
                    "detail": json.dumps(outcome.detail, default=str)})
            if outcome.write is not None:
                outcome.write(cur)
            events = list(outcome.events)
            events.append(AuditEvent(
                Actor.WORKER, "email", email["id"],
                "step_confirmed" if outcome.confirmed else "step_not_confirmed",
                attempt=job["attempts"],
                detail={"step": str(step), "job_id": job["id"],
                        **({"reason": outcome.status_reason} if outcome.status_reason else {})}))
            if outcome.mail_status is not None and outcome.mail_status != email["status"]:
                events.append(AuditEvent(
                    Actor.WORKER, "email", email["id"], "state_changed", email["status"],
                    outcome.mail_status, attempt=job["attempts"],
                    detail={"step": str(step), "reason": outcome.status_reason}))
            write_events(cur, events)


def _db_value(v: Any) -> Any:
    if isinstance(v, dict | list):
        return json.dumps(v, default=str)
    return str(v) if hasattr(v, "value") and isinstance(v, str) else v
