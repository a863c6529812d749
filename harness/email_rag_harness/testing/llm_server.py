"""SCRIPTED OpenAI-compatible HTTP server: a TEST DOUBLE, not a language model.

It answers from deterministic rules (``email_rag_harness.testing.llm_rules``) and
injects faults from a plan, for tests, the chaos harness and offline
development. Every answer says what it is: ``"model": "scripted-test-double"``
and the header ``X-Scripted-LLM``.

Run it::

    python -m email_rag_harness.testing.llm_server --host 127.0.0.1 --port 0 \
        [--plan FILE] [--latency-ms N] [--api-key KEY] [--models a,b] [--strict-models]

The first stdout line is one JSON object:
``{"url": "http://127.0.0.1:PORT/v1", "port": PORT, "scripted": true}``.
In-process: ``with ScriptedLLMServer(plan=...) as srv: srv.url ...`` (or
``.start()`` / ``.stop()``).

Endpoints: ``GET /v1/models``; ``POST /v1/chat/completions`` (honours
``response_format`` json_schema / json_object (+schema) / none, and
``max_tokens``: a longer answer is cut with ``finish_reason: "length"``);
``POST /v1/embeddings`` (hashing vectors of ``dimensions``, float or base64).
Control: ``POST /_control/plan`` (body: a plan; replaces the plan and its
counters), ``GET /_control/stats``, ``GET /_control/requests`` (recent request
bodies), ``POST /_control/reset`` (plan, stats and requests cleared).

A chat call is of kind ``classify`` when the system prompt contains
``TASK: classify``, the json_schema is named ``email_classification`` or the
schema has a ``category`` property; otherwise ``draft`` (an adaptation, whose schema has a
``lines`` property, gets the ``<lines>`` it was given back unchanged: ``llm_rules.adapt``). The mail is read from
the ``<mail-TAG>`` block of the user message (``email_rag.llm.prompts.mail_block``),
else the whole last user message.

Fault plan (JSON; this format is stable, the chaos harness depends on it)::

    {"seed": 0,              # seed of the RNG for "probability" (default 0)
     "latency_ms": 0,        # optional: latency added to every answer
     "rules": [              # the first rule that fires decides the call
       {"fault": "timeout_before",
        "kind": "classify",  # classify | draft | chat (both) | embed | any (default)
        "calls": [1, 3],     # fire on these 1-based numbers of the calls that pass
                             #   this rule's filters since the plan was set (omit: all)
        "probability": 0.5,  # fire with this probability (seeded; omit: always)
        "match": "Rechnung", # only calls whose request body contains this text
        "times": 2,          # fire at most this often (omit: unlimited)
        "delay": 30,         # timeout_before/after: stall seconds (default 60); slow: added s
        "status": 429,       # status: the HTTP status to answer
        "retry_after": 0.2,  # status: Retry-After header (seconds or an HTTP date string)
        "content": "..."}]}  # invalid_json / schema_violation: the exact message content

Faults: ``timeout_before`` (stall ``delay`` s without doing the work, then
close without an answer), ``timeout_after`` (do the work, count it as
produced, then stall and close without an answer), ``invalid_json`` (200 with
content that is not JSON), ``schema_violation`` (200 with JSON that breaks the
schema), ``status`` (HTTP ``status`` with an OpenAI-style error body;
shorthand ``http_429``, ``http_500`` ...), ``drop`` (close the connection
without any response), ``slow`` (answer correctly after ``delay`` s),
``malformed`` (200 whose body is not JSON, like a proxy's HTML page),
``length`` (200 with the answer cut after ``tokens`` tokens, default 12, and
``finish_reason: "length"``, as a server does at max_tokens), ``answer`` (200 with
exactly ``content`` as the model's answer, e.g. a draft that echoes the mail),
``context_overflow`` (400 with llama.cpp's "exceeds the available context size").

Stats (``GET /_control/stats``)::

    {"calls": {kind: n}, "produced": {kind: n}, "answered": {kind: n},
     "faults": {fault: n}, "faults_by_kind": {kind: {fault: n}},
     "rules": [{"index": i, "seen": n, "fired": n}], "log": [last 500 calls]}

``calls`` counts requests seen, ``produced`` answers computed (including
``timeout_after``), ``answered`` 200 answers sent (counted just before the write,
so a client that got its answer sees it counted). ``in_flight`` / ``in_flight_peak``:
chat and embedding calls being answered now / most at once since the last reset
(the benchmarks read it to show that calls of different mails overlap).

In-process, ``inflight()`` lists the calls being served right now (kind,
client address, seconds since they arrived): the chaos harness uses it to
SIGKILL the worker process whose LLM call is in flight (mid-step).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from email_rag.classification.values import SCHEMA_NAME
from email_rag.llm.prompts import parse_mail_block

from . import llm_rules

MODEL_LABEL = "scripted-test-double"
HEADER = ("X-Scripted-LLM", "email-rag scripted test double (deterministic rules, fault plan)")
FAULTS = ("timeout_before", "timeout_after", "invalid_json", "schema_violation", "status",
          "drop", "slow", "malformed", "length", "answer", "context_overflow")
OVERFLOW_MESSAGE = ("the request exceeds the available context size, try increasing it "
                    "(scripted fault)")
KINDS = ("classify", "draft", "chat", "embed", "any")
DEFAULT_STALL = 60.0
INVALID_JSON = '{"category": "billing", "priority": "high", "language": '
SCHEMA_VIOLATION = json.dumps({"category": "approved", "priority": "whenever", "language": "xx",
                               "needs_reply": "maybe", "status": "approved"})
_HTTP_FAULT = re.compile(r"^http_(\d{3})$")


def normalise_plan(plan: dict[str, Any] | None) -> dict[str, Any]:
    """A checked copy of ``plan`` (ValueError names what is wrong)."""
    plan = dict(plan or {})
    rules = []
    for i, rule in enumerate(plan.get("rules", [])):
        rule = dict(rule)
        m = _HTTP_FAULT.match(str(rule.get("fault", "")))
        if m:
            rule["fault"], rule["status"] = "status", int(m.group(1))
        if rule.get("fault") not in FAULTS:
            raise ValueError(f"rule {i}: fault must be one of {FAULTS} or http_NNN, "
                             f"not {rule.get('fault')!r}")
        rule.setdefault("kind", "any")
        if rule["kind"] not in KINDS:
            raise ValueError(f"rule {i}: kind must be one of {KINDS}")
        if rule["fault"] == "status" and not isinstance(rule.get("status"), int):
            raise ValueError(f"rule {i}: fault 'status' needs an integer 'status'")
        if "calls" in rule and not all(isinstance(n, int) for n in rule["calls"]):
            raise ValueError(f"rule {i}: calls must be a list of integers")
        rules.append(rule)
    plan["rules"] = rules
    plan.setdefault("seed", 0)
    return plan


class _Plan:
    def __init__(self, plan: dict[str, Any] | None) -> None:
        self.plan = normalise_plan(plan)
        self.rng = random.Random(self.plan["seed"])
        self.seen = [0] * len(self.plan["rules"])
        self.fired = [0] * len(self.plan["rules"])

    def pick(self, kind: str, body_text: str) -> dict[str, Any] | None:
        chosen = None
        for i, rule in enumerate(self.plan["rules"]):
            k = rule["kind"]
            if not (k == "any" or k == kind or (k == "chat" and kind in ("classify", "draft"))):
                continue
            if rule.get("match") and rule["match"] not in body_text:
                continue
            self.seen[i] += 1
            if chosen is not None:
                continue
            if "times" in rule and self.fired[i] >= rule["times"]:
                continue
            if "calls" in rule and self.seen[i] not in rule["calls"]:
                continue
            if "probability" in rule and self.rng.random() >= float(rule["probability"]):
                continue
            self.fired[i] += 1
            chosen = rule
        return chosen


class _QuietHTTPServer(ThreadingHTTPServer):
    """A client that goes away mid-request (a SIGKILLed worker, a timeout) is normal here:
    counted by the stats, not printed as a traceback on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedLLMServer:
    """The server, in-process (a thread) or as a process (``main``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 plan: dict[str, Any] | None = None, latency_ms: float = 0,
                 api_key: str | None = None, models: tuple[str, ...] = ("scripted",),
                 strict_models: bool = False, embedding_dim: int = 384) -> None:
        self.latency_ms = latency_ms
        self.api_key = api_key
        self.models = tuple(models)
        self.strict_models = strict_models
        self.embedding_dim = embedding_dim
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._plan = _Plan(plan)
        self._inflight: dict[int, dict[str, Any]] = {}
        self._inflight_seq = 0
        self._holds: list[dict[str, Any]] = []  # see hold_next
        self._reset_stats()
        self.httpd = _QuietHTTPServer((host, port), _handler_for(self))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self._thread: threading.Thread | None = None

    # --- lifecycle ---
    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> ScriptedLLMServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                        name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes stalled handlers: they close without answering
        if self._thread is not None:  # shutdown() waits for serve_forever: only if running
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- control ---
    def set_plan(self, plan: dict[str, Any] | None) -> None:
        new = _Plan(plan)
        with self._lock:
            self._plan = new

    def reset(self) -> None:
        with self._lock:
            self._plan = _Plan(None)
            self._reset_stats()

    def _reset_stats(self) -> None:
        self.calls: Counter[str] = Counter()
        self.produced: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.faults_by_kind: dict[str, Counter[str]] = {}
        self.log: deque[dict[str, Any]] = deque(maxlen=500)
        self.requests: deque[dict[str, Any]] = deque(maxlen=200)
        self.in_flight_peak = 0  # most calls at once since the last reset: do calls overlap?

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": dict(self.calls), "produced": dict(self.produced),
                "answered": dict(self.answered), "faults": dict(self.faults),
                "faults_by_kind": {k: dict(v) for k, v in self.faults_by_kind.items()},
                "rules": [{"index": i, "seen": s, "fired": f} for i, (s, f) in
                          enumerate(zip(self._plan.seen, self._plan.fired, strict=True))],
                "log": list(self.log),
                "in_flight": len(self._inflight), "in_flight_peak": self.in_flight_peak,
            }

    def inflight(self) -> list[dict[str, Any]]:
        """Calls being served now: ``{"kind", "client": (host, port), "age_s"}``."""
        now = time.monotonic()
        with self._lock:
            return [{"kind": c["kind"], "client": c["client"], "age_s": now - c["since"]}
                    for c in self._inflight.values()]

    def hold_next(self, kind: str, seconds: float) -> object:
        """The next call of ``kind`` (classify, draft, embed; chat = classify or draft) not
        held yet is held unanswered for up to ``seconds`` or until ``release()``: a fault can
        act while a call is surely in flight (an instant scripted model is hardly ever caught
        in one). Holds of overlapping faults are separate; returns this one's handle."""
        hold = {"kind": kind, "seconds": seconds, "claimed": False,
                "release": threading.Event()}
        with self._lock:
            self._holds.append(hold)
        return hold

    def release(self, hold: object | None = None) -> None:
        """Answer the call ``hold`` holds (every held call when None)."""
        with self._lock:
            gone = [h for h in self._holds if hold is None or h is hold]
            self._holds = [h for h in self._holds if h not in gone]
        for h in gone:
            h["release"].set()

    def _wait_if_held(self, kind: str) -> None:
        with self._lock:
            hold = next((h for h in self._holds if not h["claimed"] and (
                h["kind"] == kind or h["kind"] == "chat" and kind in ("classify", "draft"))),
                None)
            if hold is None:
                return
            hold["claimed"] = True
        hold["release"].wait(hold["seconds"])

    def _enter(self, kind: str, client: Any) -> int:
        with self._lock:
            self._inflight_seq += 1
            self._inflight[self._inflight_seq] = {"kind": kind, "client": tuple(client),
                                                  "since": time.monotonic()}
            self.in_flight_peak = max(self.in_flight_peak, len(self._inflight))
            return self._inflight_seq

    def _leave(self, token: int) -> None:
        with self._lock:
            self._inflight.pop(token, None)

    def wait(self, seconds: float) -> None:
        """Sleep that ends early when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)

    # --- bookkeeping used by the handler ---
    def begin(self, kind: str, path: str, body: dict[str, Any], raw: str) -> dict | None:
        with self._lock:
            self.calls[kind] += 1
            n = sum(self.calls.values())
            self.requests.append({"n": n, "kind": kind, "path": path, "body": body})
            rule = self._plan.pick(kind, raw) if kind != "models" else None
            fault = rule["fault"] if rule else None
            if fault:
                self.faults[fault] += 1
                self.faults_by_kind.setdefault(kind, Counter())[fault] += 1
            self.log.append({"n": n, "kind": kind, "fault": fault,
                             "status": rule.get("status") if rule else None, "at": time.time()})
            latency = float(self._plan.plan.get("latency_ms", self.latency_ms))
        return {**rule, "_latency": latency} if rule else {"_latency": latency}

    def count(self, counter: str, kind: str) -> None:
        with self._lock:
            getattr(self, counter)[kind] += 1


def _error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "invalid_request_error", 404:
            "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _words(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _chat_kind(body: dict[str, Any]) -> str:
    system = " ".join(str(m.get("content", "")) for m in body.get("messages", [])
                      if m.get("role") == "system")
    rf = body.get("response_format") or {}
    schema = rf.get("schema") or (rf.get("json_schema") or {}).get("schema") or {}
    if ("TASK: classify" in system or (rf.get("json_schema") or {}).get("name") == SCHEMA_NAME
            or "category" in schema.get("properties", {})):
        return "classify"
    return "draft"


def _mail_of(body: dict[str, Any]) -> tuple[str, str]:
    users = [str(m.get("content", "")) for m in body.get("messages", [])
             if m.get("role") == "user"]
    last = users[-1] if users else ""
    block = parse_mail_block(last)
    if block:
        return block[1], block[2]
    return "", last


def _handler_for(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms stall
        server_version = "email-rag-scripted-llm"
        _flight: int | None = None  # the in-flight token of the call being served

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        # --- plumbing ---
        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self._land()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header(*HEADER)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            try:
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timeout, killed worker)

        def _land(self) -> None:
            """The call leaves the in-flight list before its answer is written: a client
            holding its answer never sees its own call still in flight."""
            token, self._flight = self._flight, None
            if token is not None:
                server._leave(token)

        def _hang_up(self) -> None:
            self.close_connection = True

        def _read(self) -> tuple[dict[str, Any] | None, str]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            try:
                body = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                return None, raw
            return (body if isinstance(body, dict) else None), raw

        def _authorised(self) -> bool:
            if not server.api_key:
                return True
            if self.headers.get("Authorization", "") == f"Bearer {server.api_key}":
                return True
            self._send(401, _error_body(401, "Incorrect API key provided (scripted server).",
                                        "invalid_api_key"))
            return False

        # --- routes ---
        def do_GET(self) -> None:  # noqa: N802
            path = urlparse(self.path).path.rstrip("/")
            if path == "/_control/stats":
                return self._send(200, server.stats())
            if path == "/_control/requests":
                with server._lock:
                    return self._send(200, list(server.requests))
            if path.endswith("/models"):
                if not self._authorised():
                    return None
                server.begin("models", path, {}, "")
                server.count("answered", "models")
                return self._send(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": MODEL_LABEL}
                    for m in server.models]})
            return self._send(404, _error_body(404, f"no route {path}"))

        def do_POST(self) -> None:  # noqa: N802
            path = urlparse(self.path).path.rstrip("/")
            body, raw = self._read()
            if path == "/_control/plan":
                try:
                    server.set_plan(body)
                except (ValueError, TypeError, AttributeError) as e:
                    return self._send(400, {"ok": False, "error": str(e)})
                return self._send(200, {"ok": True, "rules": len((body or {}).get("rules", []))})
            if path == "/_control/reset":
                server.reset()
                return self._send(200, {"ok": True})
            if body is None:
                return self._send(400, _error_body(400, "request body is not a JSON object"))
            if path.endswith("/chat/completions") or path.endswith("/embeddings"):
                chat = path.endswith("/chat/completions")
                kind = _chat_kind(body) if chat else "embed"
                self._flight = server._enter(kind, self.client_address)
                try:
                    server._wait_if_held(kind)
                    return self._chat(path, body, raw) if chat else self._embed(path, body, raw)
                finally:
                    self._land()
            return self._send(404, _error_body(404, f"no route {path}"))

        def _model_ok(self, body: dict[str, Any]) -> bool:
            model = str(body.get("model", ""))
            if server.strict_models and model not in server.models:
                self._send(404, _error_body(404, f"The model `{model}` does not exist.",
                                            "model_not_found"))
                return False
            return True

        def _fault_first(self, rule: dict[str, Any], kind: str) -> bool:
            """Faults that act before the work. True when the call is finished."""
            server.wait(rule["_latency"] / 1000.0)
            fault = rule.get("fault")
            if fault == "slow":
                server.wait(float(rule.get("delay", 1.0)))
            elif fault == "timeout_before":
                server.wait(float(rule.get("delay", DEFAULT_STALL)))
                self._hang_up()
                return True
            elif fault == "drop":
                self._hang_up()
                return True
            elif fault == "malformed":
                data = b"<html><body>502 proxy says hello</body></html>"
                self._land()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header(*HEADER)
                self.end_headers()
                self.wfile.write(data)
                return True
            elif fault == "context_overflow":
                self._send(400, {"error": {"code": 400, "message": OVERFLOW_MESSAGE,
                                           "type": "exceed_context_size_error"}})
                return True
            elif fault == "status":
                status = int(rule["status"])
                headers = {}
                if rule.get("retry_after") is not None:
                    headers["Retry-After"] = str(rule["retry_after"])
                self._send(status, _error_body(status, f"scripted fault: HTTP {status}"),
                           headers)
                return True
            return False

        def _finish(self, rule: dict[str, Any], kind: str, payload: dict[str, Any]) -> None:
            server.count("produced", kind)
            if rule.get("fault") == "timeout_after":
                server.wait(float(rule.get("delay", DEFAULT_STALL)))
                self._hang_up()
                return
            server.count("answered", kind)  # before writing: a client never sees stale stats
            self._send(200, payload)

        def _chat(self, path: str, body: dict[str, Any], raw: str) -> None:
            kind = _chat_kind(body)
            rule = server.begin(kind, path, body, raw)
            if not self._authorised() or not self._model_ok(body) or self._fault_first(rule, kind):
                return
            subject, text = _mail_of(body)
            rf = body.get("response_format") or {}
            schema = rf.get("schema") or (rf.get("json_schema") or {}).get("schema")
            if kind == "classify":
                facts = llm_rules.classify(subject, text)
                if schema:
                    facts = llm_rules.fill_schema(schema, facts)
                content = json.dumps(facts, ensure_ascii=False)
                if rf.get("type") not in ("json_schema", "json_object"):
                    content = f"```json\n{content}\n```"  # like a chatty model without JSON mode
            elif schema and "lines" in (schema.get("properties") or {}):
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                content = json.dumps({"lines": llm_rules.adapt(prompt)}, ensure_ascii=False)
            else:
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                reply = llm_rules.draft(subject, text, prompt)
                content = reply
                if schema:
                    facts = {"text": reply, "body": reply, "reply": reply, "draft": reply,
                             "subject": f"Re: {subject}",
                             "language": llm_rules.detect_language(f"{subject} {text}").value}
                    content = json.dumps(llm_rules.fill_schema(schema, facts), ensure_ascii=False)
            fault = rule.get("fault")
            if fault == "invalid_json":
                content = rule.get("content", INVALID_JSON)
            elif fault == "schema_violation":
                content = rule.get("content", SCHEMA_VIOLATION)
            elif fault == "answer":
                content = str(rule.get("content", ""))
            finish = "stop"
            if fault == "length":
                content, finish = content[: int(rule.get("tokens", 12)) * 4], "length"
            max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
            if isinstance(max_tokens, int) and _words(content) > max_tokens:
                content, finish = content[: max_tokens * 4], "length"
            prompt_tokens = sum(_words(str(m.get("content", ""))) for m in body.get("messages", []))
            n = sum(server.calls.values())
            self._finish(rule, kind, {
                "id": f"chatcmpl-scripted-{n}", "object": "chat.completion",
                "created": int(time.time()), "model": MODEL_LABEL,
                "system_fingerprint": "email-rag-scripted",
                "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": _words(content),
                          "total_tokens": prompt_tokens + _words(content)},
            })

        def _embed(self, path: str, body: dict[str, Any], raw: str) -> None:
            rule = server.begin("embed", path, body, raw)
            if (not self._authorised() or not self._model_ok(body)
                    or self._fault_first(rule, "embed")):
                return
            inputs = body.get("input", "")
            inputs = inputs if isinstance(inputs, list) else [inputs]
            dim = int(body.get("dimensions") or server.embedding_dim)
            as_b64 = body.get("encoding_format") == "base64"
            data = []
            for i, item in enumerate(inputs):
                vec = llm_rules.embedding(item if isinstance(item, str) else str(item), dim)
                data.append({"object": "embedding", "index": i,
                             "embedding": llm_rules.encode_base64(vec) if as_b64 else vec})
            if rule.get("fault") in ("invalid_json", "schema_violation"):
                data = [{"object": "embedding", "index": 0, "embedding": "not a vector"}]
            tokens = sum(_words(str(x)) for x in inputs)
            self._finish(rule, "embed", {"object": "list", "data": data, "model": MODEL_LABEL,
                                         "usage": {"prompt_tokens": tokens,
                                                   "total_tokens": tokens}})

    return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m email_rag_harness.testing.llm_server",
                                description="Scripted OpenAI-compatible server (a test double).")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = a free port (printed)")
    p.add_argument("--plan", help="fault plan JSON file (see the module docstring)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="latency added to every answer")
    p.add_argument("--api-key", default=None, help="require this bearer key (else 401)")
    p.add_argument("--models", default="scripted", help="comma-separated model ids listed")
    p.add_argument("--strict-models", action="store_true",
                   help="answer 404 for a model that is not listed")
    p.add_argument("--embedding-dim", type=int, default=384)
    args = p.parse_args(argv)
    plan = None
    if args.plan:
        with open(args.plan, encoding="utf-8") as f:
            plan = json.load(f)
    srv = ScriptedLLMServer(args.host, args.port, plan, args.latency_ms, args.api_key,
                            tuple(m for m in args.models.split(",") if m), args.strict_models,
                            args.embedding_dim)
    print(json.dumps({"url": srv.url, "port": srv.port, "scripted": True,
                      "model": MODEL_LABEL}), flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv._stopping.set()
        srv.httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
