"""Test data and servers for the indexing and retrieval tests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from email_rag.adapters.embeddings import HashingEmbedder
from email_rag.db import Database


def make_sent_draft(db: Database, email_id: int, reply: str, final: str | None = None) -> int:
    """A reply to ``email_id`` that was sent (drafts + send_attempts rows)."""
    with db.transaction() as cur:
        cur.execute("INSERT INTO drafts (email_id, version, status, subject, body_draft, body_final)"
                    " VALUES (%s, 1, 'sent', 'Re', %s, %s)", (email_id, reply, final))
        draft_id = cur.lastrowid
        cur.execute("INSERT INTO send_attempts (draft_id, message_id, status, tries, sent_at)"
                    " VALUES (%s, %s, 'sent', 1, NOW(6))", (draft_id, f"<d{draft_id}@test>"))
    return draft_id


def confirm_steps(db: Database, email_id: int, *steps: str) -> None:
    """Checkpoint rows for steps other helpers own (parse, classify, draft), so a real worker
    running the default pipeline only runs the index and retrieve steps of these mails."""
    for step in steps:
        db.execute("INSERT IGNORE INTO email_steps (email_id, step, detail) VALUES (%s, %s, '{}')",
                   (email_id, step))


def index_row(db: Database, email_id: int) -> dict[str, Any]:
    return db.fetchone("SELECT index_status, index_missing FROM emails WHERE id = %s",
                       (email_id,))


class EmbeddingsServer:
    """A tiny OpenAI-compatible ``POST /v1/embeddings`` for the 'openai' backend tests.

    Vectors come from the hashing embedder (no semantics). ``mode``: ok, status:<code>,
    hang (never answers before the client times out), dim:<n> (wrong vector size).
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []
        self._release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                mode = server.mode
                if mode == "hang":
                    server._release.wait(10)
                    return
                if mode.startswith("status:"):
                    code = int(mode.split(":")[1])
                    self._send(code, {"error": {"message": f"scripted {code}"}})
                    return
                dim = int(mode.split(":")[1]) if mode.startswith("dim:") else server.dim
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vecs = HashingEmbedder(dim).embed(texts)
                self._send(200, {"object": "list", "model": body.get("model"),
                                 "data": [{"object": "embedding", "index": i, "embedding": v}
                                          for i, v in enumerate(vecs)],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
