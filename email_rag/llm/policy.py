"""The LLM policy: how one LLM task (classify a mail, draft a reply) survives
a slow, rate-limited, failing or wrong endpoint.

``run_task(llm, task, limits, event=..., audit=...)`` makes the attempts and
returns a ``TaskResult`` (outcome ok / defaulted / invalid / manual) or raises
for the job retry cycle. Every attempt yields an ``llm_attempt`` audit event
(task, try, prompt, prompt version, model, duration_ms, outcome, fallback,
error, usage; for an answered call the server's timings and build). Returned events
belong in the step's ``StepOutcome.events`` so they commit with the checkpoint; before
raising, the events so far are written at once with ``audit.record`` (they must survive
the failed attempt).

Failure table (one task run; counters are per run):

| situation                          | retry?                              | state known?              | resume?                                       |
|------------------------------------|-------------------------------------|---------------------------|-----------------------------------------------|
| timeout (1st)                      | yes, once, same prompt              | yes: an LLM call changes  | -                                             |
|                                    |                                     | nothing on our side       |                                               |
| timeout (2nd)                      | no                                  | yes                       | outcome MANUAL (returned): mail -> manual,    |
|                                    |                                     |                           | step not confirmed; an admin retry re-runs it |
| timeout after the server did the   | as timeout: the answer is lost, the | yes: nothing was stored   | as above; repeating is harmless (no side      |
| work                               | repeat costs tokens only            |                           | effects)                                      |
| invalid JSON / schema violation    | yes, once, adjusted prompt naming   | yes                       | -                                             |
| (1st)                              | the error                           |                           |                                               |
| invalid JSON / schema violation    | no                                  | yes                       | DEFAULTED (task has defaults: flagged) or     |
| (2nd)                              |                                     |                           | INVALID (no defaults: the caller decides)     |
| 429 with Retry-After <= max        | yes, after waiting Retry-After      | yes                       | -                                             |
| (at most llm_rate_limit_retries)   | (no header: 1 s, 2 s, 4 s ...)      |                           |                                               |
| 429 beyond the bound (too many, or | no (in-process)                     | yes                       | raises LLMRateLimitedError(retry_after): the  |
| Retry-After > llm_max_retry_after) |                                     |                           | job retry cycle waits at least retry_after    |
| 5xx, 408, 409, connection refused  | no (in-process)                     | yes                       | raises LLMError: job retry cycle              |
| or dropped, malformed response     |                                     |                           |                                               |
| 400/401/403/404/422                | never                               | yes                       | raises LLMRequestRejectedError (permanent,    |
|                                    |                                     |                           | says: key, model, URL or response_format)     |
| answer cut off (finish_reason      | yes, once: max_tokens doubled (up   | yes                       | then as invalid output twice: DEFAULTED /     |
| "length"): never a valid answer    | to max_tokens_cap), or with less    |                           | INVALID (a draft is flagged, never a normal   |
|                                    | context when the budget is full     |                           | draft)                                        |
| 400 context overflow (the prompt   | yes, once, with less context        | yes                       | still too long / nothing left to trim:        |
| does not fit the model)            | (task.shrink)                       |                           | MANUAL with the reason (not a config error)   |
| all call slots of the endpoint     | no (in-process: the wait was the    | yes                       | raises LLMBusyError (transient): job retry    |
| taken for llm_slot_wait_seconds    | retry)                              |                           | cycle                                         |
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.catalog import N_
from ..core.errors import (
    LLMContextOverflowError,
    LLMError,
    LLMInvalidOutputError,
    LLMRateLimitedError,
    LLMRequestRejectedError,
    LLMTimeoutError,
)
from ..core.jsonvalue import JsonObject
from ..core.redact import redact_text
from ..db.audit import AuditEvent

if TYPE_CHECKING:
    from ..core.ports import ChatModel, LLMResult
    from ..db.audit import AuditLog

T = TypeVar("T")
NO_HEADER_WAIT = 1.0  # first wait after a 429 without Retry-After (doubles each time)


class TaskOutcome(StrEnum):
    OK = "ok"  # a valid answer
    DEFAULTED = "defaulted"  # output unusable twice; the task's defaults, flagged as such
    INVALID = "invalid"  # output unusable twice and the task has no defaults: caller decides
    MANUAL = "manual"  # timed out twice: a human must look (mail -> manual)


@dataclass(frozen=True)
class PolicyLimits:
    timeout_attempts: int = 2  # a timeout is retried once
    invalid_attempts: int = 2  # invalid output is retried once with the adjusted prompt
    overflow_attempts: int = 2  # a context overflow is retried once with less context
    rate_limit_retries: int = 3  # 429 answers waited out in-process per task
    max_retry_after: float = 60.0  # longer Retry-After goes to the job retry cycle

    @classmethod
    def from_settings(cls, s: Any) -> PolicyLimits:
        return cls(rate_limit_retries=s.llm_rate_limit_retries,
                   max_retry_after=s.llm_max_retry_after)


@dataclass
class LLMTask(Generic[T]):
    """One LLM task. ``messages(error)`` builds the request: ``error`` is None for
    the first prompt, else the description of what was wrong (the adjusted prompt)."""

    name: str  # "classify", "draft": audit label and prompt name
    prompt_version: str
    messages: Callable[[str | None], list[dict[str, str]]]
    parse: Callable[[str], T]  # raises LLMInvalidOutputError
    schema: JsonObject | None = None  # JSON answer wanted (structured output)
    schema_name: str = ""
    default: Callable[[], T] | None = None
    max_tokens: int | None = None
    max_tokens_cap: int | None = None  # a cut-off answer is retried with up to this many
    shrink: Callable[[], str | None] | None = None  # less context for the next try: says
    # what it dropped, or None when nothing is left to drop
    trimmed: dict[str, int] = field(default_factory=dict)  # what the budget cut (recorded)
    prefill: str | None = None  # a text answer's first words (ChatModel.chat_text)


@dataclass
class TaskResult(Generic[T]):
    outcome: TaskOutcome
    value: T | None
    prompt_version: str
    events: list[AuditEvent] = field(default_factory=list)
    attempts: int = 0
    duration: float = 0.0  # seconds spent in LLM calls (waits excluded)
    model: str = ""
    reason: str = ""  # why not OK, in words for status_reason
    last_error: str = ""
    last_text: str = ""  # the last answer's text (a flagged draft shows it to staff)
    last_kind: str = ""  # kind of the last unusable answer (length, echo, placeholder ...)
    waited: float = 0.0  # seconds spent waiting for call slots


EventFactory = Callable[[str, JsonObject], AuditEvent]


def _call(llm: ChatModel, task: LLMTask[Any], messages: list[dict[str, str]],
          max_tokens: int | None) -> LLMResult:
    kw = {"max_tokens": max_tokens} if max_tokens else {}
    if task.schema is not None:
        return llm.chat_json(messages, task.schema, task.schema_name or task.name, **kw)
    if task.prefill:
        kw["prefill"] = task.prefill
    return llm.chat_text(messages, **kw)


CUT_AT_MAX_TOKENS = N_("the answer was cut off at max_tokens %(max)s (finish_reason length): "
                       "incomplete")


def measured(answer: LLMResult) -> dict[str, Any]:
    """What an answered attempt records of the server's own measure (the status page's
    model speed): its timings and the build that answered, when the endpoint sent them."""
    return {"timings": dict(answer.timings) or None, "runtime": answer.runtime or None}


def cut_off(answer: LLMResult, max_tokens: int | None) -> LLMInvalidOutputError | None:
    """A cut-off answer (``finish_reason: length``) is never a valid answer."""
    if answer.finish_reason != "length":
        return None
    return LLMInvalidOutputError(CUT_AT_MAX_TOKENS % {"max": max_tokens}, kind="length")


def run_task(llm: ChatModel, task: LLMTask[T], limits: PolicyLimits, *, event: EventFactory,
             audit: AuditLog | None = None,
             sleep: Callable[[float], None] = time.sleep) -> TaskResult[T]:
    """Run ``task`` under the policy (see the module's failure table): attempts one after
    the other until one decides the task (an answer, a fallback) or raises for the job."""
    run = _TaskRun(llm, task, limits, event, audit, sleep)
    while True:
        done = run.attempt()
        if done is not None:
            return done


class _TaskRun(Generic[T]):
    """The state of one ``run_task``: its result so far, the counters of the failure table,
    the error the next prompt names and the answer's room (``max_tokens``). Each step
    returns the task's result when it decided it, None for another attempt, or raises."""

    def __init__(self, llm: ChatModel, task: LLMTask[T], limits: PolicyLimits,
                 event: EventFactory, audit: AuditLog | None,
                 sleep: Callable[[float], None]) -> None:
        self.llm, self.task, self.limits = llm, task, limits
        self.event, self.audit, self.sleep = event, audit, sleep
        self.result: TaskResult[T] = TaskResult(TaskOutcome.OK, None, task.prompt_version,
                                                model=llm.model)
        self.timeouts = self.invalids = self.waits = self.overflows = 0
        self.error_for_prompt: str | None = None
        self.max_tokens = task.max_tokens
        if task.trimmed:
            self.result.events.append(event("llm_input_trimmed",
                                            {"task": task.name, **task.trimmed}))

    def attempt(self) -> TaskResult[T] | None:
        """One call of the model and what its answer or error decides."""
        self.result.attempts += 1
        messages = self.task.messages(self.error_for_prompt)
        started = time.monotonic()
        try:
            answer = _call(self.llm, self.task, messages, self.max_tokens)
        except LLMContextOverflowError as e:
            return self.overflowed(e, started)
        except LLMTimeoutError as e:
            return self.timed_out(e, started)
        except LLMRateLimitedError as e:
            return self.rate_limited(e, started)
        except LLMRequestRejectedError as e:
            self.fail(e, "rejected", "permanent", started, status=e.context.get("status"))
            raise
        except LLMError as e:
            self.fail(e, "error", "job_retry", started, status=e.context.get("status"))
            raise
        return self.answered(answer, started)

    # --- the endpoint's errors ---
    def overflowed(self, e: LLMContextOverflowError, started: float) -> TaskResult[T] | None:
        """The prompt does not fit: once more with less context, else a human answers."""
        self.overflows += 1
        self.result.last_error = str(e)
        dropped = self.task.shrink() if self.task.shrink is not None else None
        if self.overflows < self.limits.overflow_attempts and dropped:
            self.record("context_overflow", "retry_less_context", started, error=str(e)[:300],
                        dropped=dropped)
            return None
        self.record("context_overflow", "manual", started, error=str(e)[:300])
        return self.manual(f"LLM {self.task.name}: the prompt does not fit the model's context "
                           "even with less reference material; a human must answer, or use "
                           "an endpoint with a larger context (EMAIL_RAG_LLM_CONTEXT_TOKENS)")

    def timed_out(self, e: LLMTimeoutError, started: float) -> TaskResult[T] | None:
        """A timeout: once more with the same prompt, else a human decides."""
        self.timeouts += 1
        self.result.last_error = str(e)
        if self.timeouts < self.limits.timeout_attempts:
            self.record("timeout", "retry", started, error=str(e)[:300])
            return None
        self.record("timeout", "manual", started, error=str(e)[:300])
        return self.manual(f"LLM {self.task.name}: timed out {self.timeouts} times "
                           f"({self.llm.timeout:g} s each); a human must decide or retry the "
                           "mail")

    def rate_limited(self, e: LLMRateLimitedError, started: float) -> None:
        """A 429: waited out in-process within the limits, else the job retry cycle's."""
        limits = self.limits
        wait = e.retry_after if e.retry_after is not None else NO_HEADER_WAIT * 2 ** self.waits
        if self.waits >= limits.rate_limit_retries or wait > limits.max_retry_after:
            why = ("Retry-After above llm_max_retry_after" if wait > limits.max_retry_after
                   else f"{self.waits} rate-limit wait(s) already used")
            self.fail(e, "rate_limited", "job_retry", started, retry_after=e.retry_after,
                      why=why)
            raise LLMRateLimitedError(
                f"{e} ({why}); the job retry cycle takes over",
                retry_after=e.retry_after if e.retry_after is not None else wait,
            ) from e
        self.waits += 1
        self.record("rate_limited", "wait_retry_after", started, retry_after=e.retry_after,
                    wait_s=round(wait, 3))
        self.sleep(wait)
        return None

    # --- an answer ---
    def answered(self, answer: LLMResult, started: float) -> TaskResult[T] | None:
        """An answer: the task's value, or an unusable answer (``unusable``)."""
        # not "*_tokens": the audit redaction masks keys that look like secrets ("token")
        usage = {"input": answer.usage.get("prompt_tokens", 0),
                 "output": answer.usage.get("completion_tokens", 0)} if answer.usage else None
        self.result.waited += answer.waited
        call = {"usage": usage, "finish_reason": answer.finish_reason,
                "slot_wait_s": round(answer.waited, 3) if answer.waited else None,
                "prefill": answer.prefill or None}  # the prefill's words are ours, not the model's
        try:
            cut = cut_off(answer, self.max_tokens)
            if cut is not None:
                raise cut
            value = self.task.parse(answer.text)
        except LLMInvalidOutputError as e:
            return self.unusable(e, answer, started, call)
        self.record("ok", "none", started, usage=usage, finish_reason=answer.finish_reason,
                    answered_by=answer.model or None, slot_wait_s=call["slot_wait_s"],
                    prefill=call["prefill"], **measured(answer))
        self.result.value = value
        return self.result

    def unusable(self, e: LLMInvalidOutputError, answer: LLMResult, started: float,
                 call: dict[str, Any]) -> TaskResult[T] | None:
        """Invalid or cut-off output: once more with a prompt naming the error (and more
        room, or less context, for a cut-off answer), else the defaults or INVALID."""
        task = self.task
        self.invalids += 1
        kind = str(e.context.get("kind", "invalid_output"))
        self.result.last_error, self.result.last_text, self.result.last_kind = (
            str(e), answer.text, kind)
        if self.invalids < self.limits.invalid_attempts:
            fix = "retry_adjusted_prompt"
            if kind == "length":  # more room for the answer, or less context around it
                doubled = 2 * (self.max_tokens or 512)
                grown = min(doubled, task.max_tokens_cap or doubled)
                if grown > (self.max_tokens or 0):
                    self.max_tokens, fix = grown, "retry_more_tokens"
                elif task.shrink is not None and task.shrink():
                    fix = "retry_less_context"
            self.record(kind, fix, started, error=str(e)[:300], **call, **measured(answer))
            self.error_for_prompt = str(e)
            return None
        if task.default is None:
            self.record(kind, "invalid", started, error=str(e)[:300], **call, **measured(answer))
            self.result.outcome = TaskOutcome.INVALID
            self.result.reason = f"LLM {task.name}: output unusable {self.invalids} times ({e})"
            return self.result
        self.record(kind, "defaults", started, error=str(e)[:300], usage=call["usage"],
                    **measured(answer))
        self.result.outcome = TaskOutcome.DEFAULTED
        self.result.value = task.default()
        self.result.reason = (f"LLM {task.name}: output unusable {self.invalids} times, "
                              f"default values used ({str(e)[:200]})")
        self.result.events.append(self.event("llm_fallback_defaults", {
            "task": task.name, "reason": self.result.reason,
            "prompt_version": task.prompt_version}))
        return self.result

    # --- what each attempt records ---
    def record(self, outcome: str, fallback: str, started: float, **extra: Any) -> None:
        """The attempt's ``llm_attempt`` event (its duration counted in the result)."""
        task, duration = self.task, time.monotonic() - started
        self.result.duration += duration
        detail = {
            "task": task.name, "try": self.result.attempts,
            "prompt": task.name if self.error_for_prompt is None else f"{task.name}_retry",
            "prompt_version": task.prompt_version, "model": self.llm.model,
            "duration_ms": round(duration * 1000, 1), "outcome": outcome, "fallback": fallback,
            **{k: v for k, v in extra.items() if v is not None},
        }
        self.result.events.append(self.event("llm_attempt", detail))

    def fail(self, err: Exception, outcome: str, fallback: str, started: float,
             **extra: Any) -> None:
        """Record the attempt and write the events so far now: the caller raises next."""
        self.record(outcome, fallback, started, error=redact_text(str(err))[:300], **extra)
        if self.audit is not None:
            self.audit.record(*self.result.events)
        self.result.events.clear()

    def manual(self, reason: str) -> TaskResult[T]:
        """A human must look: MANUAL with the reason and its ``llm_manual`` event."""
        self.result.outcome = TaskOutcome.MANUAL
        self.result.reason = reason
        self.result.events.append(self.event("llm_manual", {
            "task": self.task.name, "reason": reason, "prompt_version": self.task.prompt_version}))
        return self.result
