"""The chaos report: one table (rows = figures, columns = hardened, the counter-checks
that remove one safeguard each when they ran, naive), the same figures as JSON, and the
verdict that decides the exit code. A figure that is 0 in the hardened column and not 0
in "Without X" is a defect class that safeguard X prevents.

Verdict: the hardened column must keep every promise (a zero where a zero is
promised, and the run must have settled); the naive column, when it ran,
must show every defect class the harness is meant to detect (duplicate
mails, drafts and sends) - a harness that sees no defect without the
safeguards could not see one with them either.
"""

from __future__ import annotations

from typing import Any

from .counter import COLUMNS as COUNTER_COLUMNS
from .harness import ModeResult
from .verify import NAIVE_MUST_SHOW, PROMISED_ZERO

# (figure, label); promised zeros are marked in the table
ROWS: list[tuple[str, str]] = [
    ("duplicate_mails", "Duplicate mails"),
    ("duplicate_drafts", "Duplicate drafts"),
    ("duplicate_sends", "Duplicate sends"),
    ("missing_sends", "Missing sends"),
    ("unmarked_sends", "Sends not marked before they left"),
    ("lost_mails", "Silently lost mails"),
    ("stranded_mails", "Stranded mails (resting where nothing moves them)"),
    ("reopened_mails", "Reopened mails (closed, then moved again)"),
    ("not_settled", "Liveness: not settled before the deadline"),
    ("lost_events", "Silently lost events"),
    ("dead_letters", "Dead letters"),
    ("unexplained_dead_letters", "  without an audit trail"),
    ("outage_failures", "  caused by a MariaDB/Redis outage"),
    ("unexpected_dead_letters", "  outside the expected set (not a domain error)"),
    ("drafts_expected", "Drafts the corpus expects"),
    ("missing_drafts", "  missing, the mail not where a human sees why"),
    ("erasures", "Customers erased by an admin (privacy forget)"),
    ("privacy_leftovers", "  anything of them left (rows, vectors, audit detail, spool)"),
    ("alarm_lines", "ALARM lines in the process logs"),
    ("unexplained_alarms", "  not explained by a planned fault"),
    ("manual", "Manual (waiting for a human)"),
    ("unknown_sends", "Unknown sends (a human decides)"),
    ("unknown_sends_left", "  still undecided at the end"),
    ("unexplained_unknown_sends", "  without an audit trail"),
    ("partially_indexed", "Partially indexed (Qdrant outage)"),
    ("partially_indexed_left", "  not repaired by the sync"),
    ("retries", "Retries with backoff"),
    ("reconciled_sent", "Reconciliations that found the sent message"),
    ("stuck_resets", "Stuck entries reset (killed or hung worker)"),
    ("duplicate_deliveries_dropped", "Duplicate deliveries dropped"),
    ("replies_received", "Replies received by the relay"),
    ("drafts_approved", "Drafts approved by staff"),
    ("process_starts", "Process starts"),
    ("unexpected_exits", "  of them after an exit nobody asked for"),
    ("hard_kills", "Hard kills (SIGKILL)"),
    ("server_crashes", "Server crashes (kill -9 of MariaDB / Redis)"),
    ("longest_outage_s", "  longest server outage, seconds"),
    ("admin_actions", "Admin and staff actions in the plan (done)"),
    ("race_followups", "Follow-ups delivered right after their thread's approval"),
    ("oauth_faults", "OAuth2 token endpoint faults (down / invalid_grant)"),
    ("oauth_fault_token_requests", "  refresh requests during them"),
    ("oauth_refresh_storms", "  more than backing-off pollers make (a refresh storm)"),
    ("oauth_unalarmed_refusals", "  invalid_grant without ALARM + audit + re-authorization"),
]
COLUMNS = {"hardened": "Hardened",
           # counter-checks: hardened except one safeguard each (counter.py, seed 003)
           **{mode: f"Without {what}" for mode, (_, what) in COUNTER_COLUMNS.items()},
           "naive": "Naive (safeguards off)"}


def verdict(results: dict[str, ModeResult]) -> tuple[bool, list[str]]:
    """(ok, reasons it is not)."""
    reasons = []
    hardened = results.get("hardened")
    if hardened is not None:
        broken = [k for k in PROMISED_ZERO if hardened.figures.get(k, 0)]
        if broken:
            reasons.append("hardened column breaks promises: " + ", ".join(
                f"{k}={hardened.figures[k]}" for k in broken))
        if not hardened.settled:
            reasons.append("hardened run did not settle before its deadline")
    naive = results.get("naive")
    if naive is not None:
        blind = [k for k in NAIVE_MUST_SHOW if not naive.figures.get(k, 0)]
        if blind:
            reasons.append("naive column does not show: " + ", ".join(blind)
                           + " (the harness would not detect these defects)")
    return not reasons, reasons


