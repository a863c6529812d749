"""The classification of one mail: allowed values, validation, defaults.

The allowed values live here and only here (the enums below). They feed the
JSON schema sent to the endpoint (``json_schema()``), the classification
prompt (``allowed_values_text()``) and the validator (``parse_classification``),
so the three can never disagree.

An LLM answer is never used raw: it is parsed into ``Classification``
(unknown fields refused, enum values checked, lengths bounded). What fails is
an ``LLMInvalidOutputError`` whose message names exactly what was wrong; the
policy puts that message into the adjusted retry prompt.
"""

from __future__ import annotations

import functools
import json
import re
from enum import StrEnum
from typing import Any, Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core.errors import LLMInvalidOutputError
from ..core.jsonvalue import JsonObject
from ..mail.language import identify


class Category(StrEnum):
    BILLING = "billing"  # invoices, payments, refunds
    ORDER = "order"  # orders, delivery, returns
    TECHNICAL = "technical"  # errors, login problems, something does not work
    ACCOUNT = "account"  # account data, contracts, cancellations
    COMPLAINT = "complaint"  # dissatisfaction that needs care
    FEEDBACK = "feedback"  # praise, thanks, suggestions
    NOTIFICATION = "notification"  # newsletters, automated notices
    SPAM = "spam"  # unsolicited advertising, scams
    OTHER = "other"  # anything else (also the default)


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class Language(StrEnum):
    """ISO 639-1 code of the language the mail is written in."""

    DE = "de"
    EN = "en"
    FR = "fr"
    ES = "es"
    IT = "it"
    NL = "nl"
    PT = "pt"
    OTHER = "other"  # none of the above, or cannot tell


SUMMARY_MAX = 300
SCHEMA_NAME = "email_classification"
# Columns of ``emails`` that a classification sets (the step writes exactly these).
# ``classification_sources``: per field where its value came from (rules / history / llm /
# identifier / default) and how sure that source was.
EMAIL_COLUMNS = ("category", "priority", "language", "summary", "needs_reply",
                 "classification_defaulted", "classification_prompt_version",
                 "classification_sources")


class FieldSource(TypedDict, total=False):
    """Where one classification field came from (``classification_sources``, JSON)."""

    source: Required[str]  # history, llm, default, rules, identifier
    confidence: Required[float | None]
    examples: int  # history: the mailbox's labelled examples
    via: str  # history: "category" when the field followed the decided category
    identifier: list[str | float]  # llm as tie-breaker: the identifier's unsure guess


