"""One measured run of the real worker fleet on queued mails (used by ``worker`` and
``llm-bound``), and one of the bare RQ baseline.

The fleet is the real CLI in subprocesses: ``email-rag worker --with-vectors``
(the one process owning the local Qdrant folder) plus ``k - 1`` plain
``email-rag worker``. The mails are stored with the poller's own store code
(rows and queued job rows, as after a poll). The clock starts when the workers
are registered in Redis and idle, right before the jobs are enqueued in one
pipeline, and stops at the last job's ``finished_at`` in MariaDB.

Then, with the fleet idle, latency samples: one more mail at a time is
enqueued and awaited; dispatch latency is the time from the enqueue to the
job's first ``claimed`` audit event, hand-off latency from a ``handed_off``
event to the next ``claimed`` one.

Before any figure is returned the run checks itself (``check_pipeline``):
every mail has exactly one job, done; every step confirmed once per mail; a
draft exactly for the mails that need a reply; nothing failed in RQ.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from email_rag.adapters.queue import JobQueue
from email_rag.db import Database, sql

from . import bare
from .common import (
    CheckFailed,
    LLMServerProcess,
    Proc,
    Workspace,
    cpu_seconds,
    percentile,
    rq_workers,
    spawn,
    stop,
    store_mails,
    wait_until,
)

KIND = "process_email"
BARE_QUEUE = "bench-bare"


@dataclass
class FleetRun:
    processes: int
    mails: int
    seconds: float
    counters: dict[str, float]  # summed over the worker processes
    per_mail: dict[str, float]  # counters / mails processed (throughput + latency samples)
    dispatch_ms: list[float] = field(default_factory=list)
    handoff_ms: list[float] = field(default_factory=list)
    step_ms: dict[str, float] = field(default_factory=dict)  # median per step
    step_ms_mean: dict[str, float] = field(default_factory=dict)
    rows_per_mail: float = 0.0  # inserted rows (audit, steps, drafts) per mail
    llm: dict[str, Any] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    jobs_per_mail: float = 0.0  # RQ jobs run per mail (1 + hand-offs)
    cpu_seconds: float = 0.0  # the worker processes' CPU time over the bulk
    points_per_mail: float = 0.0  # vector points in the local Qdrant folder per mail
    searches_per_mail: float = 0.0  # mails that needed a reply (a retrieval each)
    chat_bodies: list[dict[str, Any]] = field(default_factory=list)  # recent LLM requests

    @property
    def rate(self) -> float:
        return self.mails / self.seconds if self.seconds > 0 else 0.0


def utc_ts(value: Any) -> float:
    """Audit ``at`` (naive UTC written by Python) as a Unix timestamp."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC).timestamp()
    return float(value)


def fleet_args(k: int, profile: Path | None = None) -> list[tuple[str, list[str]]]:
    """The worker processes; with ``profile`` each runs under cProfile, writing
    ``profile/<name>.prof`` when it stops (RQ's warm shutdown returns normally)."""
    out = [("vector-worker", ["-m", "email_rag", "worker", "--with-vectors", "--json",
                              "--name", "bench-vectors"])]
    out += [(f"worker-{i}", ["-m", "email_rag", "worker", "--json", "--name", f"bench-plain-{i}"])
            for i in range(1, k)]
    if profile is not None:
        out = [(name, ["-m", "cProfile", "-o", str(profile / f"{name}.prof"), *args])
               for name, args in out]
    return out


COUNTERS = ("db_commits", "db_write_commits", "db_statements", "redis_round_trips")


