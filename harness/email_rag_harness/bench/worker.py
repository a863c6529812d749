"""Worker speed: the real worker fleet against a bare RQ job doing the same writes.

    python -m bench worker [--mails 2000] [--processes 1,2] [--json]

N queued mails (the seeded corpus: support requests, follow-ups in threads,
thanks mails, a few attachments), the scripted LLM at zero latency, the hashing
embedder and a local Qdrant folder. For 1 and 2 worker processes (with 2: one
``--with-vectors``, one plain - only one process may own a local Qdrant folder):

- project: the real ``email-rag worker`` processes, parse -> classify -> index
  -> retrieve -> draft in two checkpoint transactions (parse + classify; index +
  retrieve + draft with the entry's finish);
- bare same I/O (1 process; the target's baseline): one RQ worker of the same class
  running a job that makes the I/O of one mail as the project run COUNTED it, with the
  plain client libraries and no logic (``bare.same_io_job``): the same MariaDB
  statements and commits (as many writing, as many read-only), the same inserted
  rows, the same number of chat calls to the same LLM server with the request bodies
  the project sent, the embedder on as many chunks, as many points upserted into a
  local Qdrant folder and as many vector searches;
- bare commits (context, the older baseline): RQ workers of the same class running a
  job that makes the same number of commits and inserts the same number of rows, and
  nothing else (no LLM call, no vector store, every commit writing).

The project's ratio to "bare same I/O" is the share of a mail's time that is I/O
any implementation must make; the rest is the project's own logic (parse, rules,
prompts, checks, audit building) and what it does around RQ.

Reported: mails/s of both and their ratio (target >= 0.5, 1 process), commits (all, and those
of transactions that wrote: only these flush MariaDB's redo log to disk), statements
and Redis round trips per mail (counted by the processes: the database adapter
counts commits and statements, the Redis connection counts what it sends), RQ
jobs per mail (1 + hand-offs), dispatch latency p50/p95 (enqueue to the claim,
on an idle fleet; target p50 < 25 ms) and hand-off latency, and the median time
per step from the audit trail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from email_rag_harness.testing.corpus import generate

from .common import LLMServerProcess, Report, Target, Workspace, ratio
from .pipeline import p, run_bare, run_bare_same_io, run_fleet

RATIO_TARGET = 0.5
DISPATCH_P50_TARGET_MS = 25.0


def corpus(n: int) -> list[bytes]:
    """n mails that all get a job (no loop-guard or unparseable mail in this corpus)."""
    return [m.raw for m in generate(n, seed=7, duplicate_rate=0, auto_rate=0, malformed_rate=0)]


def samples_for(mails: int) -> int:
    return max(5, min(40, mails // 10))


def run(args: Any) -> Report:
    mails = args.mails or 2000
    processes = args.processes or [1, 2]
    samples = samples_for(mails)
    settings = {"worker_class": args.worker_class}
    timeout = 120 + mails * 1.0
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {"mails": mails, "latency_samples": samples,
                               "worker_class": args.worker_class, "runs": []}
    checks: list[str] = []
    with Workspace("worker") as ws:
        llm = LLMServerProcess(0, cwd=ws.tmp)
        ws.on_exit(llm.stop)
        raws = corpus(mails + samples)
        for k in processes:
            profile = None
            if getattr(args, "profile", None):
                profile = Path(args.profile) / f"{k}-proc"
                profile.mkdir(parents=True, exist_ok=True)
            fleet = run_fleet(ws, llm, raws, mails, k, samples, timeout, profile=profile,
                              **settings)
            if profile is not None:
                figures.setdefault("profile", {})[f"{k}_processes"] = profile_top(
                    profile / "vector-worker.prof", mails + samples)
            commits = round(fleet.per_mail["db_commits"])
            inserts = round(fleet.rows_per_mail)
            bare = run_bare(ws, mails, k, samples, commits, inserts, timeout, **settings)
            checks = fleet.checks + bare.checks
            same = None
            if k == 1:
                same = run_bare_same_io(ws, llm, raws, mails, samples, fleet, timeout, **settings)
                checks += same.checks
            r_commits = ratio(fleet.rate, bare.rate)
            r = ratio(fleet.rate, same.rate) if same is not None else None
            entry = {
                "processes": k,
                "project_mails_per_s": round(fleet.rate, 1),
                "bare_mails_per_s": round(bare.rate, 1),
                "ratio": r,
                "ratio_commits": r_commits,
                "project": {**fleet.per_mail, "rows_inserted": fleet.rows_per_mail,
                            "rq_jobs": fleet.jobs_per_mail,
                            "dispatch_ms_p50": p(fleet.dispatch_ms, 50),
                            "dispatch_ms_p95": p(fleet.dispatch_ms, 95),
                            "handoff_ms_p50": p(fleet.handoff_ms, 50),
                            "handoff_ms_p95": p(fleet.handoff_ms, 95),
                            "step_ms_median": fleet.step_ms, "step_ms_mean": fleet.step_ms_mean,
                            "ms_per_mail": round(fleet.seconds / mails * 1000, 1),
                            "cpu_ms_per_mail": round(fleet.cpu_seconds / mails * 1000, 1),
                            "seconds": round(fleet.seconds, 2),
                            "llm_calls": fleet.llm.get("calls")},
                "bare": {**bare.per_mail, "commits_per_job": commits, "rows_per_job": inserts,
                         "dispatch_ms_p50": p(bare.dispatch_ms, 50),
                         "dispatch_ms_p95": p(bare.dispatch_ms, 95),
                         "seconds": round(bare.seconds, 2)},
            }
            if same is not None:
                entry["bare_same_io_mails_per_s"] = round(same.rate, 1)
                entry["bare_same_io"] = {
                    **same.per_mail, "plan": vars(same.plan) if same.plan else None,
                    "dispatch_ms_p50": p(same.dispatch_ms, 50),
                    "ms_per_mail": round(same.seconds / mails * 1000, 2),
                    "cpu_ms_per_mail": round(same.cpu_seconds / mails * 1000, 2),
                    "seconds": round(same.seconds, 2)}
            entry["ms_per_mail"] = phase_ms(entry, mails)
            figures["runs"].append(entry)
            rows.append({"run": f"project, {k} proc", "mails/s": entry["project_mails_per_s"],
                         "ratio": r if r is not None else "", "ratio_commits": r_commits,
                         "ms/mail": entry["ms_per_mail"]["project"]["total"],
                         **_row(entry["project"])})
            if same is not None:
                rows.append({"run": "bare same I/O, 1 proc",
                             "mails/s": entry["bare_same_io_mails_per_s"], "ratio": "",
                             "ratio_commits": "", "ms/mail": entry["bare_same_io"]["ms_per_mail"],
                             **_row({**entry["bare_same_io"], "rows_per_job": same.plan.rows
                                     if same.plan else None})})
            rows.append({"run": f"bare commits, {k} proc", "mails/s": entry["bare_mails_per_s"],
                         "ratio": "", "ratio_commits": "",
                         "ms/mail": entry["ms_per_mail"]["bare"]["total"],
                         **_row(entry["bare"])})
    first = figures["runs"][0]
    figures["ratio"] = first["ratio"]
    figures["ms_per_mail"] = first["ms_per_mail"]
    figures["ratio_commits"] = first["ratio_commits"]
    figures["ratios"] = {f"{e['processes']}_processes": e["ratio"] for e in figures["runs"]}
    figures["ratios_commits"] = {f"{e['processes']}_processes": e["ratio_commits"]
                                 for e in figures["runs"]}
    figures["dispatch_ms_p50"] = first["project"]["dispatch_ms_p50"]
    figures["dispatch_ms_p95"] = first["project"]["dispatch_ms_p95"]
    steps = ", ".join(f"{s} {ms:g}/{first['project']['step_ms_mean'][s]:g}"
                      for s, ms in first["project"]["step_ms_median"].items())
    targets = [Target(f"ratio to bare same I/O (1 proc) >= {RATIO_TARGET}", e["ratio"],
                      RATIO_TARGET) for e in figures["runs"] if e["ratio"] is not None]
    targets.append(Target(f"dispatch p50 < {DISPATCH_P50_TARGET_MS:g} ms",
                          figures["dispatch_ms_p50"], DISPATCH_P50_TARGET_MS, False))
    summary = ("worker: " + "; ".join(
        f"{e['processes']} proc {e['project_mails_per_s']} mails/s"
        + (f" vs bare same I/O {e['bare_same_io_mails_per_s']} (ratio {e['ratio']})"
           if e["ratio"] is not None else "")
        + f", vs bare commits {e['bare_mails_per_s']} (ratio {e['ratio_commits']})"
        for e in figures["runs"])
        + f"; dispatch p50 {figures['dispatch_ms_p50']} ms")
    notes = [f"ms per step, median/mean ({processes[0]} proc, from the audit trail): {steps}; "
             f"{first['project']['ms_per_mail']} ms per mail in all, "
             f"{first['project']['cpu_ms_per_mail']} ms of it CPU time of the workers",
             "ms per mail by phase (wall time / mails; steps: audit means; outside steps: RQ "
             "dequeue and bookkeeping, claim, finish): " + "; ".join(
                 f"{e['processes']} proc project " + ", ".join(
                     f"{k} {v:g}" for k, v in e["ms_per_mail"]["project"].items())
                 + (f" | bare same I/O {e['bare_same_io']['ms_per_mail']:g}"
                    if "bare_same_io" in e else "")
                 + f" | bare commits {e['ms_per_mail']['bare']['total']:g}"
                 for e in figures["runs"]),
             "per mail: counted by the worker processes over the whole run (bulk + latency "
             "samples, start and stop included)"]
    for key, top in figures.get("profile", {}).items():
        notes.append(f"profile ({key.replace('_', ' ')}, the --with-vectors worker under "
                     "cProfile; own time per mail, cumulative in brackets):")
        notes += [f"  {t['own_ms_per_mail']:7.3f} ms ({t['cum_ms_per_mail']:7.3f}) "
                  f"{t['calls_per_mail']:6.1f} calls  {t['function']}" for t in top]
    return Report("worker", summary, COLUMNS, rows, figures, targets, checks, notes)


def phase_ms(entry: dict[str, Any], mails: int) -> dict[str, dict[str, float]]:
    """Milliseconds per mail by phase: the project's steps (audit means) and what is outside
    them (RQ around the job, the claim, the finish), against the bare job's whole time."""
    project = entry["project"]
    total = project["seconds"] * 1000 / mails
    steps = {k: float(v) for k, v in project["step_ms_mean"].items()}
    out = {**steps, "outside steps": round(max(0.0, total - sum(steps.values())), 2),
           "total": round(total, 2)}
    return {"project": out,
            "bare": {"total": round(entry["bare"]["seconds"] * 1000 / mails, 2)}}


