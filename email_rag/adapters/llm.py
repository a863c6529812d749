"""The LLM adapter: the only module that imports ``openai``.

Any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp, the scripted
test server). Chat calls, the hot path of every mail, are one plain HTTP POST over one
kept-alive connection (``http.client``, ``_Connection``): the official client's request
building and response validation cost several milliseconds per call, ``httpx`` 0.8 ms of
CPU more than ``http.client``, more than the exchange with a fast endpoint. A connection the
server closed while idle is replaced before the request is sent (never sent twice); the
environment's proxy settings (``HTTP(S)_PROXY``, ``NO_PROXY``) are followed. Embeddings and
the model list go through the official client.
Neither retries on its own (``max_retries=0``): retries are decisions of
``email_rag.llm.policy`` and of the job retry cycle.

Error translation (what the caller sees):

| client error (socket / openai)       | raised                    | meaning                       |
|--------------------------------------|---------------------------|-------------------------------|
| timeout (APITimeoutError)            | LLMTimeoutError           | no answer within llm_timeout  |
| 429 RateLimitError                   | LLMRateLimitedError       | retry_after from Retry-After  |
|                                      |                           | (seconds, ms or HTTP date)    |
| 5xx, 408, 409, connection error,     | LLMError (transient)      | job retry cycle               |
| malformed response body              |                           |                               |
| 400/413 saying the prompt exceeds    | LLMContextOverflowError   | the prompt does not fit the   |
| the context (llama.cpp, OpenAI, vLLM)|                           | model: send less context      |
| 400/401/403/404/422 (and other 4xx)  | LLMRequestRejectedError   | permanent; message names the  |
|                                      |                           | likely cause (key/model/URL)  |

Call slots: with ``slots`` set (``email_rag.llm.slots.EndpointSlots``, shared by
all workers through Redis), every chat call first takes one of the endpoint's
slots; waiting for a slot is not part of the call's timeout.

Prompt cache (llama.cpp's server only, recognised by its ``/props``; other endpoints get
the plain OpenAI body): every chat call asks ``cache_prompt`` (the slot keeps the prompt's
tokens, and the next prompt with the same prefix reads only what differs) and, while the
endpoint runs one call at a time (a call limit of 1, or none set in this process), pins
each kind of call to its own server slot (``id_slot``: JSON answers such as the
classification in slot 0, text answers such as drafts in slot 1 when the server has two),
so consecutive mails find their kind's prefix still cached instead of the other kind's.
With several calls at once the server picks the slot (by prompt similarity): a pinned slot
would make calls wait for each other.

Secrets never appear in messages: texts from the endpoint are redacted.
"""

from __future__ import annotations

import http.client
import json
import re
import select
import socket
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import openai

from ..core.errors import (
    ConfigError,
    LLMContextOverflowError,
    LLMError,
    LLMRateLimitedError,
    LLMRequestRejectedError,
    LLMTimeoutError,
)
from ..core.jsonvalue import JsonObject, JsonValue
from ..core.ports import LLMResult
from ..core.redact import redact_text
from ..core.retry import parse_retry_after
from .tls import client_context

RESPONSE_FORMATS = ("json_schema", "json_object", "none")
# llama.cpp server slot per kind of call (modulo the server's slots): each keeps its prefix
SLOT_OF_KIND = {"json": 0, "text": 1}


# what servers say when the prompt is larger than the context window
_OVERFLOW = re.compile(r"context (length|size|window)|exceeds? .*context|too many tokens|"
                       r"maximum context|n_ctx|prompt is too long|input is too long", re.I)


def _server_text(e: openai.APIStatusError) -> str:
    return _body_text(e.body, e.message)


def _body_text(body: Any, fallback: str) -> str:
    """What an error response says (its ``error.message`` when it has one), redacted."""
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        text = str(msg if msg is not None else body)
    else:
        text = str(body if body is not None else fallback)
    return redact_text(text)[:300]


JsonSchema = Mapping[str, JsonValue]  # a JSON schema, as the endpoint receives it