def sum_counters(procs: list[Proc], keys: tuple[str, ...]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for p in procs:
        data = p.result().get("data", {})
        if not data:
            raise RuntimeError(f"{p.name} printed no summary (exit {p.popen.returncode}): "
                               f"{(p.err or p.out)[-4000:]}")
        for k in keys:
            if k in data:
                totals[k] += float(data[k])
        for result, n in (data.get("jobs") or {}).items():
            totals[f"jobs_{result}"] += n
    return dict(totals)


def enqueue_and_wait(ws: Workspace, db: Database, queue: str, items: list[tuple[int, int]],
                     timeout: float, procs: list[Proc]) -> tuple[float, float]:
    """Enqueue every job in one pipeline; returns (t0, t_end) as Unix timestamps."""
    q = JobQueue(ws.redis_url)
    try:
        q.redis.ping()  # connected before the clock starts
        t0 = time.time()
        q.enqueue((queue, job) for _, job in items)
    finally:
        q.close()
    state: dict[str, Any] = {}

    def finished() -> bool:
        row = db.fetchone(sql("bench_jobs_finished"), {"kind": KIND})
        state.update(row or {})
        if bool(row) and int(row["n"]) >= len(items):
            return True
        fail_fast(db)
        return False

    wait_until(finished, timeout, f"{len(items)} jobs to finish", interval=0.1, procs=procs)
    return t0, float(state["last"])


def fail_fast(db: Database) -> None:
    """A failed job waits 30 s for a retry nobody schedules here: the run is wrong now."""
    failed = db.fetchall(sql("bench_jobs_failed"))
    if failed:
        raise CheckFailed("jobs failed during the run (no figure for a run that loses work): "
                          + "; ".join(f"job {r['id']} {r['state']} after attempt {r['attempts']}:"
                                      f" {(r['last_error'] or '')[:300]}" for r in failed))


def latency_samples(ws: Workspace, db: Database, queue: str, items: list[tuple[int, int]],
                    procs: list[Proc], done_sql: str, timeout: float = 60) -> dict[int, float]:
    """Enqueue one job at a time into an idle fleet and wait for it; returns job -> t_enq."""
    q = JobQueue(ws.redis_url)
    sent: dict[int, float] = {}
    try:
        q.redis.ping()
        for _, job in items:
            t = time.time()
            q.enqueue([(queue, job)])
            sent[job] = t
            wait_until(lambda job=job: _is_done(db, done_sql, job), timeout,
                       f"latency sample job {job}", interval=0.005, procs=procs)
    finally:
        q.close()
    return sent


def _is_done(db: Database, done_sql: str, job: int) -> bool:
    row = db.fetchone(done_sql, {"id": job})
    if row and row["state"] in ("failed", "dead"):
        fail_fast(db)
    return bool(row) and row["state"] == "done"


def run_fleet(ws: Workspace, llm: LLMServerProcess, raws: list[bytes], mails: int, k: int,
              samples: int, timeout: float, profile: Path | None = None,
              **settings: Any) -> FleetRun:
    """The real worker fleet of ``k`` processes on ``mails`` queued mails (+ ``samples``)."""
    db = ws.fresh()
    s = ws.settings(db, llm_base_url=llm.url, **settings)
    items = store_mails(db, raws, s.queue_name)
    if len(items) < mails + samples:
        raise RuntimeError(f"only {len(items)} of {mails + samples} mails got a job")
    bulk, probe = items[:mails], items[mails:mails + samples]
    env = ws.env(db, llm_base_url=llm.url, **settings)
    llm.reset()
    procs = [spawn(name, args, env, ws.tmp) for name, args in fleet_args(k, profile)]
    r = ws.redis()
    try:
        wait_until(lambda: rq_workers(r) >= k, 120, f"{k} worker(s) to start", interval=0.05,
                   procs=procs)
        cpu0 = cpu_seconds(procs)
        t0, t_end = enqueue_and_wait(ws, db, s.queue_name, bulk, timeout, procs)
        cpu = cpu_seconds(procs) - cpu0
        llm_stats = llm.stats()
        chat_bodies = llm.chat_bodies()
        sent = latency_samples(ws, db, s.queue_name, probe, procs, sql("bench_job_state"))
    except RuntimeError as e:
        stop(procs)
        states = db.fetchall(sql("bench_jobs_by_state"))
        tails = "\n".join(f"--- {p.name} (exit {p.popen.returncode}):\n{(p.err + p.out)[-1200:]}"
                          for p in procs)
        raise RuntimeError(f"{e}; jobs by state: {states}\n{tails}") from e
    finally:
        stop(procs)
        r.close()
    counters = sum_counters(procs, COUNTERS)
    processed = mails + samples
    run = FleetRun(k, mails, t_end - t0, counters,
                   {key: round(counters.get(key, 0) / processed, 1)
                    for key in COUNTERS})
    run.cpu_seconds = cpu
    run.chat_bodies = chat_bodies
    run.points_per_mail = round(count_points(s) / processed, 2)
    run.jobs_per_mail = round(sum(v for key, v in counters.items() if key.startswith("jobs_"))
                              / processed, 2)
    run.llm = {"calls": sum((llm_stats.get("calls") or {}).values()),
               "in_flight_peak": llm_stats.get("in_flight_peak")}
    run.checks = check_pipeline(db, processed, counters)
    _timings(db, run, sent, {job for _, job in bulk})
    written = db.fetchone(sql("bench_rows_written")) or {}
    run.rows_per_mail = round(sum(int(v or 0) for v in written.values()) / processed, 1)
    run.searches_per_mail = round(int(written.get("drafts") or 0) / processed, 2)
    db.close()
    return run


def count_points(settings: Any) -> int:
    """The points in the run's local Qdrant folder (the fleet has stopped: the folder is free)."""
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(settings.qdrant_path))
    try:
        return int(client.count(settings.qdrant_collection, exact=True).count)
    finally:
        client.close()


