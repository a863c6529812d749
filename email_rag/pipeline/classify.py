"""The classification step: one mail -> validated classification (LLM).

``run(ctx)`` reads subject, sender and text as the parse step stored them
(``mail_input.mail_content``: body and attachment text; never the raw mail), asks the LLM under the policy of
``email_rag.llm.policy`` and returns the outcome for the worker's checkpoint.
The mail text goes to the LLM only inside the delimited user message; the
system prompt declares it untrusted. The step writes nothing itself: it is
safe to repeat (an LLM call changes nothing on our side).

Failure table:

| situation                              | retry?                    | state known? | resume?                                   |
|----------------------------------------|---------------------------|--------------|-------------------------------------------|
| valid answer, needs_reply true         | -                         | yes          | CLASSIFIED, next step                     |
| valid answer, needs_reply false, and   | -                         | yes          | NO_REPLY, stop (terminal, no draft)       |
| a header corroborates it (list mail)   |                           |              |                                           |
| valid answer, needs_reply false, no    | -                         | yes          | NO_REPLY_SUGGESTED, stop: a list staff    |
| header says so (an LLM's opinion       |                           |              | confirm with one click (email_rag.        |
| alone, e.g. obeying an injection)      |                           |              | no_reply); never terminal by itself       |
| mail flagged by the loop guard         | -                         | yes          | classified, NO_REPLY, stop                |
| the sender takes no replies (no-reply  | -                         | yes          | NO_REPLY_SUGGESTED, stop, whatever the    |
| or empty address: ``addresses.         |                           |              | model says: staff confirm or answer by    |
| choose_reply``)                        |                           |              | hand; never a draft                       |
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

import email.parser
import email.policy
from typing import Any

from ..core.states import IndexStatus, MailStatus
from ..db import sql
from ..llm import classification as cl
from ..llm.budget import DEFAULT_CONTEXT, SAFETY, Fitted, context_tokens, estimate_tokens
from ..llm.policy import LLMTask, PolicyLimits, TaskOutcome, run_task
from ..llm.prompts import load_prompt, mail_block, set_version
from . import mail_input
from .contract import StepContext, StepOutcome


def mail_content(ctx: StepContext) -> mail_input.MailContent:
    """Subject, sender, text and loop-guard reason of the mail (``mail_input``)."""
    return mail_input.mail_content(ctx.email, ctx.services.settings.llm_max_input_chars)


CLASSIFY_MAX_TOKENS, CLASSIFY_MAX_TOKENS_CAP = 300, 600


def classification_task(subject: str, sender: str, body: str, max_chars: int = 8000,
                        context: int = DEFAULT_CONTEXT) -> LLMTask[cl.Classification]:
    """The classification as an LLM task (prompts from files, schema from the model),
    with the mail body cut to fit ``context`` tokens (recorded in ``task.trimmed``)."""
    system, task, retry = load_prompt("system"), load_prompt("classify"), \
        load_prompt("classify_retry")
    instructions = task.render(allowed_values=cl.allowed_values_text())
    head = f"{system.text.strip()}\n\n{instructions.strip()}"
    retry_room = estimate_tokens(retry.render(error="x" * 300))

    def build(_refs: int, _thread: int, body_chars: int) -> list[dict[str, str]]:
        return [{"role": "system", "content": head},
                {"role": "user", "content": mail_block(subject, sender, body, body_chars)}]

    fitted = Fitted(build, 0, 0, min(len(body or ""), max_chars) or 1,
                    budget=context - CLASSIFY_MAX_TOKENS_CAP - SAFETY - retry_room)

    def messages(error: str | None) -> list[dict[str, str]]:
        out = fitted.messages()
        if error is not None:
            out[0] = {"role": "system",
                      "content": head + "\n\n" + retry.render(error=error).strip()}
        return out

    return LLMTask(
        name="classify", prompt_version=set_version("classify", system, task, retry),
        messages=messages, parse=cl.parse_classification, schema=cl.json_schema(),
        schema_name=cl.SCHEMA_NAME, default=lambda: cl.default_classification(subject, body),
        max_tokens=CLASSIFY_MAX_TOKENS, max_tokens_cap=CLASSIFY_MAX_TOKENS_CAP,
        shrink=fitted.shrink, trimmed=fitted.trimmed,
    )


def run(ctx: StepContext) -> StepOutcome:
    s = ctx.services.settings
    mail = mail_content(ctx)
    task = classification_task(mail.subject, mail.sender, mail.body,
                               s.llm_max_input_chars, context_tokens(s, ctx.services.llm))

    if not (mail.subject.strip() or mail.body.strip()):
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
              "prompt_version": result.prompt_version, "source": mail.source}

    if result.outcome is TaskOutcome.MANUAL:
        return StepOutcome(detail=detail, mail_status=MailStatus.MANUAL,
                           status_reason=result.reason, confirmed=False, stop=True,
                           events=result.events)
    assert result.value is not None  # OK or DEFAULTED (classification always has defaults)
    defaulted = result.outcome is TaskOutcome.DEFAULTED
    return _classified(ctx, result.value, result.prompt_version, defaulted,
                       result.reason if defaulted else None, mail, result.events, detail)


def corroborating_header(raw: bytes | str | None) -> str | None:
    """A header saying the mail is list or bulk mail (which the loop guard does not
    cover): List-Id, List-Unsubscribe, List-Post."""
    if not raw:
        return None
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else bytes(raw)
    head = data.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0][:65536]
    msg = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(head)
    for name in ("List-Id", "List-Unsubscribe", "List-Post"):
        if msg.get(name):
            return f"list:{name.lower()}"
    return None


def no_reply_outcome(value: cl.Classification, auto_reason: str | None,
                     raw: bytes | str | None, no_reply_sender: str | None = None
                     ) -> tuple[MailStatus, str | None, bool]:
    """(status, reason, stop) after a classification. The one place that decides whether
    a mail gets no reply: an LLM's ``needs_reply: false`` alone is only a suggestion; a
    sender that takes no replies (``no_reply_sender``: the stored reply rule) never gets a
    draft."""
    if auto_reason:
        return MailStatus.NO_REPLY, f"no reply: loop guard ({auto_reason})", True
    if no_reply_sender and (value.needs_reply or not corroborating_header(raw)):
        return (MailStatus.NO_REPLY_SUGGESTED,
                f"classified as {value.category.value}; no draft: {no_reply_sender}. Staff "
                "confirm no reply or answer by hand (email-rag mails no-reply)", True)
    if value.needs_reply:
        return MailStatus.CLASSIFIED, None, False
    header = corroborating_header(raw)
    if header:
        return (MailStatus.NO_REPLY, f"classified as {value.category.value}, no reply needed; "
                f"the headers agree ({header})", True)
    return (MailStatus.NO_REPLY_SUGGESTED,
            f"classified as {value.category.value}: the model suggests no reply; no header "
            "confirms it, so staff decide (email-rag mails no-reply)", True)


def _classified(ctx: StepContext, value: cl.Classification, version: str, defaulted: bool,
                reason: str | None, mail: mail_input.MailContent, events: list[Any],
                detail: dict[str, Any]) -> StepOutcome:
    updates = value.email_updates(version, defaulted)
    raw = None
    if not value.needs_reply and not mail.auto_reason:  # do the headers agree? (rare: read
        row = ctx.services.db.fetchone(sql("classify_raw_head"), {"id": ctx.email_id})  # now)
        raw = row and row["head"]
    status, why, stop = no_reply_outcome(value, mail.auto_reason, raw, mail.no_reply_sender)
    reason = why or reason
    if stop:  # the index step will not run for it
        updates = {**updates, "index_status": str(IndexStatus.SKIPPED)}
    events = [*events, ctx.event("classified", {
        "category": updates["category"], "priority": updates["priority"],
        "language": updates["language"], "needs_reply": updates["needs_reply"],
        "defaulted": defaulted, "prompt_version": version})]
    return StepOutcome(detail={**detail, **{k: updates[k] for k in cl.EMAIL_COLUMNS}},
                       email_updates=updates, mail_status=status, status_reason=reason,
                       stop=stop, events=events)
