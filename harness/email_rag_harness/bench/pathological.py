"""Pathological mails through the job runner: the time of each pipeline step.

    python -m bench mime [--json]        (also: email-rag bench mime)

Each mail is stored by the poller's own store code and run by the job runner
(``JobRunner``, the real parse -> classify -> index -> retrieve -> draft steps, the
scripted LLM server at zero latency in its own process, the hashing embedder, a local
Qdrant folder). Every step is timed where the runner calls it. The mails:

- ``parts_20000``: 1.4 MB of 20,000 tiny non-text MIME parts (no text part);
- ``html_2mb``: a 2 MB HTML-only body;
- ``nested_300``: multiparts nested 300 levels deep;
- ``forward_chain``: a message/rfc822 inside a message/rfc822 ... 12 levels deep.

Target: under 1 s per step for each mail (a figure, not an assert). Checked first: each
mail ends in a rest state (draft_ready, no_reply or manual) with every step that ran
confirmed or stopped by policy.
"""

from __future__ import annotations

import time
from typing import Any

from email_rag.db import sql
from email_rag.pipeline.contract import StepSpec
from email_rag.pipeline.registry import default_pipeline
from email_rag.runtime.job_runner import JobRunner
from email_rag.wiring.services import Services

from .common import CheckFailed, LLMServerProcess, Report, Target, Workspace, store_mails

STEP_TARGET_S = 1.0
HEAD = ("From: Kunde <kunde@example.org>\r\nTo: support@example.com\r\n"
        "Subject: Rechnung {n} doppelt abgebucht\r\nMessage-ID: <{n}@bench.example>\r\n"
        "Date: Tue, 03 Nov 2026 08:00:00 +0100\r\nMIME-Version: 1.0\r\n")


def mails() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    parts = b"".join(b'--p\r\nContent-Type: application/x-part; name="part-%05d.bin"\r\n\r\n'
                     b"%d\r\n" % (i, i) for i in range(20_000))
    out["parts_20000"] = (HEAD.format(n="parts").encode()
                          + b'Content-Type: multipart/mixed; boundary="p"\r\n\r\n'
                          + parts + b"--p--\r\n")
    cell = "<tr><td>Position</td><td>Rechnung</td><td>99,00 EUR</td></tr>\n"
    out["html_2mb"] = (HEAD.format(n="html").encode()
                       + b"Content-Type: text/html; charset=utf-8\r\n\r\n<html><body><table>"
                       + (cell * (2_000_000 // len(cell))).encode() + b"</table></body></html>")
    nested = b"Content-Type: text/plain\r\n\r\nRechnung ganz innen.\r\n"
    for level in range(300):
        b = b"n%d" % level
        nested = (b'Content-Type: multipart/mixed; boundary="' + b + b'"\r\n\r\n--' + b
                  + b"\r\n" + nested + b"\r\n--" + b + b"--\r\n")
    out["nested_300"] = HEAD.format(n="nested").encode() + nested
    inner = (b"From: a@example.org\r\nSubject: innen\r\nContent-Type: text/plain\r\n\r\n"
             b"Rechnung 1 ganz innen.\r\n")
    for level in range(12):
        inner = (b"From: f%d@example.org\r\nSubject: Fwd %d\r\n" % (level, level)
                 + b'Content-Type: multipart/mixed; boundary="f%d"\r\n\r\n' % level
                 + b"--f%d\r\nContent-Type: text/plain\r\n\r\nsiehe unten\r\n" % level
                 + b"--f%d\r\nContent-Type: message/rfc822\r\n\r\n" % level + inner
                 + b"\r\n--f%d--\r\n" % level)
    out["forward_chain"] = (HEAD.format(n="fwd").encode()
                            + b'Content-Type: multipart/mixed; boundary="o"\r\n\r\n'
                            + b"--o\r\nContent-Type: text/plain\r\n\r\nWeitergeleitet.\r\n"
                            + b"--o\r\nContent-Type: message/rfc822\r\n\r\n" + inner
                            + b"\r\n--o--\r\n")
    return out


def timed(pipeline: list[StepSpec], times: dict[str, float]) -> list[StepSpec]:
    def wrap(spec: StepSpec) -> StepSpec:
        def run(ctx: Any) -> Any:
            started = time.perf_counter()
            try:
                return spec.run(ctx)
            finally:
                times[str(spec.step)] = time.perf_counter() - started
        return StepSpec(spec.step, run, spec.needs_vectors)
    return [wrap(s) for s in pipeline]


def run(args: Any) -> Report:
    rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {"mails": {}}
    worst = 0.0
    with Workspace("mime") as ws:
        llm = LLMServerProcess(0, cwd=ws.tmp)
        ws.on_exit(llm.stop)
        db = ws.fresh()
        svc = Services(ws.settings(db, llm_base_url=llm.url, llm_timeout=60))
        ws.on_exit(svc.close)
        times: dict[str, float] = {}
        runner = JobRunner(svc, "bench-mime", timed(default_pipeline(), times), vector_owner=True)
        # warm-up (imports, LLM client, the local Qdrant folder): one plain mail, not reported
        warm = (HEAD.format(n="warm") + "Content-Type: text/plain\r\n\r\nRechnung?\r\n")
        [(_, warm_job)] = store_mails(db, [warm.encode()], svc.settings.queue_name, mailbox="w")
        runner.run(warm_job)
        for name, raw in mails().items():
            [(email_id, job_id)] = store_mails(db, [raw], svc.settings.queue_name, mailbox=name)
            times.clear()
            started = time.perf_counter()
            result = runner.run(job_id)
            total = time.perf_counter() - started
            row = db.fetchone(sql("bench_mail_outcome"), {"id": email_id})
            if result != "done" or row["status"] not in ("draft_ready", "no_reply", "manual"):
                raise CheckFailed(f"{name}: job {result}, mail {row['status']}")
            worst = max([worst, *times.values()])
            figures["mails"][name] = {"bytes": len(raw), "steps_s": {k: round(v, 3) for k, v in
                                                                      times.items()},
                                      "total_s": round(total, 3), "status": row["status"],
                                      "parse_status": row["parse_status"]}
            rows.append({"mail": name, "KB": len(raw) // 1024,
                         **{s: (f"{times[s]:.3f}" if s in times else "-")
                            for s in ("parse", "classify", "index", "retrieve", "draft")},
                         "status": f"{row['status']} ({row['parse_status']})"})
    figures["worst_step_s"] = round(worst, 3)
    summary = (f"mime: {len(rows)} pathological mails through the job runner; the slowest "
               f"step took {worst:.3f} s (target < {STEP_TARGET_S} s per step)")
    return Report("mime", summary, ["mail", "KB", "parse", "classify", "index", "retrieve",
                                    "draft", "status"], rows, figures,
                  [Target(f"slowest step <= {STEP_TARGET_S} s", round(worst, 3), STEP_TARGET_S,
                          higher_is_better=False)],
                  [f"each of the {len(rows)} mails ended in a rest state, its job done"],
                  ["seconds per step; '-' = the step did not run (the mail stopped before)"])
