"""Adapting a source to the customer's language: the model translates, nothing else.

When the sources that answer a mail are written in another language than the customer's,
the model gets their lines (numbered, delimited) and returns them translated, as JSON
(``{"lines": [...]}``, one per line given). Each translated line is checked before anyone
sees it:

| situation | retry? | result |
|---|---|---|
| a line lost a fact of its source line (a number, amount, code, address, URL, phone: ``trace.lost``) | once, the line and fact named | still lost: that line is dropped (``salvage``) |
| a line is not in the customer's language (lines of 6 words and more) | once, named | still wrong: dropped |
| a line is more than twice as long as its source (the model added a note or facts) | once, named | still: dropped |
| wrong number of lines, not JSON | once | the lines that can be matched are checked one by one |
| every line dropped | - | the step writes no draft (MANUAL: the desk shows the sources and why) |

Pure logic (the task; ``email_rag.llm.policy`` runs it): no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import LLMInvalidOutputError
from ..mail.language import identify, written_in
from .policy import LLMTask
from .prompts import load_prompt, set_version
from .trace import lost

LONG_LINE_WORDS = 6  # shorter lines carry too little text for a language check
LONGER = 2.0  # a translated line this many times its source's length (+ 40) added something
ADDRESS = {("de", "formal"): 'with "Sie"', ("de", "informal"): 'with "du"',
           ("fr", "formal"): 'with "vous"', ("fr", "informal"): 'with "tu"',
           ("es", "formal"): 'with "usted"', ("es", "informal"): 'with "tú"'}


@dataclass(frozen=True)
class Adapted:
    lines: list[str]
    dropped: list[str]  # why each dropped line was dropped (no text of the line)


def in_language(text: str, language: str) -> bool:
    """Whether ``text`` is in ``language`` (a code: de, en ...)."""
    return written_in(text, language) or identify(text).code == language


def problems(given: Sequence[str], answer: Sequence[str], language: str) -> list[str]:
    """What is wrong with each translated line (empty: all usable)."""
    out = []
    for i, (src, line) in enumerate(zip(given, answer, strict=False), 1):
        gone = lost(src, line)
        if gone:
            out.append(f"line {i} lost {', '.join(gone)}")
        elif len(line) > LONGER * len(src) + 40:
            out.append(f"line {i} says more than its source")
        elif len(line.split()) >= LONG_LINE_WORDS and not in_language(line, language):
            out.append(f"line {i} is not in the customer's language ({language})")
    return out


def _lines(text: str) -> list[str]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        raise LLMInvalidOutputError("the answer was not JSON", kind="invalid_json") from None
    lines = value.get("lines") if isinstance(value, dict) else None
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        raise LLMInvalidOutputError('the answer had no "lines" list of texts', kind="schema")
    return [" ".join(x.split()) for x in lines]


def salvage(text: str, given: Sequence[str], language: str) -> Adapted:
    """The usable lines of an answer that failed as a whole."""
    try:
        answer = _lines(text)
    except LLMInvalidOutputError as e:
        return Adapted([], [str(e)])
    kept, dropped = [], []
    for src, line in zip(given, answer, strict=False):
        why = problems([src], [line], language)
        (dropped if why else kept).append(why[0] if why else line)
    if len(answer) < len(given):
        dropped.append(f"{len(given) - len(answer)} lines missing")
    return Adapted(kept, dropped)


def adapt_task(given: Sequence[str], language: str, names: tuple[str, str], register: str,
               instruction: str | None = None) -> LLMTask[Adapted]:
    """The translation of ``given`` (the sources' lines) into ``language``; ``names``: the
    sources' and the customer's language as the prompt names them ("German", "French");
    ``instruction``: what our support agent asked for when regenerating (trusted: staff
    wrote it)."""
    system, retry = load_prompt("adapt"), load_prompt("adapt_retry")
    values = {"source_name": names[0], "language_name": names[1], "count": str(len(given)),
              "address_form": ADDRESS.get((language, register), "politely")}
    numbered = "\n".join(f"{i}. {line}" for i, line in enumerate(given, 1))
    user = f"<lines>\n{numbered}\n</lines>"

    def messages(error: str | None) -> list[dict[str, str]]:
        head = system.render(**values).strip()
        if instruction and instruction.strip():
            head += ("\n\nOur support agent asked for this reply: "
                     f"{' '.join(instruction.split())[:500]}")
        if error is not None:
            head += "\n\n" + retry.render(error=error, **values).strip()
        return [{"role": "system", "content": head}, {"role": "user", "content": user}]

    def parse(text: str) -> Adapted:
        answer = _lines(text)
        if len(answer) != len(given):
            raise LLMInvalidOutputError(
                f"the answer had {len(answer)} lines; {len(given)} were given", kind="count")
        found = problems(given, answer, language)
        if found:
            raise LLMInvalidOutputError("; ".join(found), kind="changed")
        return Adapted(answer, [])

    schema = {"type": "object", "required": ["lines"], "additionalProperties": False,
              "properties": {"lines": {"type": "array", "items": {"type": "string"},
                                       "minItems": len(given), "maxItems": len(given)}}}
    budget = sum(len(x) for x in given) // 2 + 40 * len(given) + 40
    return LLMTask(name="adapt", prompt_version=set_version("adapt", system, retry),
                   messages=messages, parse=parse, schema=schema, schema_name="adapted_lines",
                   max_tokens=budget, max_tokens_cap=budget * 2)
