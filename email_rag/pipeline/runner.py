"""Runs the steps of one mail's process_email job, with checkpoints.

A step's confirmed result is committed (email_steps row, mail columns, status,
audit events: one transaction) before anything depends on it outside the
transaction; a re-run skips confirmed steps. Steps that run one after the other
in this process share one checkpoint transaction (a group) unless a step says
it changes an outside system with the results before it (``StepSpec.
commit_before``, e.g. the index step's vector upsert): then the group so far
is committed first. A group is also committed before a hand-off (in the same
transaction as the hand-off itself), when a step raises (the steps before it
stay done, the retry starts at the failed step), and at the end, where the
entry's finish is part of the last group's transaction. The default pipeline
has two groups: parse + classify (the LLM call only reads), then index +
retrieve + draft (+ finish).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| crash (kill) inside a group, before its commit | by cleanup (stuck reset) | yes: the group's steps are not confirmed, nothing of them written | the group runs again from its first step: a pure step recomputes, an LLM call is made again (costs tokens only), the vector upsert repeats with the same ids and data; nothing is written twice |
| a step raises (transient, permanent, unexpected) | per the retry policy | yes: the earlier steps of its group are committed first | at the failed step |
| claim lost (entry reset while a group ran) | - | yes: the group's commit is refused, nothing written (not the finish either) | by whoever holds the entry now |
| MariaDB lost mid-group | reconnect, wait | yes: the group's transaction rolled back | the run continues from the first unconfirmed step (the group is repeated) |
| crash after the last group's commit | - | yes: steps, draft and the entry's done committed together | nothing to do (before, the entry stayed processing until cleanup) |
| deadlock / lock wait timeout at a commit | repeated in place (3 tries), audited | yes | - |

Steps that need the vector store run on the vector queue: when the next step
needs another queue, the job is handed off there - unless this process may run
that queue's steps itself (``also_runs``: the worker that owns the local vector
store runs vector steps of any job it holds, without a hand-off; steps of the
default queue after them are still handed back, so the LLM work spreads over
all workers). Continuing in-process changes nothing in the guarantees: the claim
is the same, every group still has its checkpoint, and a failure retries the job
from its own queue, where the confirmed steps are skipped and the vector step is
handed off again if needed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import (
    ClaimLostError,
    DatabaseBusyError,
    DatabaseUnavailableError,
    PermanentError,
)
from ..core.jsonvalue import JsonValue
from ..core.records import Job, Mail
from ..core.routing import queues
from ..core.rows import Params, SqlValue
from ..core.states import Actor, MailStatus, Step
from ..core.timing import step_deadline, step_deadline_for
from ..db import sql, update_emails
from ..db.audit import AuditEvent, write_events
from ..db.connection import repeat_when_busy
from ..jobs.handoff import FINISHED, Finished, Handoff
from .contract import ColumnValue, StepContext, StepOutcome, StepSpec

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)


@dataclass
class StepDone:
    """One step's outcome waiting for its group's checkpoint transaction."""

    step: Step
    outcome: StepOutcome
    status_before: MailStatus  # the mail status the step started from (the store's ``current``)
    event: AuditEvent  # step_confirmed / step_not_confirmed, stamped when the step ended


class PipelineRunner:
    def __init__(self, services: ServiceContext, pipeline: list[StepSpec],
                 also_runs: frozenset[str] = frozenset()) -> None:
        self.services = services
        self.pipeline = pipeline
        self.also_runs = also_runs  # queues whose steps this process runs without a hand-off

    def skips(self, spec: StepSpec, confirmed: dict[str, JsonValue], target: str,
              job: Job) -> bool:
        """A step confirmed by an earlier run is not run again (``target``: the queue the
        step runs on; ``job``: the entry being run)."""
        return spec.step in confirmed

    def run(self, job: Job, worker: str) -> Handoff | Finished | None:
        db = self.services.db
        email_id = job.email_id
        if email_id is None:
            raise PermanentError(f"job {job.id} has no email_id")
        with db.transaction() as cur:  # one read transaction (one commit) for both
            confirmed = {
                r["step"]: json.loads(r["detail"]) if r["detail"] else {}
                for r in cur.fetchall(sql("steps_confirmed"), {"email_id": email_id})
            }
            # read once per run; each step's columns are applied below. The raw mail only
            # when a step that needs it runs here, and only for that step
            here = self._runs_here(confirmed, job)
            with_raw = any(spec.needs_raw for spec in here)
            row = cur.fetchone(sql("pipeline_run_mail_raw" if with_raw else "pipeline_run_mail"),
                               {"id": email_id})
            email = Mail.from_row(row) if row else None
            # the steps' own reads (``StepSpec.read_ahead``) in the same transaction
            read_ahead = {spec.step: spec.read_ahead(cur, email, self.services)
                          for spec in here if spec.read_ahead is not None and email is not None}
        raw = row.pop("raw", None) if row else None
        mailbox_name = None if row is None or row["mailbox_name"] is None \
            else str(row["mailbox_name"])
        del row
        default_q, vector_q = queues(self.services.settings)
        group: list[StepDone] = []  # done in this process, not committed yet
        for spec in self.pipeline:
            target = vector_q if spec.needs_vectors else default_q
            if self.skips(spec, confirmed, target, job):
                continue
            if target != job.queue and target not in self.also_runs:
                handoff = Handoff(target, f"step {spec.step} runs on queue {target}")
                if not group:
                    return handoff
                self.checkpoint(job, worker, email, group, handoff=handoff)
                return Handoff(handoff.queue, handoff.reason, recorded=True)
            if email is None:
                raise PermanentError(f"email {email_id} of job {job.id} does not exist")
            if group and spec.commit_before:
                self.checkpoint(job, worker, email, group)
                group = []
            ctx = StepContext(self.services, email, job, spec.step, dict(confirmed),
                              raw=bytes(raw) if spec.needs_raw and raw is not None else None,
                              mailbox_name=mailbox_name, read_ahead=read_ahead.pop(spec.step, None))
            if spec.needs_raw:
                raw = None  # the step has it; nothing later holds the raw mail
            try:
                with step_deadline(spec.step, step_deadline_for(self.services.settings,
                                                                 spec.step)):
                    outcome = spec.run(ctx)
            except (DatabaseUnavailableError, ClaimLostError):
                raise
            except Exception:
                if group:  # the steps before the failed one stay done
                    self.checkpoint(job, worker, email, group)
                raise
            group.append(StepDone(spec.step, outcome, email.status,
                                  step_event(job, email, spec.step, outcome)))
            email = email.with_columns(checkpoint_columns(outcome))
            if outcome.confirmed:
                confirmed[spec.step] = outcome.detail
            if outcome.stop:
                break
        if not group:
            return None  # nothing ran here (all confirmed): the job runner finishes
        self.checkpoint(job, worker, email, group, finish=True)
        return FINISHED

    def _runs_here(self, confirmed: dict[str, JsonValue], job: Job) -> list[StepSpec]:
        """The steps this run will run in this process (before the first hand-off), unless
        one stops the mail: whose raw mail (``StepSpec.needs_raw``) and own reads
        (``StepSpec.read_ahead``) are read with the mail."""
        default_q, vector_q = queues(self.services.settings)
        here = []
        for spec in self.pipeline:
            target = vector_q if spec.needs_vectors else default_q
            if self.skips(spec, confirmed, target, job):
                continue
            if target != job.queue and target not in self.also_runs:
                break
            here.append(spec)
        return here

    def checkpoint(self, job: Job, worker: str, email: Mail,
                   group: list[StepDone], finish: bool = False,
                   handoff: Handoff | None = None) -> None:
        """One transaction for a group of steps: checkpoint rows, mail columns and
        statuses, extra writes, audit - and with ``finish`` / ``handoff`` the entry's move.

        A deadlock or lock wait timeout (two workers writing drafts of different mails
        took gap locks in the same index range: seen with two processes in the worker
        benchmark) rolled the whole transaction back, so it is repeated at once, up to
        ``BUSY_TRIES`` times; the repeat is audited in the committed transaction.
        After that the error fails the attempt like any transient error.
        """
        retried: list[AuditEvent] = []
        steps = ",".join(str(d.step) for d in group)

        def audited(attempt: int, e: DatabaseBusyError) -> None:
            retried.append(AuditEvent(
                Actor.WORKER, "email", email.id, "checkpoint_retried",
                attempt=job.attempts,
                detail={"step": steps, "job_id": job.id, "error": str(e), "try": attempt}))

        repeat_when_busy(
            lambda: self._checkpoint(job, worker, email, group, retried, finish, handoff),
            f"checkpoint of step {steps} (job {job.id})", audited, logger=log)

    def _checkpoint(self, job: Job, worker: str, email: Mail,
                    group: list[StepDone], retried: list[AuditEvent], finish: bool,
                    handoff: Handoff | None) -> None:
        jobs = self.services.jobs
        with self.services.db.transaction() as cur:
            events = list(retried)
            # the claim fence: the entry's own compare-and-set move when the group ends the
            # run here, else a lock on the entry; either refuses a late worker (nothing
            # written) and locks the job row first, as every checkpoint did
            if finish:
                mine = jobs.finish_in(cur, job, worker, events)
            elif handoff is not None:
                mine = jobs.handoff_in(cur, job, worker, handoff.queue, handoff.reason, events)
            else:
                mine = jobs.still_mine_in(cur, job, worker)
            if not mine:
                raise ClaimLostError(f"job {job.id} is no longer claimed by {worker}")
            updates: Params = {}  # later steps' columns win, as sequential UPDATEs
            for done in group:
                updates.update({c: _db_value(v) for c, v in done.outcome.email_updates.items()})
            if updates:
                cur.execute(*update_emails(email.id, updates))
            rows = [{"email_id": email.id, "step": str(d.step),
                     "detail": json.dumps(d.outcome.detail, default=str)}
                    for d in group if d.outcome.confirmed]
            if rows:
                cur.executemany(sql("steps_confirm"), rows)
            for done in group:
                outcome = done.outcome
                if outcome.write is not None:
                    outcome.write(cur)
                events += [*outcome.events, done.event]
                if outcome.mail_status is not None:  # the entry is ours (locked above):
                    # the status this run read is current unless someone else moved it;
                    # the store's conditional UPDATE refuses the move then
                    self.services.stores.mails.move(
                        cur, email.id, outcome.mail_status, actor=Actor.WORKER,
                        reason=outcome.status_reason, attempt=job.attempts,
                        current=done.status_before, events=events,
                        detail={"step": str(done.step), "job_id": job.id})
            write_events(cur, events)


def step_event(job: Job, email: Mail, step: Step,
               outcome: StepOutcome) -> AuditEvent:
    """The step's own audit event, made when it ended (the benchmark's step times)."""
    return AuditEvent(
        Actor.WORKER, "email", email.id,
        "step_confirmed" if outcome.confirmed else "step_not_confirmed",
        attempt=job.attempts,
        detail={"step": str(step), "job_id": job.id,
                **({"reason": outcome.status_reason} if outcome.status_reason else {})})


def checkpoint_columns(outcome: StepOutcome) -> Params:
    """The ``emails`` columns a checkpoint writes, as written: the next step of the same
    run sees the row with them (the same values a fresh read would give for the columns
    the steps use; this saves a read of the whole row, raw mail included, per step)."""
    updates = {c: _db_value(v) for c, v in outcome.email_updates.items()}
    if outcome.mail_status is not None:
        updates["status"] = str(outcome.mail_status)
        updates["status_reason"] = outcome.status_reason
    return updates


def _db_value(v: ColumnValue) -> SqlValue:
    if isinstance(v, dict | list):
        return json.dumps(v, default=str)
    return str(v) if hasattr(v, "value") and isinstance(v, str) else v