def check_pipeline(db: Database, mails: int, counters: dict[str, float]) -> list[str]:
    """Every mail exactly once: one job, done; each step confirmed once; the right drafts."""
    states = {(r["kind"], r["state"]): int(r["n"]) for r in db.fetchall(sql("bench_jobs_by_state"))}
    if states != {(KIND, "done"): mails}:
        raise CheckFailed(f"expected {mails} {KIND} jobs, all done; found {states}")
    if int(db.fetchone(sql("bench_jobs_per_mail"), {"kind": KIND})["n"]):
        raise CheckFailed("some mail has more than one job")
    statuses = {r["status"]: int(r["n"]) for r in db.fetchall(sql("bench_mails_by_status"))}
    at_rest = {"draft_ready", "no_reply", "no_reply_suggested"}
    if set(statuses) - at_rest or sum(statuses.values()) != mails:
        raise CheckFailed(f"mails not all draft_ready/no_reply(_suggested): {statuses}")
    for row in db.fetchall(sql("bench_drafts_per_mail")):
        want = 1 if row["status"] == "draft_ready" else 0
        if int(row["drafts"] if row["drafts"] is not None else 0) != want:
            raise CheckFailed(f"a {row['status']} mail has {row['drafts']} drafts (want {want})")
    twice = int(db.fetchone(sql("bench_steps_run_twice"))["n"])
    if twice:
        raise CheckFailed(f"{twice} (mail, step) pairs were confirmed more than once")
    bad = {key: v for key, v in counters.items()
           if key.startswith("jobs_") and key not in ("jobs_done", "jobs_handed_off") and v}
    if bad:
        raise CheckFailed(f"worker results other than done/handed_off: {bad}")
    return [f"{mails} mails: one job each, all done", "every step confirmed once per mail",
            f"one draft per draft_ready mail ({statuses.get('draft_ready', 0)}), none for "
            f"no_reply ({statuses.get('no_reply', 0)}) or no_reply_suggested "
            f"({statuses.get('no_reply_suggested', 0)})", "no failed, lost or skipped job runs"]


def _timings(db: Database, run: FleetRun, sent: dict[int, float], bulk: set[int]) -> None:
    """Dispatch and hand-off latency (idle samples), median step time (bulk) from the audit."""
    job_events: dict[int, list[tuple[str, float]]] = defaultdict(list)
    for row in db.fetchall(sql("bench_job_events")):
        job_events[int(row["entity_id"])].append((row["event"], utc_ts(row["at"])))
    for job, t_enq in sent.items():
        events = job_events.get(job, [])
        claims = [t for e, t in events if e == "claimed"]
        if claims:
            run.dispatch_ms.append(round((claims[0] - t_enq) * 1000, 2))
        for i, (e, t) in enumerate(events):
            nxt = next((t2 for e2, t2 in events[i + 1:] if e2 == "claimed"), None)
            if e == "handed_off" and nxt is not None:
                run.handoff_ms.append(round((nxt - t) * 1000, 2))
    # step time: from the previous marker of the same job (claim or step end) to its end
    marks: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for job, events in job_events.items():
        if job in bulk:
            marks[job] += [(t, "") for e, t in events if e == "claimed"]
    for row in db.fetchall(sql("bench_step_events")):
        job = int(row["job"]) if row["job"] is not None else None
        if job in bulk:
            marks[job].append((utc_ts(row["at"]), str(row["step"])))
    per_step: dict[str, list[float]] = defaultdict(list)
    for events in marks.values():
        events.sort()
        for (t_prev, _), (t, step) in zip(events, events[1:], strict=False):
            if step:
                per_step[step].append((t - t_prev) * 1000)
    run.step_ms = {step: round(statistics.median(v), 1) for step, v in per_step.items()}
    run.step_ms_mean = {step: round(statistics.fmean(v), 1) for step, v in per_step.items()}


