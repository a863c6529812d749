"""The runtime probe and the server start, with stand-in llama-server processes: the flags that
load the model are found, recorded per CPU and used; a server that dies says what to do."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from email_rag.core.errors import LocalLLMStartError
from email_rag.llm.local_server import LocalModel

ROOT = Path(__file__).resolve().parents[2]


def test_install_check_refuses_an_empty_cache(tmp_path):
    """`install.sh --check` on an empty cache: exit 1 and no manifest written."""
    env = {**os.environ, "EMAIL_RAG_CACHE_DIR": str(tmp_path)}
    res = subprocess.run(["bash", str(ROOT / "scripts/local-llm/install.sh"), "--check"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 1 and "run bash scripts/local-llm/install.sh" in res.stderr
    assert not (tmp_path / "local-llm.json").exists()


# A stand-in for llama-server (pure logic of the flag choice; the real binary is driven by
# tests/integration/test_local_llm_runtime.py): it dies with SIGSEGV "while loading the
# model" unless its mode allows the flags it was given, else answers /health and one chat
# completion with the probe's JSON.
FAKE_SERVER = '''#!{python}
import http.server, json, os, signal, sys
args = sys.argv[1:]
mode = {mode!r}
if mode == "always-crash" or (mode == "crash-without-safe" and "--no-repack" not in args) \
        or (mode == "crash-with-draft" and "--spec-draft-model" in args):
    print("load_model: loading model", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
port = int(args[args.index("--port") + 1])
answer = {{"language": "de", "ok": True}} if mode != "bad-json" else {{"weather": "sunny"}}

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{{"status": "ok"}}')

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({{"choices": [{{"message": {{"content": json.dumps(answer)}}}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


def _fake_install(tmp_path: Path, mode: str, cpus: dict | None = None,
                  draft: bool = False) -> Path:
    """A candidate manifest (what install.sh assembles) naming a fake server in ``mode``."""
    import sys

    server = tmp_path / f"llama-server-{mode}"
    server.write_text(FAKE_SERVER.format(python=sys.executable, mode=mode))
    server.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"gguf")
    data = {"server": str(server), "server_sha256": mode, "model": str(model), "model_id": "m",
            "model_sha256": "abc", "model_bytes": 4, "runtime": "fake"}
    if draft:
        (tmp_path / "draft.gguf").write_bytes(b"dr")
        data.update(draft_model=str(tmp_path / "draft.gguf"), draft_model_sha256="d",
                    draft_model_bytes=2)
    if cpus is not None:
        data["cpus"] = cpus
    path = tmp_path / f"candidate-{mode}.json"
    path.write_text(json.dumps(data))
    return path


def _probe(tmp_path: Path, candidate: Path, *extra: str) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run([sys.executable, "-m", "email_rag.llm.local_server", "probe", "--candidate",
                           str(candidate), "--manifest", str(tmp_path / "local-llm.json"),
                           *extra], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_install_probe_records_the_safe_flags_when_the_default_crashes_on_load(tmp_path):
    """GIVEN a runtime that dies with SIGSEGV while loading unless --no-repack WHEN the
    install probes it THEN it is ready with --no-repack recorded for this CPU, and the
    crash of the default flags is in the record and the output."""
    from email_rag.llm.local_server import cpu_fingerprint

    res = _probe(tmp_path, _fake_install(tmp_path, "crash-without-safe"))
    assert res.returncode == 0, res.stdout + res.stderr
    record = json.loads((tmp_path / "local-llm.json").read_text())["cpus"][cpu_fingerprint()]
    assert record["args"] == ["--no-repack"]
    assert "exited with -11" in record["failed_before"][0]
    assert "default flags FAILED" in res.stdout and "recorded for this CPU" in res.stdout
    local = LocalModel.installed(tmp_path / "local-llm.json")
    assert local.proven and local.args == ("--no-repack",)


def test_a_runtime_that_answers_with_default_flags_records_none(tmp_path):
    res = _probe(tmp_path, _fake_install(tmp_path, "ok"))
    assert res.returncode == 0, res.stdout + res.stderr
    local = LocalModel.installed(tmp_path / "local-llm.json")
    assert local.proven and local.args == ()


def test_a_runtime_that_never_answers_is_not_ready(tmp_path):
    """Every flag set crashes, or the answer ignores the schema: exit 1, no manifest, and
    the output says how to rebuild for a basic instruction set."""
    for mode in ("always-crash", "bad-json"):
        res = _probe(tmp_path, _fake_install(tmp_path, mode))
        assert res.returncode == 1, res.stdout
        assert not (tmp_path / "local-llm.json").exists()
        assert "EMAIL_RAG_LLAMA_ISA=x86-64" in res.stdout
    assert "does not follow the schema" in res.stdout


def test_a_proven_cpu_is_not_probed_again_and_a_new_runtime_is(tmp_path):
    first = _probe(tmp_path, _fake_install(tmp_path, "crash-without-safe"))
    assert first.returncode == 0
    again = _probe(tmp_path, _fake_install(tmp_path, "crash-without-safe"))
    assert "not probed again" in again.stdout and "probing" not in again.stdout
    forced = _probe(tmp_path, _fake_install(tmp_path, "crash-without-safe"), "--force")
    assert "probing llama-server" in forced.stdout and forced.returncode == 0
    rebuilt = _probe(tmp_path, _fake_install(tmp_path, "ok"))  # another server binary
    assert "probing llama-server" in rebuilt.stdout
    assert LocalModel.installed(tmp_path / "local-llm.json").args == ()


def test_every_start_uses_the_flags_recorded_for_this_cpu(tmp_path):
    from email_rag.llm.local_server import LocalLLMServer, cpu_fingerprint

    recorded = _fake_install(tmp_path, "ok", cpus={cpu_fingerprint(): {"args": ["--no-repack"]},
                                                    "other-cpu": {"args": ["--weird"]}})
    srv = LocalLLMServer(LocalModel.installed(recorded), log=tmp_path / "log")
    assert srv.command()[-1] == "--no-repack" and "--weird" not in srv.command()
    other = _fake_install(tmp_path, "ok", cpus={"other-cpu": {"args": ["--no-repack"]}})
    assert "--no-repack" not in LocalLLMServer(LocalModel.installed(other),
                                               log=tmp_path / "log").command()


def test_a_server_that_dies_while_starting_is_started_once_more_with_the_safe_flags(tmp_path):
    """GIVEN an install not proven on this CPU (a new CPU) whose server crashes on load
    without --no-repack WHEN the pipeline starts it THEN it starts with --no-repack, answers,
    and the flags are recorded for the next start."""
    from email_rag.llm.local_server import LocalLLMServer

    manifest = _fake_install(tmp_path, "crash-without-safe", cpus={})
    local = LocalModel.installed(manifest)
    assert not local.proven
    with LocalLLMServer(local, log=tmp_path / "log", start_timeout=60) as srv:
        assert srv.args == ("--no-repack",)
        assert srv.ask_json(timeout=30) == {"language": "de", "ok": True}
    again = LocalModel.installed(manifest)
    assert again.proven and again.args == ("--no-repack",)


def test_a_server_that_dies_with_the_safe_flags_too_says_what_to_do(tmp_path):
    from email_rag.llm.local_server import LocalLLMServer

    local = LocalModel.installed(_fake_install(tmp_path, "always-crash", cpus={}))
    with pytest.raises(LocalLLMStartError) as err:
        LocalLLMServer(local, log=tmp_path / "log", start_timeout=60).start()
    assert "exited with -11" in err.value.message and "--no-repack" in err.value.message
    assert "install.sh --check" in err.value.message and "EMAIL_RAG_LLAMA_ISA" in err.value.message


def test_the_server_dies_with_the_process_that_started_it(tmp_path):
    """A demo or bench killed by a signal runs no cleanup: its model server must not live on."""
    import signal
    import sys
    import time

    started = tmp_path / "pid"
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from email_rag.llm.local_server import LocalLLMServer, LocalModel\n"
        f"srv = LocalLLMServer(LocalModel.installed(Path({str(_fake_install(tmp_path, 'ok'))!r})),"
        f" log=Path({str(tmp_path / 'log')!r}), start_timeout=60).start()\n"
        f"Path({str(started)!r}).write_text(str(srv.proc.pid))\n"
        "import time; time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        pid = int(started.read_text())
        os.kill(pid, 0)  # the server runs
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the model server outlived the process that started it")


def test_the_probe_records_the_draft_model_off_when_its_server_does_not_start(tmp_path):
    """GIVEN a server that dies when given the draft model (a build without the flag, say)
    WHEN the install probes THEN the runtime is still proven, and the draft model is
    recorded off for this CPU with the reason."""
    from email_rag.llm.local_server import cpu_fingerprint

    res = _probe(tmp_path, _fake_install(tmp_path, "crash-with-draft", draft=True))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "draft model off on this CPU" in res.stdout
    record = json.loads((tmp_path / "local-llm.json").read_text())["cpus"][cpu_fingerprint()]
    assert record["speculative"]["on"] is False
    assert "exited with -11" in record["speculative"]["why"]
    assert LocalModel.installed(tmp_path / "local-llm.json").speculative is False


def test_a_server_that_dies_with_the_draft_model_is_started_without_it_and_that_recorded(
        tmp_path):
    """GIVEN the draft model recorded on for this CPU and a server that now dies with it
    WHEN the pipeline starts it THEN it runs without the draft model (and the safe flags),
    answers, and the draft model is recorded off for the next start."""
    from email_rag.llm.local_server import LocalLLMServer, cpu_fingerprint

    manifest = _fake_install(tmp_path, "crash-with-draft", draft=True, cpus={
        cpu_fingerprint(): {"args": [], "speculative": {"on": True, "why": "faster"}}})
    local = LocalModel.installed(manifest)
    assert local.speculative is True
    with LocalLLMServer(local, log=tmp_path / "log", start_timeout=60) as srv:
        assert srv.speculative is False and "--spec-draft-model" not in srv.command()
        assert srv.ask_json(timeout=30) == {"language": "de", "ok": True}
    again = LocalModel.installed(manifest)
    assert again.speculative is False and again.draft is not None
    why = json.loads(manifest.read_text())["cpus"][cpu_fingerprint()]["speculative"]["why"]
    assert "died while starting with the draft model" in why