def table(results: dict[str, ModeResult]) -> str:
    modes = [m for m in COLUMNS if m in results]
    head = ["Figure", *(COLUMNS[m] for m in modes)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label in ROWS:
        mark = " (promised 0)" if key in PROMISED_ZERO else ""
        cells = [str(results[m].figures.get(key, 0)) for m in modes]
        lines.append(f"| {label.strip() if not label.startswith('  ') else '↳ ' + label.strip()}"
                     f"{mark} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def prevented_by(results: dict[str, ModeResult]) -> dict[str, list[str]]:
    """Per counter-check column that ran: the promised-zero figures that are 0 with every
    safeguard and not 0 without this one (what the safeguard is worth in this run)."""
    hardened = results.get("hardened")
    out: dict[str, list[str]] = {}
    for mode in COUNTER_COLUMNS:
        if mode in results:
            out[mode] = [k for k in PROMISED_ZERO if results[mode].figures.get(k, 0)
                         and not (hardened and hardened.figures.get(k, 0))]
    return out


def fault_summary(plan: dict[str, Any], result: ModeResult) -> str:
    done: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for f in result.faults:
        name = f["fault"]
        (done if f["result"] == "done" else skipped)[name] = \
            (done if f["result"] == "done" else skipped).get(name, 0) + 1
    parts = [f"{k} {v}" for k, v in sorted(done.items())]
    text = ", ".join(parts) or "none"
    if skipped:
        text += "; skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()))
    llm = ", ".join(f"{k} {v}" for k, v in sorted(result.llm_faults.items())) or "none"
    return (f"{COLUMNS[result.mode]}: {result.seconds} s, faults {text}; LLM faults {llm}; "
            f"SMTP faults {len(result.smtp_faults)}")


def render(plan: dict[str, Any], results: dict[str, ModeResult], deliveries: int,
           duplicates: int) -> tuple[str, dict[str, Any], bool, list[str]]:
    ok, reasons = verdict(results)
    header = (f"Chaos run: seed {plan['seed']}, {plan['mails']} generated mails, {deliveries} "
              f"deliveries ({duplicates} delivered twice), {len(plan['events'])} planned faults "
              f"plus LLM faults by probability.")
    lines = [header, "", table(results), ""]
    prevented = prevented_by(results)
    for mode, keys in prevented.items():
        lines.append(f"{COLUMNS[mode]}: " + (", ".join(keys) if keys else
                                             "no defect class appeared in this run") + ".")
    if prevented:
        lines.append("")
    for mode in COLUMNS:
        if mode in results:
            lines.append(fault_summary(plan, results[mode]))
    for mode, r in results.items():
        defects = {k: v for k, v in r.findings.items() if v}
        if defects:
            lines.append("")
            lines.append(f"Findings ({COLUMNS[mode]}"
                         + ("; defects expected here" if mode == "naive" else "") + "):")
            for kind, items in sorted(defects.items()):
                lines.append(f"  {kind}: " + "; ".join(items[:8])
                             + (f" (+{len(items) - 8} more)" if len(items) > 8 else ""))
        if r.explained and mode == "hardened":
            lines.append("")
            lines.append(f"Explained, not defects ({COLUMNS[mode]}):")
            for kind, items in sorted(r.explained.items()):
                lines.append(f"  {kind}: " + "; ".join(items[:8])
                             + (f" (+{len(items) - 8} more)" if len(items) > 8 else ""))
        for f in r.faults:  # the hung worker: whose entry, reset how, finished by whom
            if f["fault"] == "db_blackhole_worker":
                lines.append(f"  hung worker ({mode}): {f['result']}; " + ", ".join(
                    f"{k} {v}" for k, v in f.items() if k not in ("fault", "result")))
        for note in r.notes:
            lines.append(f"  note ({mode}): {note}")
        if r.staff_refused:
            lines.append(f"  note ({mode}): {len(r.staff_refused)} staff action(s) refused (a "
                         "draft no longer pending, or MariaDB killed mid-action: a draft still "
                         f"pending is tried again), e.g. {r.staff_refused[0]}")
        if r.run_dir:
            lines.append(f"  logs of the {mode} run kept in {r.run_dir}")
    data = {
        "plan": {"seed": plan["seed"], "mails": plan["mails"], "deliveries": deliveries,
                 "duplicate_deliveries": duplicates, "events": len(plan["events"])},
        "columns": {m: r.figures for m, r in results.items()},
        "prevented_by": prevented,
        "promised_zero": list(PROMISED_ZERO),
        "naive_must_show": list(NAIVE_MUST_SHOW),
        "verdict": {"ok": ok, "reasons": reasons},
        "runs": {m: {**r.as_dict(), "findings": {k: v[:50] for k, v in r.findings.items()},
                     "explained": {k: v[:50] for k, v in r.explained.items()}}
                 for m, r in results.items()},
    }
    return "\n".join(lines), data, ok, reasons
