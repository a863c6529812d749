"""The contract between the worker and the steps of the pipeline.

A step is a function ``run(ctx: StepContext) -> StepOutcome``. It reads what
it needs through ``ctx`` and does its outside work (LLM call, vector upsert);
it must be safe to repeat (deterministic ids, upserts), because a crash after
the outside work and before the checkpoint repeats it.

The worker then writes, in ONE MariaDB transaction: the checkpoint row
(``email_steps``, only if ``confirmed``), the ``email_updates`` columns, the
new mail status, whatever ``write(cur)`` adds (e.g. a draft row) and the
audit events. That transaction may hold several steps (a group: see
``email_rag.pipeline.runner``); it commits before the next step whose
``StepSpec.commit_before`` is set starts (by default every step: one
checkpoint per step).

A step raises a domain error (``TransientError`` / ``PermanentError``) to fail
the attempt; the worker's retry policy decides what happens next. A step that
handled a failure by policy (LLM timed out twice -> manual) returns an
outcome with ``confirmed=False`` and ``stop=True``: the job ends, the step is
not checkpointed, and an admin retry re-runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.jsonvalue import JsonObject, JsonValue
from ..core.records import Job, Mail
from ..core.rows import SqlValue
from ..core.states import Actor, MailStatus, Step
from ..db.audit import AuditEvent

if TYPE_CHECKING:
    from ..db.connection import Cursor
    from ..jobs.context import ServiceContext


ColumnValue = SqlValue | list[JsonValue] | JsonObject  # a list or object is stored as JSON text


@dataclass
class StepContext:
    services: ServiceContext
    email: Mail  # the mail at the start of the step (read once per run, then kept current
    # with the columns each step wrote); never its raw source (see ``raw``)
    job: Job  # the queue entry being run
    step: Step
    confirmed: dict[str, JsonValue] = field(default_factory=dict)  # step -> its stored detail
    # the raw source, for a step with ``StepSpec.needs_raw`` only (read with the mail at the
    # start of the run, dropped after that step); None: the step reads it itself
    raw: bytes | None = None
    mailbox_name: str | None = None  # of the mail's mailbox (read with the mail); None: unknown
    read_ahead: object = None  # the result of ``StepSpec.read_ahead`` (None: not read)

    @property
    def email_id(self) -> int:
        return self.email.id

    @property
    def attempt(self) -> int:
        return self.job.attempts

    def event(self, event: str, detail: JsonObject | None = None, **kw: Any) -> AuditEvent:
        """An audit event about this mail, stamped with the step and attempt."""
        return AuditEvent(Actor.WORKER, "email", self.email_id, event, attempt=self.attempt,
                          detail={"step": str(self.step), **(detail or {})}, **kw)


@dataclass
class StepOutcome:
    detail: JsonObject = field(default_factory=dict)  # stored in email_steps.detail
    email_updates: dict[str, ColumnValue] = field(default_factory=dict)  # emails columns to set
    mail_status: MailStatus | None = None  # new business status, if it changes
    status_reason: str | None = None
    confirmed: bool = True  # False: do not checkpoint (the step must run again later)
    stop: bool = False  # True: no later steps run for this mail
    write: Callable[[Cursor], None] | None = None  # extra writes in the checkpoint transaction
    events: list[AuditEvent] = field(default_factory=list)


StepFn = Callable[[StepContext], StepOutcome]


@dataclass(frozen=True)
class StepSpec:
    step: Step
    run: StepFn
    needs_vectors: bool = False  # runs on the vector queue (the one process owning local Qdrant)
    # the steps before must be committed before this one runs: it changes an outside
    # system with their results (a vector upsert). False: it may share their checkpoint
    # transaction (it only reads, or its outside call may be repeated: an LLM call)
    commit_before: bool = True
    # the step reads the raw mail (``StepContext.raw``): the runner reads it with the mail
    # at the start of a run that will run this step, in the same statement
    needs_raw: bool = False
    # a read of the step's own (``read(cur, mail, services)``), made in the run's first read
    # transaction - one commit for both - when the step runs in this run; the step finds
    # its result in ``StepContext.read_ahead`` (None: not read, the step reads it itself)
    read_ahead: Callable[[Cursor, Mail, ServiceContext], object] | None = None
