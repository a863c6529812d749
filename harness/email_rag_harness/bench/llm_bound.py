"""LLM-bound throughput: do the LLM calls of different mails overlap?

    python -m bench llm-bound [--mails 24] [--processes 1,2,4,8] [--latency-ms 500] [--json]

The scripted LLM answers every call after ``--latency-ms`` (500 ms); a mail makes
two calls (classify, draft; one for a mail that needs no reply). The real worker
fleet of k processes (one ``--with-vectors``, k - 1 plain) processes N queued
mails. A worker runs one job at a time, so with k workers at most k calls can be
in flight: the ideal is k calls per latency. Reported per k: mails/s, the ideal
mails/s (k / (LLM calls per mail x latency)), their ratio, and the most calls the
LLM server saw in flight at once (the proof that calls of different mails
overlap). Each run checks its result first, like the worker benchmark.
"""

from __future__ import annotations

from typing import Any

from .common import LLMServerProcess, Report, Target, Workspace, ratio
from .pipeline import run_fleet
from .worker import corpus

EFFICIENCY_TARGET = 0.7  # of the ideal, with the largest process count


def run(args: Any) -> Report:
    mails = args.mails or 24
    processes = args.processes or [1, 2, 4, 8]
    latency = args.latency_ms if args.latency_ms is not None else 500.0
    samples = 2
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    checks: list[str] = []
    with Workspace("llm") as ws:
        llm = LLMServerProcess(latency, cwd=ws.tmp)
        ws.on_exit(llm.stop)
        raws = corpus(mails + samples)
        for k in processes:
            timeout = 60 + mails * 3 * latency / 1000 / k + 30 * k
            fleet = run_fleet(ws, llm, raws, mails, k, samples, timeout,
                              worker_class=args.worker_class)
            calls_per_mail = fleet.llm["calls"] / mails if mails else 0
            ideal = k / (calls_per_mail * latency / 1000) if calls_per_mail else 0
            entry = {"processes": k, "mails_per_s": round(fleet.rate, 2),
                     "ideal_mails_per_s": round(ideal, 2), "ratio_to_ideal": ratio(fleet.rate, ideal),
                     "llm_calls_per_mail": round(calls_per_mail, 2),
                     "llm_in_flight_peak": fleet.llm["in_flight_peak"],
                     "seconds": round(fleet.seconds, 2)}
            runs.append(entry)
            checks = fleet.checks
            rows.append({"processes": k, "mails/s": entry["mails_per_s"],
                         "ideal mails/s": entry["ideal_mails_per_s"],
                         "ratio to ideal": entry["ratio_to_ideal"],
                         "LLM calls in flight (peak)": entry["llm_in_flight_peak"],
                         "speed-up vs 1": ratio(fleet.rate, runs[0]["mails_per_s"])})
    last = runs[-1]
    speedup = ratio(last["mails_per_s"], runs[0]["mails_per_s"])
    figures = {"mails": mails, "latency_ms": latency, "runs": runs,
               "speedup": speedup, "ratio_to_ideal": last["ratio_to_ideal"],
               "overlap": last["llm_in_flight_peak"]}
    targets = [Target(f"ratio to ideal ({last['processes']} proc) >= {EFFICIENCY_TARGET}",
                      last["ratio_to_ideal"], EFFICIENCY_TARGET)]
    overlap = last["llm_in_flight_peak"] or 0
    if overlap < min(last["processes"], 2) and last["processes"] > 1:
        from .common import CheckFailed

        raise CheckFailed(f"with {last['processes']} workers the LLM never saw two calls at "
                          "once: calls of different mails did not overlap")
    summary = (f"llm-bound ({latency:g} ms per call): " + ", ".join(
        f"{e['processes']} proc {e['mails_per_s']} mails/s ({e['ratio_to_ideal']} of ideal, "
        f"{e['llm_in_flight_peak']} in flight)" for e in runs) + f"; speed-up {speedup}x")
    notes = ["ideal = k processes / (LLM calls per mail x latency); one job per process at a "
             "time, so k calls at most are in flight"]
    return Report("llm-bound", summary, COLUMNS, rows, figures, targets,
                  checks + [f"LLM calls overlapped: up to {overlap} in flight at once"], notes)


COLUMNS = ["processes", "mails/s", "ideal mails/s", "ratio to ideal", "LLM calls in flight (peak)",
           "speed-up vs 1"]
