"""Token budget of one LLM call: what fits the model's context window.

A 2,048-token server answered 400 to a draft prompt with eight reference blocks
(7k tokens), and servers that truncate silently dropped the system prompt. So a
prompt is built to fit: ``input = context - max_tokens (answer) - SAFETY``.
Tokens are estimated from characters (``CHARS_PER_TOKEN`` is on the safe side
for en/de/fr/es with the BPE tokenizers of small models); when the server still
answers "exceeds the context", the policy shrinks the prompt once more.

Trimming order for a draft: reference cases (least similar first), then thread
mails (oldest first), then the mail body (its end; the cut is said in the block).
What was trimmed is recorded (``Fitted.trimmed`` -> audit ``llm_input_trimmed``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # chat template tokens per message
SAFETY = 64
MIN_BODY_CHARS = 400
DEFAULT_CONTEXT = 4096


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text or "") / CHARS_PER_TOKEN)


def prompt_tokens(messages: list[dict[str, str]]) -> int:
    return sum(estimate_tokens(m.get("content", "")) + MESSAGE_OVERHEAD for m in messages)


def context_tokens(settings: Any, llm: Any) -> int:
    """The context window: the setting, else what the server reports, else 4096."""
    if getattr(settings, "llm_context_tokens", 0):
        return int(settings.llm_context_tokens)
    size = getattr(llm, "context_size", None)
    return int(size(DEFAULT_CONTEXT)) if callable(size) else DEFAULT_CONTEXT


@dataclass
class Fitted:
    """A prompt with parts that can be dropped to fit ``budget`` tokens.

    ``build(refs, thread, body_chars)`` renders the messages from the first ``refs``
    references, the last ``thread`` thread mails and at most ``body_chars`` characters
    of the mail body.
    """

    build: Callable[[int, int, int], list[dict[str, str]]]
    refs: int
    thread: int
    body_chars: int
    budget: int
    trimmed: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._full = (self.refs, self.thread, self.body_chars)
        while prompt_tokens(self.messages()) > self.budget and self._drop_one():
            pass
        self._record()

    def messages(self) -> list[dict[str, str]]:
        return self.build(self.refs, self.thread, self.body_chars)

    def _drop_one(self) -> str | None:
        if self.refs > 0:
            self.refs -= 1
            return "one reference case"
        if self.thread > 0:
            self.thread -= 1
            return "one thread mail"
        if self.body_chars > MIN_BODY_CHARS:
            self.body_chars = max(MIN_BODY_CHARS, self.body_chars // 2)
            return f"the mail body beyond {self.body_chars} characters"
        return None

    def shrink(self) -> str | None:
        """Less context for the next try (the server said it does not fit)."""
        dropped = self._drop_one()
        self._record()
        return dropped

    def _record(self) -> None:
        refs, thread, body = self._full
        cut = {k: v for k, v in {"references_dropped": refs - self.refs,
                                 "thread_dropped": thread - self.thread,
                                 "body_chars_kept": self.body_chars if self.body_chars < body
                                 else 0}.items() if v}
        self.trimmed.clear()
        if cut:
            self.trimmed.update(cut, budget_tokens=self.budget,
                                prompt_tokens_est=prompt_tokens(self.messages()))
