"""``email-rag status``: dependencies, queue depths, mails per status.

Exit 0 when every required dependency (MariaDB, Redis) is up, 1 otherwise.
"""

from __future__ import annotations

from ..ops.health import status
from .output import ExitCode, Outcome, table


def register(sub, common) -> None:
    p = sub.add_parser("status", parents=[common], help="health of every dependency and counts")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    data = status(svc)
    deps = [{**d, "state": "up" if d["ok"] else "DOWN",
             "required": "yes" if d["required"] else "no"} for d in data["dependencies"]]
    lines = [table(deps, ["name", "state", "required", "version", "latency_ms", "detail"])]
    counts = data.get("counts")
    if counts:
        lines.append("")
        lines.append("queue entries: " + _fmt(counts["jobs"]))
        lines.append("mails:         " + _fmt(counts["mails"]))
        lines.append("index:         " + _fmt(counts["index"]))
        lines.append("sends:         " + _fmt(counts["sends"]))
        for mb in counts["mailboxes"]:
            state = "ALARM" if mb["alarm"] else "ok"
            held = f", held by {mb['lease_owner']}" if mb.get("lease_owner") else ""
            lines.append(f"mailbox {mb['name']}: {state}, last success {mb['last_success_at']}, "
                         f"failing since {mb['failing_since']}, last error {mb['last_error']}"
                         f"{held}")
    elif data.get("counts_error"):
        lines.append(f"\ncounts unavailable: {data['counts_error']} (run `email-rag migrate`?)")
    if data.get("queues") is not None:
        lines.append("redis queues:  " + _fmt(data["queues"]))
    down = [d["name"] for d in data["dependencies"] if d["required"] and not d["ok"]]
    if data["ok"]:
        msg = "All required dependencies are up."
        optional_down = [d["name"] for d in data["dependencies"] if not d["ok"]]
        if optional_down:
            msg += f" Degraded: {', '.join(optional_down)} unreachable (see detail)."
        return Outcome(ExitCode.OK, msg, data, "\n".join(lines))
    msg = (f"Required dependency down: {', '.join(down) or 'schema'}. Work already stored in "
           "MariaDB is safe; workers wait and resume when it is back. Check the detail column.")
    return Outcome(ExitCode.ERROR, msg, data, "\n".join(lines))


def _fmt(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "(none)"
