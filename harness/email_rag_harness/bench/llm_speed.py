"""Model seconds per drafted mail, configuration against configuration, with the real model.

``email-rag bench llm [--mails N] [--runs R] [--configurations before,now,now+draft] [--json]``

Each configuration starts its own llama-server with the installed model (cold: an empty
prompt cache) and classifies the same mails, drafting a reply for each mail the model says
takes one, with the pipeline's own prompts and policy (``llm_calls``, in a subprocess):

- ``before``: the code and runtime flags of ``BEFORE_COMMIT`` (main before issue 42),
  checked out into a temporary ``git worktree`` and put first on ``PYTHONPATH``;
- ``now``: this tree, without the draft model;
- ``now+draft``: this tree, llama-server with the draft model (speculative decoding).

Every figure comes from llama-server's own ``timings`` in each answer: prompt tokens (read
plus taken from the cache), cached prompt tokens, generated tokens, prompt and generation
tokens per second, draft acceptance; model seconds are ``prompt_ms + predicted_ms``. Per
drafted mail the sum over its calls (classification, draft, any retry); printed as p50/p95
and totals. ``model_seconds_per_drafted_mail`` is every model second of the run (mails that
took no reply included) over the drafted mails; ``drafted_mails_per_hour`` is 3,600 over it
(one worker, the model busy all the time). The configurations run interleaved, ``--runs``
times (3 give the run-to-run noise: ``model_seconds_runs``).

The draft-quality fields (``fact_recall``, ``all_facts_share``, ``wrong_facts``,
``wrong_language``) come from the labelled draft set's bench (``bench/drafts.py``,
``run_set``) through ``_quality``; where that bench is not there they are null and the
demo's mails are the set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from email import message_from_bytes, policy
from pathlib import Path
from statistics import mean
from typing import Any

from email_rag.llm.local_server import LocalLLMServer, LocalModel

from .common import CheckFailed, Report, percentile

BEFORE_COMMIT = "0e96d7f"  # main before issue 42 (prompt cache, draft model)
CONFIGURATIONS = ("before", "now", "now+draft")
CONTEXT = 8192  # LocalLLMServer's default: 2 slots of 4,096
REPO = Path(__file__).resolve().parents[3]
QUALITY_FIELDS = ("fact_recall", "all_facts_share", "wrong_facts", "wrong_language")


def demo_mails(limit: int | None) -> list[dict[str, str]]:
    """The demo's sample mails a person wrote (no auto-replies, no bounces), as text."""
    from ..testing.mails import sample_mails

    out = []
    for raw in sample_mails():
        msg = message_from_bytes(raw, policy=policy.default)
        sender = str(msg.get("From", ""))
        if msg.get("Auto-Submitted") or "MAILER-DAEMON" in sender:
            continue
        part = msg.get_body(preferencelist=("plain", "html"))
        body = part.get_content() if part is not None else ""
        out.append({"subject": str(msg.get("Subject", "")), "sender": sender,
                    "body": str(body)})
    return out[:limit] if limit else out


def _checkout_before(work: Path) -> Path:
    where = work / "before"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where),
                    BEFORE_COMMIT], check=True, capture_output=True, text=True)
    return where


def _remove_checkout(where: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                   capture_output=True, text=True)