@dataclass(frozen=True)
class ResponseFormat:
    """How a JSON answer is asked for (``settings.llm_response_format``).

    ``json_object`` carries the schema too (llama-cpp-python's server turns it into a
    grammar; it refuses the ``json_schema`` type with HTTP 500).
    """

    type: str  # json_schema | json_object
    name: str
    schema: JsonSchema

    def body(self) -> JsonObject:
        if self.type == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": self.name, "schema": self.schema, "strict": True}}
        return {"type": "json_object", "schema": self.schema}


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request (``body()``: what the OpenAI client sends)."""

    model: str
    messages: list[dict[str, str]]  # role, content: the OpenAI message shape
    temperature: float
    max_tokens: int | None = None
    response_format: ResponseFormat | None = None
    cache_prompt: bool = False  # llama.cpp: keep and reuse the slot's cached prompt prefix
    id_slot: int | None = None  # llama.cpp: the server slot this call runs in

    @property
    def mode(self) -> str:
        return self.response_format.type if self.response_format else "none"

    def body(self) -> JsonObject:
        body: JsonObject = {"model": self.model, "messages": self.messages,
                                "temperature": self.temperature}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.response_format is not None:
            body["response_format"] = self.response_format.body()
        if self.cache_prompt:
            body["cache_prompt"] = True
        if self.id_slot is not None:
            body["id_slot"] = self.id_slot
        return body


class LLMClient:
    """Chat calls against one OpenAI-compatible endpoint."""

    def __init__(self, base_url: str, api_key: str, model: str, timeout: float,
                 response_format: str = "json_schema", prefill: str = "auto") -> None:
        if response_format not in RESPONSE_FORMATS:
            raise ConfigError(f"llm_response_format must be one of {RESPONSE_FORMATS}, "
                              f"not {response_format!r}")
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.response_format = response_format
        self.prefill = prefill
        self._props: dict[str, Any] | None = None
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                     timeout=timeout, max_retries=0)
        self._http = _Connection(base_url, timeout, {
            "Authorization": f"Bearer {api_key or 'not-needed'}",
            "Accept": "application/json", "Content-Type": "application/json"})
        self.slots: Any = None  # EndpointSlots (set by Services): per-endpoint call limit
        self._context: int | None = None

    @classmethod
    def from_settings(cls, s: Any) -> LLMClient:
        return cls(s.llm_base_url, s.llm_api_key.get_secret_value(), s.llm_model,
                   s.llm_timeout, s.llm_response_format, s.llm_prefill)

    def __repr__(self) -> str:  # never shows the key
        return f"LLMClient({redact_text(self.base_url)}, model={self.model!r})"

    def close(self) -> None:
        self._client.close()
        self._http.close()

    def context_size(self, default: int = 4096) -> int:
        """Tokens of context per request, as the server reports it (llama.cpp ``/props``:
        per-slot ``n_ctx``); ``default`` when the endpoint does not say (e.g. OpenAI)."""
        if self._context is None:
            self._context = default
            settings = self.server_props().get("default_generation_settings")
            n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
            if isinstance(n_ctx, int) and n_ctx > 0:
                self._context = n_ctx
        return self._context

    def server_props(self) -> dict[str, Any]:
        """llama.cpp's ``/props`` (asked once; {} from an endpoint without it)."""
        if self._props is None:
            self._props = {}
            root = re.sub(r"/v1/?$", "", self.base_url.rstrip("/"))
            try:
                with urllib.request.urlopen(f"{root}/props", timeout=5) as r:
                    props = json.loads(r.read().decode())
                if isinstance(props, dict):
                    self._props = props
            except (OSError, ValueError, http.client.HTTPException):
                pass  # not llama.cpp's server (or it broke off): the plain OpenAI body
        return self._props

    @property
    def continues_answers(self) -> bool:
        """Whether a trailing assistant message is continued, not answered (llama.cpp's
        server prefills it; the OpenAI API would start a new answer)."""
        if self.prefill != "auto":
            return self.prefill == "on"
        return "default_generation_settings" in self.server_props()

    def prompt_cache(self, kind: str) -> tuple[bool, int | None]:
        """(``cache_prompt``, ``id_slot``) for a call of ``kind`` ("json" or "text"): see the
        module's docstring. (False, None) for an endpoint that is not llama.cpp's server."""
        props = self.server_props()
        if "default_generation_settings" not in props:
            return False, None
        limit = getattr(self.slots, "limit", 1)
        if not (isinstance(limit, int) and limit == 1):  # several calls at once: server picks
            return True, None
        total = props.get("total_slots")
        slots = total if isinstance(total, int) and total > 0 else 1
        return True, SLOT_OF_KIND[kind] % slots

    # --- calls ---
    def response_format_for(self, schema: JsonSchema, name: str) -> ResponseFormat | None:
        """How to ask for a JSON answer in the configured mode (None: "none", the prompt
        alone asks for it)."""
        if self.response_format in ("json_schema", "json_object"):
            return ResponseFormat(self.response_format, name, schema)
        return None

    def chat_json(self, messages: list[dict[str, str]], schema: JsonSchema, name: str,
                  *, max_tokens: int | None = 400, temperature: float = 0.0) -> LLMResult:
        """A chat call that asks for one JSON object (structured output per settings)."""
        return self._chat(ChatRequest(self.model, messages, temperature, max_tokens,
                                      self.response_format_for(schema, name),
                                      *self.prompt_cache("json")))

    def chat_text(self, messages: list[dict[str, str]], *, max_tokens: int | None = 800,
                  temperature: float = 0.2, prefill: str | None = None) -> LLMResult:
        """A plain chat call (e.g. a reply draft). ``prefill``: the answer's first words,
        continued by an endpoint that can (``continues_answers``; else not sent); the text
        returned then starts with them."""
        cache = self.prompt_cache("text")
        if not prefill or not self.continues_answers:
            return self._chat(ChatRequest(self.model, messages, temperature, max_tokens, None,
                                          *cache))
        result = self._chat(ChatRequest(self.model, [*messages, {"role": "assistant",
                                                                 "content": prefill}],
                                        temperature, max_tokens, None, *cache))
        if result.text.startswith(prefill):  # llama.cpp answers with the whole message
            return replace(result, prefill=prefill)
        joiner = "" if result.text[:1] in ("", " ", ",", ".", "\n") else " "
        return replace(result, text=prefill + joiner + result.text, prefill=prefill)

    def _chat(self, request: ChatRequest) -> LLMResult:
        body = request.body()
        waited = 0.0
        if self.slots is not None:
            with self.slots.slot() as waited:
                started = time.monotonic()
                completion = self._post("chat/completions", body, request.mode)
        else:
            started = time.monotonic()
            completion = self._post("chat/completions", body, request.mode)
        return self._answer(completion, time.monotonic() - started, waited)

    def _post(self, path: str, body: dict[str, Any], mode: str) -> Any:
        """POST ``body`` as JSON; the decoded JSON answer, or the translated error."""
        translate = _Translate(self, mode)
        try:
            status, reason, headers, data = self._http.post(path, json.dumps(body).encode())
        except TimeoutError as e:
            raise translate.timeout() from e
        except (OSError, http.client.HTTPException) as e:  # refused, reset, broken mid-answer
            raise translate.unreachable(e) from e
        if status >= 400:
            try:
                err_body: Any = json.loads(data)
            except ValueError:
                err_body = data.decode("utf-8", "replace") or None
            raise translate.status(status, headers, _body_text(err_body, reason))
        try:
            return json.loads(data)
        except ValueError as e:  # a 200 whose body is not JSON (a proxy page)
            raise translate.not_json(e) from e

    def _answer(self, completion: Any, duration: float, waited: float) -> LLMResult:
        """The chat completion (decoded JSON) as an ``LLMResult`` (refused when it has no
        answer)."""
        choices = completion.get("choices") if isinstance(completion, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise LLMError(f"the LLM endpoint {redact_text(self.base_url)} sent a response "
                           "without choices (not an OpenAI-compatible chat answer)")
        content = message.get("content")
        usage = completion.get("usage")
        try:
            counts = ({k: int(usage.get(k) or 0) for k in
                       ("prompt_tokens", "completion_tokens", "total_tokens")}
                      if isinstance(usage, dict) else {})
        except (TypeError, ValueError) as e:
            raise LLMError(f"the LLM at {redact_text(self.base_url)} sent an unusable "
                           f"response: usage {redact_text(str(usage))[:100]}") from e
        return LLMResult(
            text=content if isinstance(content, str) else "",
            duration=duration,
            model=str(completion.get("model") or ""),
            usage=counts,
            finish_reason=first.get("finish_reason"),
            waited=waited,
            timings=_timings(completion.get("timings")),
            runtime=str(completion.get("system_fingerprint") or "")[:100],
        )

    def embed(self, texts: list[str], model: str | None = None,
              dimensions: int | None = None) -> list[list[float]]:
        """Embedding vectors from the endpoint's /embeddings (same error translation)."""
        with self._translated("none"):
            resp = self._client.embeddings.create(
                model=model or self.model, input=texts, encoding_format="float",
                **({"dimensions": dimensions} if dimensions else {}))
        return [list(d.embedding) for d in sorted(resp.data, key=lambda d: d.index)]

    def list_models(self) -> list[str]:
        """Model ids the endpoint lists (GET /models)."""
        with self._translated("none"):
            return [m.id for m in self._client.models.list()]

    # --- error translation ---
    def _translated(self, mode: str) -> _Translate:
        return _Translate(self, mode)


# cache_n: prompt tokens taken from the slot's cache; draft_n / draft_n_accepted: tokens the
# draft model proposed and the main model kept (only with speculative decoding)
TIMINGS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n", "draft_n",
           "draft_n_accepted")


