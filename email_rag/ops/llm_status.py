"""What the status page says about the model: which model and build answer, how fast it
read and wrote on its last calls (llama.cpp's ``timings`` of each answer, recorded in the
``llm_attempt`` audit events), and the last error among them.

Read from the last ``RECENT`` attempts (one index range read of the audit log), so the
figures describe the model as it is now, whichever worker made the calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..core.jsonvalue import JsonObject
from ..core.rows import FromRow
from ..db import Database, sql

RECENT = 20  # the last calls the figures are taken from


@dataclass(frozen=True)
class LLMCall(FromRow):
    """One LLM attempt as ``llm_recent_calls`` reads it."""

    at: datetime
    task: str | None = None
    outcome: str | None = None
    model: str | None = None  # the model asked for
    answered_by: str | None = None  # the model the endpoint says answered
    runtime: str | None = None  # the build that answered (llama.cpp: b11434-...)
    error: str | None = None
    prompt_n: float | None = None
    prompt_ms: float | None = None
    predicted_n: float | None = None
    predicted_ms: float | None = None


@dataclass(frozen=True)
class ModelStatus:
    calls: int  # of the last RECENT attempts
    ok: int
    model: str | None = None
    runtime: str | None = None
    last_call_at: datetime | None = None
    measured: int = 0  # calls with the server's timings
    read_per_s: float | None = None  # prompt tokens per second over the measured calls
    write_per_s: float | None = None  # generated tokens per second over the measured calls
    last_error: str | None = None
    last_error_at: datetime | None = None

    def as_dict(self) -> JsonObject:
        return {"calls": self.calls, "ok": self.ok, "model": self.model,
                "runtime": self.runtime, "last_call_at": _iso(self.last_call_at),
                "measured_calls": self.measured, "read_tokens_per_s": self.read_per_s,
                "write_tokens_per_s": self.write_per_s, "last_error": self.last_error,
                "last_error_at": _iso(self.last_error_at)}


def summarise(calls: list[LLMCall]) -> ModelStatus | None:
    """The figures of ``calls`` (newest first); None when there are none. Speeds are the
    tokens of the measured calls over their time (a long call counts by its length)."""
    if not calls:
        return None
    answered = [c for c in calls if c.answered_by or c.runtime]
    timed = [c for c in calls if c.predicted_ms and c.predicted_n is not None]
    failed = next((c for c in calls if c.outcome != "ok"), None)
    return ModelStatus(
        calls=len(calls), ok=sum(1 for c in calls if c.outcome == "ok"),
        model=(answered[0].answered_by if answered else None) or calls[0].model,
        runtime=next((c.runtime for c in answered if c.runtime), None),
        last_call_at=calls[0].at, measured=len(timed),
        read_per_s=_rate([(c.prompt_n, c.prompt_ms) for c in timed]),
        write_per_s=_rate([(c.predicted_n, c.predicted_ms) for c in timed]),
        last_error=(failed.error or failed.outcome) if failed else None,
        last_error_at=failed.at if failed else None)


def model_status(db: Database) -> ModelStatus | None:
    return summarise(LLMCall.from_rows(db.fetchall(sql("llm_recent_calls"), {"limit": RECENT})))


def _rate(pairs: list[tuple[float | None, float | None]]) -> float | None:
    n = sum(count or 0 for count, ms in pairs if ms)
    ms = sum(ms or 0 for _, ms in pairs)
    return round(n / (ms / 1000), 1) if ms else None


def _iso(v: datetime | None) -> str | None:
    return v.isoformat() if v is not None else None