@dataclass
class BareRun:
    processes: int
    mails: int
    seconds: float
    counters: dict[str, float]
    per_mail: dict[str, float]
    dispatch_ms: list[float] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    cpu_seconds: float = 0.0
    plan: bare.IOPlan | None = None

    @property
    def rate(self) -> float:
        return self.mails / self.seconds if self.seconds > 0 else 0.0


def bare_samples(db: Database, jobs: list[int], enqueue: Any, done_before: int,
                 procs: list[Proc]) -> dict[int, float]:
    """Latency samples of a bare worker: one job at a time enqueued (``enqueue(job)``) into
    the idle worker and awaited by its final row; returns job -> enqueue time."""
    sent: dict[int, float] = {}
    for job in jobs:
        sent[job] = time.time()
        enqueue(job)
        want = done_before + len(sent)
        wait_until(lambda want=want: int((db.fetchone(sql("bench_rows_done")) or {}).get("n")
                                         or 0) >= want, 60, f"bare latency sample {job}",
                   interval=0.005, procs=procs)
    return sent


def run_bare(ws: Workspace, mails: int, k: int, samples: int, commits: int, rows: int,
             timeout: float, **settings: Any) -> BareRun:
    """``k`` bare RQ workers, ``mails`` jobs of ``commits`` transactions / ``rows`` inserts."""
    db = ws.fresh()
    db.execute(sql("bench_create_rows"))
    env = ws.env(db, **settings)
    procs = [spawn(f"bare-worker-{i}", ["-m", "email_rag_harness.bench.bare", BARE_QUEUE], env, ws.tmp)
             for i in range(k)]
    r = ws.redis()
    jobs = list(range(1, mails + 1))
    probe = list(range(mails + 1, mails + samples + 1))
    try:
        wait_until(lambda: rq_workers(r) >= k, 120, f"{k} bare worker(s) to start",
                   interval=0.05, procs=procs)
        q = JobQueue(ws.redis_url)
        q.redis.ping()
        t0 = time.time()
        bare.enqueue(q, BARE_QUEUE, jobs, commits, rows)
        state: dict[str, Any] = {}

        def finished() -> bool:
            state.update(db.fetchone(sql("bench_rows_done")) or {})
            return int(state.get("n") or 0) >= mails

        wait_until(finished, timeout, f"{mails} bare jobs", interval=0.1, procs=procs)
        t_end = float(state["last"])
        sent = bare_samples(db, probe, lambda job: bare.enqueue(q, BARE_QUEUE, [job], commits,
                                                                 rows), mails, procs)
        q.close()
    finally:
        stop(procs)
        r.close()
    total = mails + samples
    check = db.fetchone(sql("bench_rows_check")) or {}
    want = {"rows_total": total * max(rows, 1), "jobs": total, "finals": total, "doubled": 0}
    got = {key: int(check.get(key) or 0) for key in want}
    if got != want:
        raise CheckFailed(f"bare baseline wrote {got}, expected {want}")
    counters = sum_counters(procs, COUNTERS)
    run = BareRun(k, mails, t_end - t0, counters,
                  {key: round(counters.get(key, 0) / total, 1)
                   for key in COUNTERS})
    started = {int(row["job"]): float(row["started"]) for row in
               db.fetchall(sql("bench_rows_started"))}
    run.dispatch_ms = [round((started[j] - t) * 1000, 2) for j, t in sent.items() if j in started]
    run.checks = [f"{total} bare jobs: each ran once, {max(rows, 1)} rows each"]
    db.close()
    return run


def p(values: list[float], q: float) -> float | None:
    v = percentile(values, q)
    return round(v, 1) if v is not None else None


def io_plan(fleet: FleetRun, settings: Any) -> bare.IOPlan:
    """One mail's I/O as the fleet run counted it (``bare.same_io_job`` repeats it)."""
    per = fleet.per_mail
    return bare.IOPlan(
        commits=per["db_commits"], write_commits=per["db_write_commits"],
        statements=per["db_statements"], rows=fleet.rows_per_mail,
        llm_calls=round(float(fleet.llm.get("calls") or 0) / fleet.mails, 2),  # bulk only
        chunks=fleet.points_per_mail, searches=fleet.searches_per_mail,
        candidates=max(settings.retrieve_candidates, settings.retrieve_limit))


