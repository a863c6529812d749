"""Every benchmark runs from its one entry point with a tiny N and prints its ratios.

The benchmarks themselves run on demand (``python -m email_rag_harness.bench NAME``, README
"Performance"); this only proves each still works end to end - real Dovecot,
MariaDB, Redis, worker processes, the scripted LLM and the SMTP relay - checks
its own result and reports the fields the README quotes. Tiny N: the figures
are meaningless here, only their presence is checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, run_cli

SMOKE = {
    "ingest": (["--mails", "20", "--memory-sizes", "10,20", "--runs", "1"],
               ["ratio", "ratio_fetch_insert", "ms_per_mail", "rss_growth"]),
    "worker": (["--mails", "20", "--processes", "1"],
               ["ratio", "ratio_commits", "dispatch_ms_p50", "ratios", "ms_per_mail"]),
    # calls long against the rest of a step: the bench's own check that calls of the two
    # workers overlapped must not hang on how the two processes happen to be scheduled
    "llm-bound": (["--mails", "6", "--processes", "1,2", "--latency-ms", "400"],
                  ["ratio_to_ideal", "speedup", "overlap"]),
    "send": (["--mails", "10"], ["ratio", "ratio_reuse", "sends_per_s"]),
    "quality": (["--llm", "scripted", "--mails", "12"],
                ["acc_category", "hit3", "classification", "learning_curve"]),
    "mime": ([], ["worst_step_s", "mails"]),
    "knowledge": (["--mails", "5"], ["passages_per_s", "search_p50_ms", "reimport_unchanged_s"]),
    "latency": (["--mails", "2", "--interval-ms", "300", "--poll-seconds", "2",
                 "--latency-ms", "50"], ["idle_p50_s", "runs"]),
}
SLOW = {"latency": 480}  # four runs, each starting a worker and an ingest process
DEADLINE = 300  # a hang, not a speed: real servers and worker processes on a busy CI machine


def bench(*args: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMAIL_RAG_")}
    env["PYTHONPATH"] = str(ROOT)
    env["EMAIL_RAG_EMBEDDING_BACKEND"] = "hashing"  # the explicit test setting
    return subprocess.run([sys.executable, "-m", "email_rag_harness.bench", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_benchmark_runs_checks_itself_and_reports_its_ratios(name):
    args, fields = SMOKE[name]
    res = bench(name, *args, "--json", timeout=SLOW.get(name, DEADLINE))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert out["ok"] is True and out["data"]["bench"] == name
    for field in fields:
        assert out["data"].get(field) is not None, (field, out["data"])
    assert out["data"]["checks"], "a figure without its correctness check"
    assert out["data"]["machine"]["nproc"] >= 1


def test_the_email_rag_command_runs_the_same_benchmark_as_a_table(env):
    res = run_cli("bench", "index", "--mails", "20", timeout=DEADLINE)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Indexer.index" in res.stdout and "bare embed + upsert" in res.stdout
    assert "ratio" in res.stdout and "checked before reporting" in res.stdout


def test_quality_retrieval_only_measures_three_rankings_without_an_llm():
    """--retrieval-only: the whole corpus, vectors / FULLTEXT / fused, no LLM started. With
    the hashing embedder the words decide; the FULLTEXT ranking must find most paraphrased
    mails among 40 candidates, and the fused figures come from both rankings."""
    res = bench("quality", "--retrieval-only", "--json")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    data = json.loads(res.stdout)["data"]
    r = data["retrieval"]
    assert (r["mails"], r["pairs"]) == (332, 120) and r["embedder"] == "hashing-no-semantics"
    assert 0.3 < r["lexical"]["hit3"] <= 1.0 and 0.2 < r["vectors"]["hit3"] <= 1.0
    assert r["fused"]["hit3"] >= min(r["vectors"]["hit3"], r["lexical"]["hit3"])
    assert set(r["hit3_by_language"]) == {"de", "en", "es", "fr"}
    assert "classification" not in data and data["checks"]
