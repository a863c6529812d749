"""``email-rag status``: dependencies, queue depths, mails per status.

Exit 0 when every required dependency (MariaDB, Redis) is up, 1 otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..ops.health import report
from ..ops.llm_status import ModelStatus
from .output import ExitCode, Outcome, table


def register(sub, common) -> None:
    p = sub.add_parser("status", parents=[common], help="health of every dependency and counts")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    got = report(svc)
    data = got.as_dict()
    deps = [{**c.as_dict(), "state": "up" if c.ok else "DOWN",
             "required": "yes" if c.required else "no"} for c in got.checks]
    lines = [table(deps, ["name", "state", "required", "version", "latency_ms", "detail"])]
    if got.counts:
        counts = got.counts
        lines.append("")
        lines.append("queue entries: " + _fmt(counts.jobs))
        lines.append("mails:         " + _fmt(counts.mails))
        lines.append("index:         " + _fmt(counts.index))
        lines.append("sends:         " + _fmt(counts.sends))
        h = counts.history
        if h is not None and h.total:
            left = "unknown" if h.seconds_left is None else f"{h.seconds_left:.0f} s"
            lines.append(f"history:       {h.done}/{h.total} indexed ({h.replies} replies of "
                         f"ours, {h.answered} answered), {h.rate_per_s}/s, time left {left}")
        for mb in counts.mailboxes:
            state = "ALARM" if mb.alarm else "ok"
            held = f", held by {mb.held_by}" if mb.held_by else ""
            lines.append(f"mailbox {mb.name}: {state}, last success {_iso(mb.last_success_at)}, "
                         f"failing since {_iso(mb.failing_since)}, last error {mb.last_error}"
                         f"{held}")
    elif got.counts_error:
        lines.append(f"\ncounts unavailable: {got.counts_error} (run `email-rag migrate`?)")
    if got.model is not None:
        lines.append("model:         " + model_line(got.model))
    if got.queues is not None:
        lines.append("redis queues:  " + _fmt(got.queues))
    if got.ok:
        msg = "All required dependencies are up."
        if got.degraded:
            msg += f" Degraded: {', '.join(got.degraded)} unreachable (see detail)."
        return Outcome(ExitCode.OK, msg, data, "\n".join(lines))
    msg = (f"Required dependency down: {', '.join(got.down) or 'schema'}. Work already stored in "
           "MariaDB is safe; workers wait and resume when it is back. Check the detail column.")
    return Outcome(ExitCode.ERROR, msg, data, "\n".join(lines))


def model_line(m: ModelStatus) -> str:
    """Which model and build answer, how fast, the last error (of its last calls)."""
    speed = (f"reading {m.read_per_s} tokens/s, writing {m.write_per_s} tokens/s over "
             f"{m.measured} timed call(s)" if m.measured else "no timings sent (not llama.cpp?)")
    error = (f"; last error {_iso(m.last_error_at)}: {m.last_error}" if m.last_error
             else "; no error")
    return (f"{m.model or '?'} ({m.runtime or 'runtime unknown'}): {speed}; {m.ok} of the "
            f"last {m.calls} call(s) ok, the last {_iso(m.last_call_at)}{error}")


def _iso(v: datetime | None) -> str | None:
    return v.isoformat() if v is not None else None


def _fmt(d: Mapping[Any, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "(none)"