def _calls(code: Path, url: str, model: str, mails: list[dict[str, str]]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(code), str(REPO / "harness"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    job = {"url": url, "model": model, "context": CONTEXT // 2, "mails": mails}
    res = subprocess.run([sys.executable, "-m", "email_rag_harness.bench.llm_calls"],
                         input=json.dumps(job), capture_output=True, text=True, env=env,
                         cwd=str(code), timeout=3600)
    if res.returncode != 0:
        raise RuntimeError(f"the model calls of {code} failed: {res.stderr[-800:]}")
    out = json.loads(res.stdout)
    if Path(out.get("code", "")).resolve() != code.resolve():
        raise CheckFailed(f"the calls for {code} ran the code in {out.get('code')}")
    return out


def _sum(attempts: list[dict[str, Any]], key: str) -> float:
    return sum(float((a.get("timings") or {}).get(key) or 0) for a in attempts)


def figures(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per drafted mail and per configuration, from the attempts of every run."""
    per_mail: list[dict[str, float]] = []
    run_seconds: list[float] = []
    everything: list[dict[str, Any]] = []
    for run in runs:
        total, drafted = 0.0, 0
        for mail in run["mails"]:
            calls = mail["classify"] + (mail["draft"] or [])
            everything += calls
            seconds = (_sum(calls, "prompt_ms") + _sum(calls, "predicted_ms")) / 1000
            total += seconds
            if mail["draft"] is None:
                continue
            drafted += 1
            per_mail.append({
                "prompt_tokens": _sum(calls, "prompt_n") + _sum(calls, "cache_n"),
                "cached_tokens": _sum(calls, "cache_n"),
                "generated_tokens": _sum(calls, "predicted_n"),
                "model_s": seconds,
                "wall_s": sum(float(a.get("duration_ms") or 0) for a in calls) / 1000})
        if drafted:
            run_seconds.append(total / drafted)
    prompt_ms, predicted_ms = _sum(everything, "prompt_ms"), _sum(everything, "predicted_ms")
    draft_n = _sum(everything, "draft_n")
    per = mean(run_seconds) if run_seconds else None
    out: dict[str, Any] = {
        "name": name, "drafted_mails": len(per_mail), "runs": len(runs),
        "model_seconds_per_drafted_mail": round(per, 2) if per else None,
        "drafted_mails_per_hour": round(3600 / per, 1) if per else None,
        "model_seconds_runs": [round(s, 2) for s in run_seconds],
        "pp_tokens_per_s": round(_sum(everything, "prompt_n") / (prompt_ms / 1000), 1)
        if prompt_ms else None,
        "tg_tokens_per_s": round(_sum(everything, "predicted_n") / (predicted_ms / 1000), 1)
        if predicted_ms else None,
        "draft_acceptance": round(_sum(everything, "draft_n_accepted") / draft_n, 3)
        if draft_n else None,
        "calls": len(everything)}
    for key in ("prompt_tokens", "cached_tokens", "generated_tokens", "model_s", "wall_s"):
        values = [m[key] for m in per_mail]
        out[key] = {"p50": _round(percentile(values, 50)), "p95": _round(percentile(values, 95)),
                    "total": _round(sum(values))}
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _quality(name: str, url: str, model: str) -> dict[str, Any]:
    """The draft-quality figures of the labelled draft set for this configuration's server:
    the one place that calls the labelled-set bench (null fields until it is there)."""
    try:
        from . import drafts  # type: ignore[attr-defined]
    except ImportError:
        return dict.fromkeys(QUALITY_FIELDS)
    from email_rag.adapters.llm import LLMClient

    llm = LLMClient(url, "not-needed", model, 900)
    try:
        found = drafts.run_set(None, llm, None, False)
    finally:
        llm.close()
    return {k: found.get(k) for k in QUALITY_FIELDS}


def run(args: Any) -> Report:
    names = [c.strip() for c in (getattr(args, "configurations", None)
                                 or ",".join(CONFIGURATIONS)).split(",") if c.strip()]
    unknown = [n for n in names if n not in CONFIGURATIONS]
    if unknown:
        raise ValueError(f"unknown configuration(s) {unknown}: choose from {CONFIGURATIONS}")
    installed = LocalModel.installed()
    if "now+draft" in names and installed.draft is None:
        raise ValueError("now+draft needs the draft model: run bash scripts/local-llm/install.sh")
    mails = demo_mails(args.mails)
    runs = max(1, args.runs or 1)
    work = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    before = _checkout_before(work) if "before" in names else None
    results: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    quality: dict[str, dict[str, Any]] = {}
    try:
        for _ in range(runs):
            for name in names:
                with LocalLLMServer(installed, context=CONTEXT, log=work / f"{name}.log",
                                    speculative=name == "now+draft") as srv:
                    code = before if name == "before" and before is not None else REPO
                    results[name].append(_calls(code, srv.url, srv.model_id, mails))
                    if name not in quality:
                        quality[name] = _quality(name, srv.url, srv.model_id)
    finally:
        if before is not None:
            _remove_checkout(before)
        shutil.rmtree(work, ignore_errors=True)
    configs = [{**figures(n, results[n]), **quality[n]} for n in names]
    rows = [{"configuration": c["name"], "drafted": c["drafted_mails"],
             "model_s_per_mail": c["model_seconds_per_drafted_mail"],
             "runs": " / ".join(str(s) for s in c["model_seconds_runs"]),
             "mails_per_h": c["drafted_mails_per_hour"],
             "prompt_p50": c["prompt_tokens"]["p50"], "cached_p50": c["cached_tokens"]["p50"],
             "generated_p50": c["generated_tokens"]["p50"], "pp_tok_s": c["pp_tokens_per_s"],
             "tg_tok_s": c["tg_tokens_per_s"], "accepted": c["draft_acceptance"],
             "wall_p50": c["wall_s"]["p50"], "wall_p95": c["wall_s"]["p95"],
             "model_s_total": c["model_s"]["total"]} for c in configs]
    first, last = configs[0], configs[-1]
    ratio = (round(last["model_seconds_per_drafted_mail"]
                   / first["model_seconds_per_drafted_mail"], 2)
             if first["model_seconds_per_drafted_mail"] and last["model_seconds_per_drafted_mail"]
             else None)
    return Report("llm", f"model seconds per drafted mail, {last['name']} / {first['name']}: "
                  f"{ratio} ({len(mails)} mails x {runs} run(s); load average "
                  f"{os.getloadavg()[0]:.1f})",
                  list(rows[0]), rows, {"configurations": configs, "ratio": ratio,
                                        "mails": len(mails), "before_commit": BEFORE_COMMIT},
                  checks=["every configuration ran the same mails in the same order, each "
                          "with its own code (before: the checkout of " + BEFORE_COMMIT + ")"],
                  notes=["figures from llama-server's timings; quality fields null until the "
                         "labelled draft set's bench (bench/drafts.py run_set) is there"])