def _timings(value: Any) -> dict[str, float]:
    """The numbers of llama.cpp's ``timings`` that say how fast it read and wrote (any other
    endpoint sends none: empty); a malformed one is left out, never an error."""
    if not isinstance(value, dict):
        return {}
    return {k: float(value[k]) for k in TIMINGS
            if isinstance(value.get(k), int | float) and not isinstance(value.get(k), bool)}


class _Connection:
    """One kept-alive HTTP/1.1 connection to the endpoint, through the environment's proxy
    when it names one for this host (``HTTP_PROXY``/``HTTPS_PROXY``, ``NO_PROXY``)."""

    def __init__(self, base_url: str, timeout: float, headers: dict[str, str]) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigError(f"the LLM base URL must be http(s)://host[:port]/path, not "
                              f"{redact_text(base_url)!r}")
        self.https = url.scheme == "https"
        host, port = url.hostname, url.port or (443 if self.https else 80)
        self.prefix = url.path.rstrip("/") + "/"
        self.headers = headers
        self.timeout = timeout
        proxy = (urllib.request.getproxies().get(url.scheme)
                 if not urllib.request.proxy_bypass(host) else None)
        self.target = (host, port)
        self.absolute = ""  # the request target's scheme and host (plain HTTP via a proxy)
        if proxy:
            p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            self.target = (p.hostname or "", p.port or 80)
            if not self.https:
                self.absolute = f"http://{url.netloc.rpartition('@')[2]}"
        self.tunnel = (host, port) if proxy and self.https else None
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        conn = self._conn
        if conn is not None and conn.sock is not None and _closed_by_peer(conn.sock):
            conn.close()  # closed while idle: a new one, the request not yet sent
        if conn is None:
            if self.https:
                conn = http.client.HTTPSConnection(*self.target, timeout=self.timeout,
                                                   context=client_context())
                if self.tunnel is not None:
                    conn.set_tunnel(*self.tunnel)
            else:
                conn = http.client.HTTPConnection(*self.target, timeout=self.timeout)
            self._conn = conn
        return conn

    def post(self, path: str, body: bytes) -> tuple[int, str, http.client.HTTPMessage, bytes]:
        """Status, reason, headers and body of the answer; the connection is dropped after
        any error (a half-read answer must not be read by the next call)."""
        conn = self._connection()
        try:
            conn.request("POST", self.absolute + self.prefix + path, body=body,
                         headers=self.headers)
            resp = conn.getresponse()
            data = resp.read()
        except BaseException:
            self.close()
            raise
        return resp.status, resp.reason, resp.headers, data

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle kept-alive socket was closed by the other end (readable while no
    answer is due: EOF or garbage)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _Translate:
    """Context manager: openai errors -> email_rag.core.errors (``raise ... from e``).
    ``mode``: the request's response_format type ("none" when it had none)."""

    def __init__(self, client: LLMClient, mode: str) -> None:
        self.c = client
        self.mode = mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, et: Any, e: BaseException | None, tb: Any) -> bool:
        if e is None:
            return False
        if isinstance(e, ValueError) and not isinstance(e, openai.OpenAIError):
            # a 200 whose body is not JSON (a proxy page): the client's json() raised
            raise self.not_json(e) from e
        if not isinstance(e, openai.OpenAIError):
            return False
        raise self.translate(e) from e

    @property
    def where(self) -> str:
        return f"{redact_text(self.c.base_url)} (model {self.c.model!r})"

    def timeout(self) -> Exception:
        return LLMTimeoutError(f"the LLM at {self.where} did not answer within "
                               f"{self.c.timeout:g} s", timeout=self.c.timeout)

    def unreachable(self, e: BaseException) -> Exception:
        cause = redact_text(str(e.__cause__ or e) or type(e).__name__)[:200]
        return LLMError(f"cannot reach the LLM at {redact_text(self.c.base_url)} or the "
                        f"connection broke ({cause})")

    def not_json(self, e: Exception) -> Exception:
        return LLMError(f"the LLM at {redact_text(self.c.base_url)} sent a body that is not "
                        f"JSON ({type(e).__name__}: {str(e)[:100]})")

    def translate(self, e: openai.OpenAIError) -> Exception:
        if isinstance(e, openai.APITimeoutError):
            return self.timeout()
        if isinstance(e, openai.APIConnectionError):
            return self.unreachable(e)
        if isinstance(e, openai.APIStatusError):
            return self.status(e.status_code, e.response.headers, _server_text(e))
        return LLMError(f"the LLM at {self.where} sent an unusable response: "
                        f"{type(e).__name__}: {redact_text(str(e))[:200]}")

    def status(self, code: int, headers: Any, text: str) -> Exception:
        """An HTTP error answer (``text``: what the server said, redacted)."""
        where = self.where
        if code == 429:
            retry_after = parse_retry_after(headers)
            after = f"; Retry-After {retry_after:g} s" if retry_after is not None else ""
            return LLMRateLimitedError(f"the LLM at {where} answered 429 Too Many Requests{after}",
                                       retry_after=retry_after, status=code)
        if code >= 500 or code in (408, 409):
            hint = ""
            if code == 500 and self.mode == "json_schema":
                hint = (" If this endpoint is llama-cpp-python's server, it refuses "
                        "response_format json_schema with 500: set "
                        "EMAIL_RAG_LLM_RESPONSE_FORMAT=json_object.")
            return LLMError(f"the LLM at {where} failed with HTTP {code}: {text}.{hint}",
                            status=code)
        causes = {
            401: "the endpoint refused the API key: check EMAIL_RAG_LLM_API_KEY",
            403: "the API key may not use this model or endpoint: check EMAIL_RAG_LLM_API_KEY "
                 "and EMAIL_RAG_LLM_MODEL",
            404: f"model {self.c.model!r} or the URL is unknown there: check EMAIL_RAG_LLM_MODEL "
                 "and EMAIL_RAG_LLM_BASE_URL (it usually ends in /v1)",
            400: f"the endpoint refused the request (it may not support response_format "
                 f"{self.mode!r}: try EMAIL_RAG_LLM_RESPONSE_FORMAT=json_object or none, or a "
                 "smaller max_tokens)",
            422: f"the endpoint could not process the request (response_format {self.mode!r} "
                 "or a parameter is not supported)",
        }
        if code in (400, 413) and _OVERFLOW.search(text):
            return LLMContextOverflowError(
                f"HTTP {code} from the LLM at {where}: the prompt does not fit the model's "
                f"context window. Server said: {text}", status=code)
        cause = causes.get(code, "the endpoint refused the request")
        return LLMRequestRejectedError(
            f"HTTP {code} from the LLM at {where}: {cause}. Server said: {text}. "
            "Not retried: fix the configuration, then retry the mail.", status=code)
