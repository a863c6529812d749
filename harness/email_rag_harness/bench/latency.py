"""Time to draft: from the APPEND of a mail to its draft being ready, IDLE vs polling.

    python -m bench latency [--mails 20] [--interval-ms 3000] [--latency-ms 1000]
                            [--poll-seconds 60] [--json]

A private Dovecot mailbox gets ``--mails`` mails APPENDed at a steady rate (one every
``--interval-ms``). The real processes pick them up: ``email-rag idle`` (IMAP IDLE)
or ``email-rag poll`` (every ``--poll-seconds``, the product default 60 s), and one
``email-rag worker --with-vectors`` (scripted LLM, hashing embedder, local Qdrant).
Each of the four runs - IDLE and polling, with the scripted LLM at 0 ms and at
``--latency-ms`` per call (a hosted model answers in about a second) - has its own
database, Redis db contents and mailbox.

Measured per mail: APPEND issued -> mail row stored (``emails.received_at``) and
APPEND issued -> draft row written (``drafts.created_at``, written in the transaction
that makes the mail ``draft_ready``); p50/p95/max. Both clocks are this machine's.
Before reporting, each run checks itself as ``bench worker`` does: every mail once,
one job each, done, a draft for each mail that needs one.

Target: p50 APPEND -> draft_ready < 2 s with IDLE and the instant LLM.
"""

from __future__ import annotations

import json
import time
from typing import Any

from email_rag.adapters.imap import ImapMailbox
from email_rag.db import Database, sql
from email_rag_harness.testing.dovecot import Dovecot, mailboxes_json
from email_rag_harness.testing.mails import mail

from .common import (
    CheckFailed,
    LLMServerProcess,
    Report,
    Target,
    Workspace,
    percentile,
    rq_workers,
    spawn,
    stop,
    wait_until,
)
from .pipeline import check_pipeline, sum_counters

P50_TARGET_S = 2.0


def run(args: Any) -> Report:
    mails = args.mails or 20
    interval = (args.interval_ms if args.interval_ms is not None else 3000) / 1000
    slow_ms = args.latency_ms if args.latency_ms is not None else 1000.0
    poll_seconds = args.poll_seconds or 60
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {"mails": mails, "interval_s": interval,
                               "poll_seconds": poll_seconds, "runs": []}
    checks: list[str] = []
    with Workspace("latency") as ws, Dovecot() as dovecot:
        for llm_ms in (0.0, slow_ms):
            llm = LLMServerProcess(llm_ms, cwd=ws.tmp)
            try:
                for mode in ("idle", "poll"):
                    entry = one_run(ws, dovecot, llm, mode, llm_ms, mails, interval,
                                    poll_seconds)
                    checks = entry.pop("checks")
                    figures["runs"].append(entry)
                    rows.append(_row(entry))
            finally:
                llm.stop()
    idle0 = next(e for e in figures["runs"] if e["mode"] == "idle" and e["llm_ms"] == 0)
    figures["idle_p50_s"] = idle0["draft_s"]["p50"]
    targets = [Target(f"IDLE, instant LLM: p50 APPEND -> draft_ready < {P50_TARGET_S:g} s",
                      idle0["draft_s"]["p50"], P50_TARGET_S, False)]
    summary = "latency APPEND -> draft_ready p50: " + "; ".join(
        f"{e['mode']} LLM {e['llm_ms']:g} ms {e['draft_s']['p50']} s" for e in figures["runs"])
    notes = [f"{mails} mails per run, one APPEND every {interval:g} s; polling every "
             f"{poll_seconds} s; one worker process (--with-vectors); seconds"]
    return Report("latency", summary, COLUMNS, rows, figures, targets, checks, notes)


def one_run(ws: Workspace, dovecot: Dovecot, llm: LLMServerProcess, mode: str, llm_ms: float,
            mails: int, interval: float, poll_seconds: int) -> dict[str, Any]:
    db = ws.fresh()
    user = dovecot.add_user()
    env = ws.env(db, llm_base_url=llm.url, mailboxes=json.loads(mailboxes_json([user.config])),
                 poll_interval_seconds=poll_seconds)
    llm.reset()
    worker = spawn("worker", ["-m", "email_rag", "worker", "--with-vectors", "--json",
                              "--name", f"bench-latency-{mode}"], env, ws.tmp)
    ingest = spawn(mode, ["-m", "email_rag", mode, "--json"], env, ws.tmp)
    procs = [worker, ingest]
    r = ws.redis()
    appended: dict[str, float] = {}
    try:
        wait_until(lambda: rq_workers(r) >= 1, 120, "the worker to start", 0.05, procs)
        wait_until(lambda: _ready(db, mode), 60, f"{mode} to hold the mailbox", 0.05, procs)
        with ImapMailbox(user.config) as imap:
            start = time.monotonic()
            for n in range(mails):
                due = start + n * interval
                time.sleep(max(0.0, due - time.monotonic()))
                message_id = f"<latency-{mode}-{int(llm_ms)}-{n}@example.org>"
                appended[message_id] = time.time()
                imap.append("INBOX", mail(n, message_id=message_id))
        timeout = poll_seconds + 60 + mails * (2 * llm_ms / 1000 + 1)
        wait_until(lambda: _drafted(db) >= mails, timeout, f"{mails} drafts", 0.05, procs)
        time.sleep(0.5)  # the last job's end-of-run writes
    finally:
        stop(procs)
        r.close()
    counters = sum_counters([worker], ("db_commits",))
    checks = check_pipeline(db, mails, counters)
    stored, drafted = [], []
    for row in db.fetchall(sql("bench_latency_times")):
        t0 = appended.get(row["message_id"])
        if t0 is None:
            raise CheckFailed(f"a mail nobody appended: {row['message_id']}")
        stored.append(float(row["stored"]) - t0)
        if row["drafted"] is not None:
            drafted.append(float(row["drafted"]) - t0)
    if len(stored) != mails:
        raise CheckFailed(f"{len(stored)} mails stored of {mails} appended")
    ingest_data = ingest.result().get("data", {})
    db.close()
    return {"mode": mode, "llm_ms": llm_ms, "mails": mails, "stored_s": _dist(stored),
            "draft_s": _dist(drafted), "drafts": len(drafted),
            "ingest_process": ingest_data.get("mailboxes") or ingest_data.get("cumulative"),
            "checks": checks}


def _ready(db: Database, mode: str) -> bool:
    row = db.fetchone(sql("bench_latency_ready"))
    if not row or row["last_success_at"] is None:
        return False
    return mode != "idle" or row["lease_owner"] is not None


def _drafted(db: Database) -> int:
    return int(db.fetchone(sql("bench_latency_drafts"))["n"])


def _dist(values: list[float]) -> dict[str, float | None]:
    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 3)
    return {"p50": r(percentile(values, 50)), "p95": r(percentile(values, 95)),
            "max": r(max(values) if values else None)}


COLUMNS = ["pick-up", "llm_ms", "mails", "stored_p50_s", "stored_p95_s", "stored_max_s",
           "draft_p50_s", "draft_p95_s", "draft_max_s"]


def _row(e: dict[str, Any]) -> dict[str, Any]:
    return {"pick-up": "IDLE" if e["mode"] == "idle" else "polling", "llm_ms": e["llm_ms"],
            "mails": e["mails"], "stored_p50_s": e["stored_s"]["p50"],
            "stored_p95_s": e["stored_s"]["p95"], "stored_max_s": e["stored_s"]["max"],
            "draft_p50_s": e["draft_s"]["p50"], "draft_p95_s": e["draft_s"]["p95"],
            "draft_max_s": e["draft_s"]["max"]}
