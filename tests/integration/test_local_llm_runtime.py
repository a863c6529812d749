"""The real local runtime is proven by loading the model and answering, on this CPU.

GIVEN the installed llama-server and model (scripts/local-llm/install.sh) behind a wrapper
that dies with SIGSEGV while "loading the model" unless it is given ``--no-repack`` - what
a native llama.cpp build did on a Xeon with AMX tiles - WHEN the install's probe or the
pipeline's start meets it THEN the safe flags are found, recorded for this CPU and used,
and the real model answers a JSON-schema request through them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from email_rag.llm.local_server import LocalLLMServer, LocalModel, cache_dir, cpu_fingerprint

pytestmark = [pytest.mark.slow, pytest.mark.real_model]

ROOT = Path(__file__).resolve().parents[2]

WRAPPER = """#!/bin/sh
case " $* " in *" --no-repack "*) exec {real} "$@" ;; esac
echo "load_model: loading model (test wrapper: dies like the AMX repack path)"
kill -SEGV $$
"""


@pytest.fixture(scope="module")
def installed() -> dict:
    path = cache_dir() / "local-llm.json"
    LocalModel.installed(path)  # fails with the install command when it is missing
    return json.loads(path.read_text())


def _crashing_install(tmp_path: Path, installed: dict, cpus: dict | None) -> Path:
    wrapper = tmp_path / "llama-server"
    wrapper.write_text(WRAPPER.format(real=installed["server"]))
    wrapper.chmod(0o755)
    # without the draft model: the speculative-decoding measure is not what this tests
    # (tests/integration/test_local_llm_draft.py), and it would add minutes under load
    data = {k: v for k, v in installed.items() if k != "cpus" and not k.startswith("draft_")}
    data.update(server=str(wrapper), server_sha256="wrapper")
    if cpus is not None:
        data["cpus"] = cpus
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(data))
    return path


def test_the_install_probe_finds_and_records_the_safe_flags(tmp_path, installed):
    manifest = tmp_path / "local-llm.json"
    res = subprocess.run([sys.executable, "-m", "email_rag.llm.local_server", "probe", "--candidate",
                          str(_crashing_install(tmp_path, installed, None)), "--manifest",
                          str(manifest)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "default flags FAILED" in res.stdout and "exited with -11" in res.stdout
    assert "--no-repack: loaded the model and answered" in res.stdout
    record = json.loads(manifest.read_text())["cpus"][cpu_fingerprint()]
    assert record["args"] == ["--no-repack"] and record["answer_s"] > 0


def test_the_pipeline_start_falls_back_to_the_safe_flags_and_the_real_model_answers(
        tmp_path, installed):
    manifest = _crashing_install(tmp_path, installed, cpus={})
    with LocalLLMServer(LocalModel.installed(manifest), log=tmp_path / "server.log") as srv:
        assert srv.args == ("--no-repack",)
        answer = srv.ask_json()
    assert answer["language"] in {"de", "en", "fr", "es"} and isinstance(answer["ok"], bool)
    assert LocalModel.installed(manifest).args == ("--no-repack",)


def test_install_check_loads_the_model_and_answers():
    """`install.sh --check` is not `--version`: it starts the server, loads the model and
    answers one request with the flags it records for this CPU."""
    res = subprocess.run(["bash", str(ROOT / "scripts/local-llm/install.sh"), "--check"],
                         capture_output=True, text=True, timeout=900,
                         env={**__import__("os").environ, "PYTHON": sys.executable})
    print(res.stdout, res.stderr)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "probing llama-server" in res.stdout and "loaded the model and answered" in res.stdout
    assert "recorded for this CPU" in res.stdout
