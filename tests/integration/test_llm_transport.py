"""The LLM adapter's chat transport (one kept-alive HTTP/1.1 connection) over real sockets:
a connection the server closed while idle is replaced without a second request, the proxy
settings of the environment are followed, each call is one request."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from email_rag.core.errors import LLMError, LLMTimeoutError
from tests.llm_support import client

ANSWER = {"choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
          "model": "m"}


class _Endpoint(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, close_after_answer: bool = False) -> None:
        self.close_after_answer = close_after_answer
        self.requests: list[dict[str, Any]] = []
        self.connections: set[tuple[str, int]] = set()
        self.closed = threading.Semaphore(0)  # released once per connection the server closed
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.closed.release()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Endpoint

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "body": body,
                                     "auth": self.headers.get("Authorization")})
        self.server.connections.add(self.client_address)
        data = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        if self.server.close_after_answer:  # unannounced: no "Connection: close"
            self.close_connection = True

    def log_message(self, *args: Any) -> None:
        pass


class _ForwardProxy(http.server.ThreadingHTTPServer):
    """An HTTP forward proxy (absolute-form request targets), recording what it forwarded."""

    daemon_threads = True

    def __init__(self) -> None:
        self.forwarded: list[str] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ForwardProxy

    def do_POST(self) -> None:  # noqa: N802
        self.server.forwarded.append(self.path)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "proxy-connection", "connection")}
        req = urllib.request.Request(self.path, data=body, headers=headers, method="POST")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=10) as r:
            data = r.read()
            status = r.status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[_Endpoint]:
    e = _Endpoint()
    yield e
    e.stop()


def _chat(llm: Any) -> str:
    return llm.chat_text([{"role": "user", "content": "hi"}], max_tokens=5).text


def test_calls_share_one_kept_alive_connection_and_send_the_request_once(endpoint):
    llm = client(endpoint.url, key="k-1")
    try:
        assert [_chat(llm) for _ in range(5)] == ["hello"] * 5
    finally:
        llm.close()
    assert len(endpoint.requests) == 5
    assert {r["path"] for r in endpoint.requests} == {"/v1/chat/completions"}
    assert {r["auth"] for r in endpoint.requests} == {"Bearer k-1"}
    assert endpoint.requests[0]["body"]["max_tokens"] == 5
    assert len(endpoint.connections) == 1  # one TCP connection for all five


def test_a_connection_the_server_closed_while_idle_is_replaced_without_a_repeat():
    """GIVEN an endpoint that closes each connection after its answer without saying so
    THEN every call still gets its answer, each one request (never sent twice)."""
    e = _Endpoint(close_after_answer=True)
    llm = client(e.url)
    try:
        assert llm.server_props() == {}  # the client's one /props probe: answered 501, closed
        assert e.closed.acquire(timeout=10)
        for _ in range(4):
            assert _chat(llm) == "hello"
            assert e.closed.acquire(timeout=10)  # the next call finds it closed
    finally:
        llm.close()
        e.stop()
    assert len(e.requests) == 4 and len(e.connections) == 4


def test_the_environment_proxy_is_used_and_no_proxy_is_followed(endpoint, monkeypatch):
    proxy = _ForwardProxy()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        llm = client(endpoint.url)
        try:
            assert _chat(llm) == "hello"
        finally:
            llm.close()
        assert proxy.forwarded == [endpoint.url + "/chat/completions"]

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        llm = client(endpoint.url)
        try:
            assert _chat(llm) == "hello"
        finally:
            llm.close()
        assert len(proxy.forwarded) == 1  # the second call went direct
        assert len(endpoint.requests) == 2
    finally:
        proxy.stop()


def test_a_server_that_accepts_but_never_answers_is_a_timeout():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    llm = client(f"http://127.0.0.1:{port}/v1", timeout=0.5)
    try:
        with pytest.raises(LLMTimeoutError):
            _chat(llm)
    finally:
        llm.close()
        listener.close()


def test_a_server_that_hangs_up_mid_answer_is_a_transient_error():
    """GIVEN a server that answers every request (the client's ``/props`` probe too) with
    half a body and hangs up THEN the probe's broken answer is read as "not llama.cpp's
    server" and the chat call is a transient LLMError, "connection broke"."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    served: list[bytes] = []

    def half_answers() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener closed: the test is over
                return
            served.append(conn.recv(65536).split(b" ", 1)[0])
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 500\r\n\r\n{\"choices\": [")
            conn.close()
    t = threading.Thread(target=half_answers, daemon=True)
    t.start()
    llm = client(f"http://127.0.0.1:{port}/v1")
    try:
        with pytest.raises(LLMError) as ei:
            _chat(llm)
        assert type(ei.value) is LLMError and "connection broke" in str(ei.value)
        assert llm.server_props() == {}
    finally:
        llm.close()
        listener.close()
        t.join(5)
    assert served == [b"GET", b"POST"]
