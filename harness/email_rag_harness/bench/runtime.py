"""Which llama-server build and flags: CPU seconds per classify and draft call.

Each configuration serves the installed model with ONE thread (so llama.cpp's spinning
thread pool adds no CPU time under contention) and answers the pipeline's own
classification and draft prompts for the same mails of the quality corpus; the server
process's CPU seconds (user + system, from /proc) per call are the figure, since wall
time on a shared 2-core machine is noise. Configurations: the installed build with
llama.cpp's default flags and with ``--no-repack``, and ``--other-server`` (e.g. a
``-DGGML_NATIVE=ON`` build) with both; a configuration whose server dies is reported as
such (that is the finding for a build that crashes on this CPU).

``python -m bench runtime [--mails 4] [--other-server PATH]``
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from email_rag.adapters.llm import LLMClient
from email_rag.classification.task import classification_task
from email_rag.core.errors import LocalLLMStartError
from email_rag.core.settings import Settings
from email_rag.db.audit import AuditEvent
from email_rag.llm.adapt import adapt_task
from email_rag.llm.local_server import SAFE_ARGS, LocalLLMServer, LocalModel
from email_rag.llm.policy import PolicyLimits, run_task

from .common import Report
from .quality_corpus import MAILS

SENDER = "customer@example.com"
CONTEXT = 4096


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _measure(local: LocalModel, flags: tuple[str, ...], mails: list[tuple],
             settings: Settings) -> dict[str, Any]:
    limits = PolicyLimits.from_settings(settings)
    srv = LocalLLMServer(local, args=flags, threads=1, parallel=1, context=CONTEXT,
                         log=Path(f"/tmp/bench-runtime-{os.getpid()}.log"))
    try:
        srv.start()
    except LocalLLMStartError as e:
        return {"ok": False, "why": e.message[:160]}
    try:
        llm = LLMClient(srv.url, "not-needed", srv.model_id, 900)
        assert srv.proc is not None
        pid = srv.proc.pid

        def call(task: Any) -> tuple[float, float]:
            cpu, wall = _cpu_seconds(pid), time.monotonic()
            run_task(llm, task, limits, event=lambda *a, **k: AuditEvent("bench", "email", 0,
                                                                         "x"))
            return _cpu_seconds(pid) - cpu, time.monotonic() - wall

        def classify(m: tuple) -> Any:
            return classification_task(m[5], SENDER, m[6], settings.llm_max_input_chars,
                                       CONTEXT)

        call(classify(mails[0]))  # warm-up: the system prompt enters the slot's cache
        classified = [call(classify(m)) for m in mails[1:]]
        drafted = [call(adapt_task(ADAPT_LINES, m[1], ("German", "the language of the mail"), "formal")) for m in mails[1:3]]
        llm.close()
    except (OSError, RuntimeError) as e:
        return {"ok": False, "why": f"died while answering: {e}"[:160]}
    finally:
        srv.stop()
    return {"ok": True, "classify_cpu_s": round(median(c for c, _ in classified), 2),
            "classify_wall_s": round(median(w for _, w in classified), 2),
            "draft_cpu_s": round(median(c for c, _ in drafted), 2),
            "draft_wall_s": round(median(w for _, w in drafted), 2), "calls": len(classified)}


# what a draft's model call does: the team's German lines written for the customer
ADAPT_LINES = ["Rücksendungen sind innerhalb von 30 Tagen nach Lieferung kostenlos.",
               "Bitte legen Sie den Retourenschein bei und senden Sie das Paket an "
               "Kaffeewerk GmbH, Hafenstraße 12, 20457 Hamburg."]


def run(args: Any) -> Report:
    settings = Settings()
    installed = LocalModel.installed()
    mails = [m for m in MAILS if m[1] in ("en", "de")][: max(3, (args.mails or 4) + 1)]
    configs: list[tuple[str, LocalModel, tuple[str, ...]]] = [
        (f"installed ({Path(installed.server).parent.parent.name}), default flags", installed, ()),
        ("installed, --no-repack", installed, SAFE_ARGS)]
    other = getattr(args, "other_server", None)
    if other:
        native = replace(installed, server=Path(other))
        configs += [(f"{other}, default flags", native, ()),
                    (f"{other}, --no-repack", native, SAFE_ARGS)]
    rows = []
    for name, local, flags in configs:
        r = _measure(local, flags, mails, settings)
        rows.append({"configuration": name, **({k: r.get(k, "") for k in (
            "classify_cpu_s", "classify_wall_s", "draft_cpu_s", "draft_wall_s")}),
            "result": "answered" if r["ok"] else r["why"]})
    base = rows[0]
    return Report("runtime", "CPU seconds per call (1 thread) of each llama-server build and "
                  f"flag set; load average at the end {os.getloadavg()[0]:.1f}",
                  ["configuration", "classify_cpu_s", "classify_wall_s", "draft_cpu_s",
                   "draft_wall_s", "result"], rows, {"configurations": rows, "baseline": base},
                  checks=[f"{len(mails) - 1} classifications and 2 drafts per configuration, "
                          "the same mails and prompts"],
                  notes=["wall seconds are noise on a shared machine; CPU seconds of the server "
                         "process are the comparison"])