def profile_top(path: Path, mails: int, n: int = 25) -> list[dict[str, Any]]:
    """The functions with the most own time in a cProfile file, per mail."""
    import pstats

    stats = pstats.Stats(str(path))
    rows = []
    for (file, line, name), (_, calls, own, cum, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = file.split("site-packages/")[-1].split("/email_rag/", 1)[-1]
        rows.append({"function": f"{short}:{line}({name})", "calls_per_mail": calls / mails,
                     "own_ms_per_mail": own * 1000 / mails, "cum_ms_per_mail": cum * 1000 / mails})
    rows.sort(key=lambda r: r["own_ms_per_mail"], reverse=True)
    return [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
            for r in rows[:n]]


COLUMNS = ["run", "mails/s", "ratio", "ratio_commits", "ms/mail", "commits", "write_commits", "statements", "redis_rt", "rows", "rq_jobs",
           "dispatch_p50_ms", "dispatch_p95_ms", "handoff_p50_ms"]


def _row(d: dict[str, Any]) -> dict[str, Any]:
    return {"commits": d.get("db_commits"), "write_commits": d.get("db_write_commits"),
            "statements": d.get("db_statements"),
            "redis_rt": d.get("redis_round_trips"),
            "rows": d.get("rows_inserted", d.get("rows_per_job")), "rq_jobs": d.get("rq_jobs", 1),
            "dispatch_p50_ms": d.get("dispatch_ms_p50"), "dispatch_p95_ms": d.get("dispatch_ms_p95"),
            "handoff_p50_ms": d.get("handoff_ms_p50", "")}