class Classification(BaseModel):
    """A validated classification. Extra fields are refused."""

    model_config = ConfigDict(extra="forbid", use_enum_values=False)

    category: Category = Field(description="What the mail is about.")
    priority: Priority = Field(description="How urgently support should act.")
    language: Language = Field(description="Language of the mail (ISO 639-1).")
    summary: str = Field(min_length=1, max_length=SUMMARY_MAX,
                         description="One sentence: what the sender wants (the intent).")
    needs_reply: bool = Field(description="True if the sender expects an answer.")

    @field_validator("summary")
    @classmethod
    def _one_line(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("summary is empty")
        return v

    def email_updates(self, prompt_version: str, defaulted: bool) -> dict[str, str | bool]:
        """The ``emails`` columns this classification sets."""
        return {
            "category": self.category.value,
            "priority": self.priority.value,
            "language": self.language.value,
            "summary": self.summary,
            "needs_reply": self.needs_reply,
            "classification_defaulted": defaulted,
            "classification_prompt_version": prompt_version,
        }


def json_schema() -> JsonObject:
    """The JSON schema sent to the endpoint (strict: all fields required, no extras).

    Built from the pydantic model with every ``$ref`` inlined, because some
    OpenAI-compatible servers (llama.cpp grammars) handle flat schemas best. Built
    once per process (pydantic's schema generation took 1.7 ms per mail in the worker
    profile); each caller gets its own copy.
    """
    return json.loads(_json_schema_text())


@functools.cache
def _json_schema_text() -> str:
    raw = Classification.model_json_schema()
    defs = raw.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = defs[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**inline(target), **{k: v for k, v in node.items() if k != "$ref"}}
                return merged
            return {k: inline(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    schema = inline(raw)
    schema.pop("description", None)
    schema["required"] = list(Classification.model_fields)
    schema["additionalProperties"] = False
    return json.dumps(schema)


# What each value means, for the prompt (a model that only sees bare names guesses:
# measured with a 1.5B model, one line per category raised category accuracy from
# 16/30 to 21/30). Descriptions only: no example answer a small model could copy.
CATEGORY_MEANING: dict[Category, str] = {
    Category.BILLING: "invoices, payments, charges, refunds, prices, payment methods",
    Category.ORDER: "an order, its delivery, shipping, tracking, exchange or return of goods",
    Category.TECHNICAL: "something does not work: errors, crashes, login or password problems, "
                        "app or website bugs, setup questions",
    Category.ACCOUNT: "the customer account or contract: personal data, address or e-mail "
                      "change, subscription, cancellation, data deletion",
    Category.COMPLAINT: "the sender is clearly dissatisfied or angry about the service and "
                        "wants it to be put right (takes precedence over the topic)",
    Category.FEEDBACK: "praise, thanks or a suggestion, with no problem to solve",
    Category.NOTIFICATION: "automated messages: newsletters, system notices, delivery "
                           "reports, out-of-office replies",
    Category.SPAM: "unsolicited advertising, phishing, scams",
    Category.OTHER: "anything that fits none of the above",
}
PRIORITY_MEANING: dict[Priority, str] = {
    Priority.URGENT: "money lost right now, a service completely down, a legal deadline, "
                     "or the sender says it is urgent",
    Priority.HIGH: "a blocked customer or an angry complaint",
    Priority.NORMAL: "an ordinary question or request",
    Priority.LOW: "no action needed soon: feedback, notifications, spam",
}
LANGUAGE_NAMES: dict[Language, str] = {
    Language.DE: "German", Language.EN: "English", Language.FR: "French",
    Language.ES: "Spanish", Language.IT: "Italian", Language.NL: "Dutch",
    Language.PT: "Portuguese", Language.OTHER: "another language",
}


def allowed_values_text() -> str:
    """The fields, their allowed values and what each value means, as prompt lines."""
    cats = "\n".join(f"    {c.value}: {CATEGORY_MEANING[c]}" for c in Category)
    prios = "\n".join(f"    {p.value}: {PRIORITY_MEANING[p]}" for p in Priority)
    langs = ", ".join(f"{lang.value} ({LANGUAGE_NAMES[lang]})" for lang in Language)
    return "\n".join([
        "- category: exactly one of these values (the main topic of the mail):", cats,
        "- priority: exactly one of:", prios,
        f"- language: the language the mail is written in, one of: {langs}",
        f"- summary: one sentence in English, at most {SUMMARY_MAX} characters, saying what "
        "the sender wants (in your own words)",
        "- needs_reply: false only for automated notices, newsletters, spam and thanks that "
        "ask nothing; true for every mail a person wrote with a question, a request or a "
        "problem. When unsure: true.",
    ])


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def _loads(text: str) -> Any:
    """JSON from the model's text; tolerates a surrounding code fence, nothing more."""
    if text is None or not text.strip():
        raise LLMInvalidOutputError("invalid JSON: the answer was empty", kind="invalid_json")
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError as e:
        raise LLMInvalidOutputError(
            f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}", kind="invalid_json"
        ) from e


def _normalise(data: JsonObject) -> JsonObject:
    """Forgive case and surrounding blanks in enum values; nothing else."""
    out = dict(data)
    for key in ("category", "priority", "language"):
        if isinstance(out.get(key), str):
            out[key] = out[key].strip().lower()
    return out


def _describe(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:6]:
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        got = err.get("input")
        got_text = ""
        if err["type"] != "missing" and not isinstance(got, dict):
            got_text = f" (got {json.dumps(got, default=str)[:40]})"
        parts.append(f"field '{loc}': {err['msg']}{got_text}")
    return "; ".join(parts)


def parse_classification(text: str) -> Classification:
    """Parse and validate an LLM answer, or raise ``LLMInvalidOutputError``.

    The error's ``context['kind']`` is ``invalid_json`` or ``schema_violation``.
    """
    data = _loads(text)
    if not isinstance(data, dict):
        raise LLMInvalidOutputError(
            f"schema violation: expected a JSON object, got {type(data).__name__}",
            kind="schema_violation")
    try:
        return Classification.model_validate(_normalise(data))
    except ValidationError as e:
        raise LLMInvalidOutputError(f"schema violation: {_describe(e)}",
                                    kind="schema_violation") from e


# --- defaults, used when the output was unusable twice (stored with defaulted = true) ---

def default_classification(subject: str | None, body: str | None) -> Classification:
    """The defaults for unusable output. needs_reply is True: a human reviews a
    draft rather than a mail silently getting no answer."""
    subject_line = " ".join((subject or "").split())[:200] or "(no subject)"
    return Classification(
        category=Category.OTHER,
        priority=Priority.NORMAL,
        language=Language(identify(f"{subject or ''}\n{body or ''}").code),
        summary=f"Not classified (LLM output unusable): {subject_line}",
        needs_reply=True,
    )
