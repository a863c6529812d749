"""The classification as an LLM task: prompts from files (``llm/prompts``), the schema and
the validator from the allowed values (``values``), the mail body cut to fit the model's
context, the team's most similar examples as few-shot material. The policy
(``llm.policy.run_task``) runs it; this module only builds it (no I/O).
"""

from __future__ import annotations

from ..llm.budget import DEFAULT_CONTEXT, SAFETY, Fitted, estimate_tokens
from ..llm.policy import LLMTask
from ..llm.prompts import load_prompt, mail_block, set_version
from . import values as cl
from .history_model import Shot, shots_block

CLASSIFY_MAX_TOKENS, CLASSIFY_MAX_TOKENS_CAP = 300, 600


def classification_task(subject: str, sender: str, body: str, max_chars: int = 8000,
                        context: int = DEFAULT_CONTEXT, shots: list[Shot] | None = None
                        ) -> LLMTask[cl.Classification]:
    """The classification as an LLM task (prompts from files, schema from the model),
    with the mail body cut to fit ``context`` tokens (recorded in ``task.trimmed``).
    ``shots``: the team's most similar labelled examples, a block before the mail (the
    first dropped when the prompt is too long)."""
    shots = shots or []
    system, task, retry = load_prompt("system"), load_prompt("classify"), \
        load_prompt("classify_retry")
    instructions = task.render(allowed_values=cl.allowed_values_text())
    head = f"{system.text.strip()}\n\n{instructions.strip()}"
    retry_room = estimate_tokens(retry.render(error="x" * 300))

    def build(refs: int, _thread: int, body_chars: int) -> list[dict[str, str]]:
        mail = mail_block(subject, sender, body, body_chars)
        user = f"{shots_block(shots[:refs])}\n\n{mail}" if refs else mail
        return [{"role": "system", "content": head}, {"role": "user", "content": user}]

    fitted = Fitted(build, len(shots), 0, min(len(body or ""), max_chars) or 1,
                    budget=context - CLASSIFY_MAX_TOKENS_CAP - SAFETY - retry_room)

    def messages(error: str | None) -> list[dict[str, str]]:
        out = fitted.messages()
        if error is not None:
            out[0] = {"role": "system",
                      "content": head + "\n\n" + retry.render(error=error).strip()}
        return out

    version = set_version("classify", system, task, retry)
    return LLMTask(
        name="classify", prompt_version=f"{version}+shots" if shots else version,
        messages=messages, parse=cl.parse_classification, schema=cl.json_schema(),
        schema_name=cl.SCHEMA_NAME, default=lambda: cl.default_classification(subject, body),
        max_tokens=CLASSIFY_MAX_TOKENS, max_tokens_cap=CLASSIFY_MAX_TOKENS_CAP,
        shrink=fitted.shrink, trimmed=fitted.trimmed,
    )
