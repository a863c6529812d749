"""A 429 with Retry-After from the embeddings endpoint: the store policy waits that long
(capped by store_max_retry_after) and the wait is in the audited try events (issue 43)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from email_rag.adapters.embeddings import OpenAIEmbedder
from email_rag.core.settings import Settings
from email_rag.indexing.indexer import IndexResult, store_policy, with_tries


class _Endpoint(BaseHTTPRequestHandler):
    """POST /v1/embeddings: the first ``limited`` calls answer 429 Retry-After, then vectors."""

    calls: list[str] = []
    limited = 1
    retry_after = "7"

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(self.path)
        if len(type(self).calls) <= type(self).limited:
            payload = json.dumps({"error": {"message": "slow down"}}).encode()
            self.send_response(429)
            self.send_header("Retry-After", type(self).retry_after)
        else:
            payload = json.dumps({"object": "list", "model": "m", "data": [
                {"object": "embedding", "index": i, "embedding": [0.5, 0.5, 0.5, 0.5]}
                for i, _ in enumerate(body["input"])],
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def endpoint():
    _Endpoint.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)  # a free port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("retry_after", "cap", "waited"), [("7", 60.0, 7.0),
                                                            ("900", 60.0, 60.0)])
def test_a_429_with_retry_after_from_embeddings_waits_that_long_capped_and_audited(
        endpoint, retry_after, cap, waited):
    _Endpoint.retry_after = retry_after
    embedder = OpenAIEmbedder(endpoint, "", "m", dim=4)
    policy = store_policy(Settings(store_tries=3, store_backoff=1.0,
                                   store_max_retry_after=cap))
    slept: list[float] = []
    try:
        r = with_tries("vectors", lambda: {"n": len(embedder.embed(["a", "b"]))}, policy,
                       slept.append)
    finally:
        embedder.close()
    assert (r.state, r.tries, r.info) == ("ok", 2, {"n": 2})
    assert slept == [waited]  # the server's wait (cut to the cap), not the doubling 1 s
    assert len(_Endpoint.calls) == 2
    events = list(IndexResult(1, {"vectors": r}).try_events())
    assert events == [("store_try_failed", {
        "store": "vectors", "try": 1, "error": r.failures[0].error, "retry_in_s": waited,
        "retry_after_s": float(retry_after), "permanent": False})]
