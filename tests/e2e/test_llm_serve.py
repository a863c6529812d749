"""`email-rag llm serve` with the REAL local model (issue 44): it keeps llama-server
answering - a killed server is started again and the worker's next LLM call succeeds - and
the status shows which model and build answered, how fast, and the last error. Slow (a CPU
model); like tests/e2e/test_real_model.py it fails, with the install command, when the model
is not installed."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_real_model import ORDER_MAIL
from tests.helpers import run_cli, spawn
from tests.webutil import free_port

pytestmark = [pytest.mark.slow, pytest.mark.real_model]


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def serving(port: int, supervisor, log: Path, starts: int, not_pid: int | None = None,
            timeout: float = 300) -> int:
    """The pid of the llama-server answering /health on ``port`` (another than
    ``not_pid``) once the service has said so for the ``starts``-th time ("answering on" in
    its log): a server killed before the service saw it healthy is a failed start, not a
    crash of a running one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert supervisor.poll() is None, "llm serve exited"
        pids = [p for p in children(supervisor.pid) if p != not_pid]
        said = log.read_text() if log.exists() else ""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200 and pids and said.count("answering on") >= starts:
                    return pids[0]
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"no llama-server answered on {port} within {timeout} s")


def test_a_killed_llama_server_is_restarted_and_the_workers_next_call_succeeds(env, db,
                                                                              mailbox, tmp_path):
    """GIVEN `email-rag llm serve` with the installed model WHEN its llama-server is killed
    (SIGKILL) THEN a new one answers on the same port; a real worker then classifies (and
    drafts) a mail through it, the attempt recorded as answered by the model with the
    server's timings; `email-rag status` names the model, its build and its speed; SIGTERM
    stops the service and its server."""
    port = free_port()
    log = tmp_path / "llm-serve.log"
    supervisor = spawn("llm", "serve", "--port", str(port), "--log", str(tmp_path / "llama.log"),
                       log=log)
    try:
        first = serving(port, supervisor, log, 1)
        os.kill(first, signal.SIGKILL)
        second = serving(port, supervisor, log, 2, not_pid=first)
        assert second != first
        said = log.read_text()
        assert "exited with -9" in said and said.count("answering on") == 2, said

        mailbox.append(ORDER_MAIL)
        extra = {"EMAIL_RAG_MAILBOXES": mailbox.env_value(),
                 "EMAIL_RAG_LLM_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        polled = run_cli("poll", "--once", "--json", env_extra=extra)
        assert polled.returncode == 0, polled.stdout + polled.stderr
        worker = run_cli("worker", "--with-vectors", "--burst", env_extra=extra, timeout=900)
        assert worker.returncode == 0, worker.stdout[-2000:] + worker.stderr[-2000:]
        attempts = [json.loads(r["detail"]) for r in db.fetchall(
            "SELECT detail FROM audit_log WHERE event = 'llm_attempt' ORDER BY id")]
        classify = attempts[0]
        assert classify["task"] == "classify" and classify["outcome"] in {"ok", "invalid_output"}
        assert classify["answered_by"] == "qwen2.5-coder-1.5b-instruct-q4_k_m" or \
            classify["outcome"] != "ok"
        timed = [a for a in attempts if a.get("timings")]
        assert timed and all(a["timings"]["predicted_n"] >= 1 for a in timed)
        assert all(a["runtime"].startswith("b") for a in timed)  # llama.cpp's build
        print("attempts:", [(a["task"], a["outcome"], a["duration_ms"], a.get("timings"))
                            for a in attempts])

        status = run_cli("status", "--json", env_extra=extra)
        model = json.loads(status.stdout)["data"]["model"]
        print("status model:", model)
        assert model["model"] == "qwen2.5-coder-1.5b-instruct-q4_k_m"
        assert model["runtime"] == timed[0]["runtime"]
        assert model["measured_calls"] == len(timed) and model["write_tokens_per_s"] > 0
        assert model["read_tokens_per_s"] > 0
        text = run_cli("status", env_extra=extra).stdout
        assert "model:         qwen2.5-coder-1.5b-instruct-q4_k_m (b" in text
    finally:
        supervisor.send_signal(signal.SIGTERM)
        code = supervisor.wait(timeout=60)
    assert code == 0, log.read_text()[-2000:]
    assert not Path(f"/proc/{second}").exists() or \
        Path(f"/proc/{second}/stat").read_text().split()[2] == "Z"
    assert "stopped on request after 2 start(s) and 1 restart(s)" in log.read_text()


def test_llm_serve_without_the_installed_model_says_how_to_install_it(env, tmp_path):
    r = run_cli("llm", "serve", "--json", env_extra={"EMAIL_RAG_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 1 and "scripts/local-llm/install.sh" in r.stdout, r.stdout + r.stderr