def run_bare_same_io(ws: Workspace, llm: LLMServerProcess, raws: list[bytes], mails: int,
                     samples: int, fleet: FleetRun, timeout: float,
                     **settings: Any) -> BareRun:
    """One bare RQ worker making the fleet's I/O per mail (``bare.same_io_job``) on the same
    corpus mails, stored the same way; the same clock, latency samples and checks."""
    db = ws.fresh()
    db.execute(sql("bench_create_rows"))
    s = ws.settings(db, llm_base_url=llm.url, **settings)
    items = store_mails(db, raws, s.queue_name)[:mails + samples]
    if not fleet.chat_bodies:
        raise CheckFailed("the fleet run left no LLM request to repeat")
    bodies = ws.tmp / f"llm-requests-{db.database}.json"
    bodies.write_text(json.dumps(fleet.chat_bodies))
    plan = io_plan(fleet, s)
    env = {**ws.env(db, llm_base_url=llm.url, **settings),
           "EMAIL_RAG_BARE_QDRANT_PATH": str(ws.tmp / f"qdrant-bare-{db.database}"),
           "EMAIL_RAG_BARE_LLM_REQUESTS": str(bodies)}
    procs = [spawn("bare-io-worker", ["-m", "email_rag_harness.bench.bare", BARE_QUEUE], env,
                   ws.tmp)]
    r = ws.redis()
    jobs = [(n, email_id) for n, (email_id, _) in enumerate(items, start=1)]
    bulk, probe = jobs[:mails], jobs[mails:]
    try:
        wait_until(lambda: rq_workers(r) >= 1, 120, "the bare same-I/O worker to start",
                   interval=0.05, procs=procs)
        q = JobQueue(ws.redis_url)
        q.redis.ping()
        cpu0 = cpu_seconds(procs)
        t0 = time.time()
        bare.enqueue_same_io(q, BARE_QUEUE, bulk, plan)
        state: dict[str, Any] = {}

        def done_count() -> int:
            state.update(db.fetchone(sql("bench_rows_done")) or {})
            return int(state.get("n") or 0)

        wait_until(lambda: done_count() >= mails, timeout, f"{mails} bare same-I/O jobs",
                   interval=0.1, procs=procs)
        t_end = float(state["last"])
        cpu = cpu_seconds(procs) - cpu0
        emails = dict(probe)
        sent = bare_samples(db, list(emails), lambda job: bare.enqueue_same_io(
            q, BARE_QUEUE, [(job, emails[job])], plan), mails, procs)
        q.close()
    finally:
        stop(procs)
        r.close()
    total = len(jobs)
    check = db.fetchone(sql("bench_rows_check")) or {}
    got = {key: int(check.get(key) or 0) for key in ("jobs", "finals", "doubled")}
    if got != {"jobs": total, "finals": total, "doubled": 0}:
        raise CheckFailed(f"bare same-I/O baseline wrote {got}, expected {total} jobs, one "
                          "final row each")
    counters = sum_counters(procs, (*COUNTERS, "llm_calls"))
    run = BareRun(1, mails, t_end - t0, counters,
                  {key: round(counters.get(key, 0) / total, 2) for key in (*COUNTERS, "llm_calls")})
    run.cpu_seconds = cpu
    run.plan = plan
    started = {int(row["job"]): float(row["started"]) for row in
               db.fetchall(sql("bench_rows_started"))}
    run.dispatch_ms = [round((started[j] - t) * 1000, 2) for j, t in sent.items() if j in started]
    made = {"db_commits": plan.commits, "db_write_commits": plan.write_commits,
            "db_statements": plan.statements, "llm_calls": plan.llm_calls}
    off = {key: (run.per_mail.get(key), want) for key, want in made.items()
           if abs(float(run.per_mail.get(key) or 0) - want) > 0.2 + 0.05 * want}
    if off:
        raise CheckFailed(f"the bare same-I/O worker did not make the project's I/O per mail "
                          f"(counted, planned): {off}")
    run.checks = [f"{total} bare same-I/O jobs: each ran once and wrote its final row; per mail "
                  "as counted in the project run: " + ", ".join(
                      f"{key} {run.per_mail.get(key)}" for key in made)]
    db.close()
    return run
