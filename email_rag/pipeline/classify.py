"""The classification step: one mail -> validated classification (LLM).

``run(ctx)`` reads subject, sender and text as the parse step stored them
(``mail_input.mail_content``: body and attachment text; never the raw mail), asks the LLM under the policy of
``email_rag.llm_policy`` and returns the outcome for the worker's checkpoint.
The mail text goes to the LLM only inside the delimited user message; the
system prompt declares it untrusted. The step writes nothing itself: it is
safe to repeat (an LLM call changes nothing on our side).

Failure table:

| situation                              | retry?                    | state known? | resume?                                   |
|----------------------------------------|---------------------------|--------------|-------------------------------------------|
| valid answer, needs_reply true         | -                         | yes          | CLASSIFIED, next step                     |
| valid answer, needs_reply false        | -                         | yes          | NO_REPLY, stop (terminal, no draft)       |
| mail flagged by the loop guard         | -                         | yes          | classified, NO_REPLY, stop                |
| no text at all (no subject, no body)   | no LLM call               | yes          | defaults (flagged), CLASSIFIED            |
| timeout twice                          | policy: once              | yes          | MANUAL, not confirmed, stop: admin retry  |
|                                        |                           |              | re-runs the step                          |
| invalid output twice                   | policy: once, adjusted    | yes          | defaults flagged (classification_         |
|                                        | prompt                    |              | defaulted=1), CLASSIFIED, next step       |
| 429 beyond the bound, 5xx, connection  | job retry cycle (raised)  | yes          | the job re-runs this step later           |
| 400/401/403/404/422                    | never (raised, permanent) | yes          | job dead, mail failed with the reason     |
| crash after the LLM answered, before   | the job re-runs the step  | yes: nothing | one more LLM call (costs tokens only)     |
| the checkpoint                         |                           | was stored   |                                           |
"""

from __future__ import annotations

from typing import Any

from .. import classification as cl
from ..db import sql
from ..llm_policy import LLMTask, PolicyLimits, TaskOutcome, run_task
from ..prompts import load_prompt, mail_block, set_version
from ..states import IndexStatus, MailStatus
from . import mail_input
from .contract import StepContext, StepOutcome


def mail_content(ctx: StepContext) -> dict[str, Any]:
    """Subject, sender, text and loop-guard reason of the mail (``mail_input``)."""
    row = ctx.email
    if not all(k in row for k in mail_input.CONTENT_COLUMNS):
        row = ctx.services.db.fetchone(sql("llm_email_content"), (ctx.email_id,)) or row
    return mail_input.mail_content(row, ctx.services.settings.llm_max_input_chars)


def classification_task(subject: str, sender: str, body: str,
                        max_chars: int = 8000) -> LLMTask[cl.Classification]:
    """The classification as an LLM task (prompts from files, schema from the model)."""
    system, task, retry = load_prompt("system"), load_prompt("classify"), \
        load_prompt("classify_retry")
    instructions = task.render(allowed_values=cl.allowed_values_text())
    user = mail_block(subject, sender, body, max_chars=max_chars)

    def messages(error: str | None) -> list[dict[str, str]]:
        text = f"{system.text.strip()}\n\n{instructions.strip()}"
        if error is not None:
            text += "\n\n" + retry.render(error=error).strip()
        return [{"role": "system", "content": text}, {"role": "user", "content": user}]

    return LLMTask(
        name="classify", prompt_version=set_version("classify", system, task, retry),
        messages=messages, parse=cl.parse_classification, schema=cl.json_schema(),
        schema_name=cl.SCHEMA_NAME, default=lambda: cl.default_classification(subject, body),
        max_tokens=300,
    )


def run(ctx: StepContext) -> StepOutcome:
    s = ctx.services.settings
    mail = mail_content(ctx)
    task = classification_task(mail["subject"], mail["sender"], mail["body"],
                               s.llm_max_input_chars)

    if not (mail["subject"].strip() or mail["body"].strip()):
        value = task.default()  # type: ignore[misc]
        reason = "nothing to classify (no subject, no text): default values used"
        return _classified(ctx, value, task.prompt_version, True, reason, mail,
                           [ctx.event("llm_skipped", {"task": "classify", "reason": reason,
                                                      "prompt_version": task.prompt_version})],
                           {"outcome": "skipped"})

    result = run_task(ctx.services.llm, task, PolicyLimits.from_settings(s),
                      event=lambda name, detail: ctx.event(name, detail),
                      audit=ctx.services.audit)
    detail = {"outcome": str(result.outcome), "attempts": result.attempts,
              "model": result.model, "duration_ms": round(result.duration * 1000, 1),
              "prompt_version": result.prompt_version, "source": mail["source"]}

    if result.outcome is TaskOutcome.MANUAL:
        return StepOutcome(detail=detail, mail_status=MailStatus.MANUAL,
                           status_reason=result.reason, confirmed=False, stop=True,
                           events=result.events)
    assert result.value is not None  # OK or DEFAULTED (classification always has defaults)
    defaulted = result.outcome is TaskOutcome.DEFAULTED
    return _classified(ctx, result.value, result.prompt_version, defaulted,
                       result.reason if defaulted else None, mail, result.events, detail)


def _classified(ctx: StepContext, value: cl.Classification, version: str, defaulted: bool,
                reason: str | None, mail: dict[str, Any], events: list[Any],
                detail: dict[str, Any]) -> StepOutcome:
    updates = value.email_updates(version, defaulted)
    status, stop = MailStatus.CLASSIFIED, False
    if mail["auto_reason"]:
        status, stop = MailStatus.NO_REPLY, True
        reason = f"no reply: loop guard ({mail['auto_reason']})"
    elif not value.needs_reply:
        status, stop = MailStatus.NO_REPLY, True
        reason = f"classified as {value.category.value}: no reply needed"
    if stop:  # the index step will not run for it
        updates = {**updates, "index_status": str(IndexStatus.SKIPPED)}
    events = [*events, ctx.event("classified", {
        "category": updates["category"], "priority": updates["priority"],
        "language": updates["language"], "needs_reply": updates["needs_reply"],
        "defaulted": defaulted, "prompt_version": version})]
    return StepOutcome(detail={**detail, **{k: updates[k] for k in cl.EMAIL_COLUMNS}},
                       email_updates=updates, mail_status=status, status_reason=reason,
                       stop=stop, events=events)
