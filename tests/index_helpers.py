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
    hang (never answers before the client times out), dim:<n> (wrong vector size),
    garbage (200 with strings instead of vectors).
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
                vecs: list[Any] = HashingEmbedder(dim).embed(texts)
                if mode == "garbage":
                    vecs = ["not a vector" for _ in texts]
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


class ArangoRecorder:
    """A recording stand-in for the few ArangoDB REST calls the graph adapter makes.

    NOT ArangoDB: it keeps documents in dicts and answers the one AQL query of the adapter
    (sender history) by evaluating it in Python. It proves that our calls go through the
    real python-arango client with the parameters we mean (collections, graph definition,
    _keys, overwrite modes, bind variables); what only a real server can show is covered by
    the tests that run with EMAIL_RAG_TEST_ARANGO_URL.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, Any], Any]] = []
        self.databases = {"_system"}
        self.collections: dict[str, dict[str, dict[str, Any]]] = {}
        self.edge_collections: set[str] = set()
        self.graphs: dict[str, Any] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

            def do_DELETE(self) -> None:  # noqa: N802
                self._handle("DELETE")

            def _handle(self, method: str) -> None:
                from urllib.parse import parse_qs, urlsplit

                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                server.requests.append((method, url.path, params, body))
                code, payload = server.answer(method, url.path, params, body)
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
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, method: str, path: str, params: dict[str, Any],
               body: Any) -> tuple[int, Any]:
        api = path.split("/_api/", 1)[1] if "/_api/" in path else path
        if api == "version":
            return 200, {"server": "arango-recorder", "version": "0.0-recorder"}
        if api == "database" and method == "GET":
            return 200, {"error": False, "code": 200, "result": sorted(self.databases)}
        if api == "database" and method == "POST":
            self.databases.add(body["name"])
            return 201, {"error": False, "code": 201, "result": True}
        if api == "collection" and method == "GET":
            return 200, {"error": False, "code": 200, "result": [
                {"name": n, "type": 3 if n in self.edge_collections else 2}
                for n in self.collections]}
        if api == "collection" and method == "POST":
            self.collections.setdefault(body["name"], {})
            if body.get("type") == 3:
                self.edge_collections.add(body["name"])
            return 200, {"error": False, "code": 200, "name": body["name"], "id": "1",
                         "type": body.get("type", 2), "status": 3}
        if api.startswith("gharial"):
            name = api.split("/", 1)[1] if "/" in api else None
            if method == "GET" and name:
                return (200, {"graph": self.graphs[name]}) if name in self.graphs else (
                    404, {"error": True, "code": 404, "errorNum": 1924,
                          "errorMessage": "graph not found"})
            self.graphs[body["name"]] = body
            return 202, {"error": False, "code": 202, "graph": body}
        if api.startswith("document/") and method == "POST":
            col = self.collections[api.split("/", 1)[1]]
            out = []
            for doc in body:
                old = col.get(doc["_key"], {})
                new = {**old, **doc} if params.get("overwriteMode") == "update" else dict(doc)
                col[doc["_key"]] = new
                out.append({"_key": doc["_key"], "_id": f"x/{doc['_key']}", "_rev": "1"})
            return 202, out
        if api.startswith("document/") and method == "DELETE":  # by key; a missing one is
            col = self.collections[api.split("/", 1)[1]]      # a per-document error
            out = []
            for key in body:
                gone = col.pop(key, None)
                out.append({"_key": key, "_id": f"x/{key}", "_rev": "1"} if gone else
                           {"error": True, "errorNum": 1202, "errorMessage": "not found"})
            return 200, out
        if api == "cursor":
            return 201, {"error": False, "code": 201, "hasMore": False, "cached": False,
                         "result": self._history(body["bindVars"])}
        return 404, {"error": True, "code": 404, "errorNum": 404, "errorMessage": f"no {api}"}

    def _history(self, bind: dict[str, Any]) -> list[dict[str, Any]]:
        mails = self.collections.get("mails", {})
        answered = {e["_from"] for e in self.collections.get("answered_by", {}).values()}
        found = [mails[e["_to"].split("/", 1)[1]]
                 for e in self.collections.get("sent", {}).values() if e["_from"] == bind["person"]]
        found = [m for m in found if m["email_id"] != bind["exclude"]
                 and (bind["mailbox"] is None or m["mailbox_id"] == bind["mailbox"])]
        found.sort(key=lambda m: m.get("received_at") or "", reverse=True)
        return [{"email_id": m["email_id"], "subject": m["subject"],
                 "received_at": m["received_at"], "thread_key": m["thread_key"],
                 "category": m["category"], "replied": f"mails/{m['_key']}" in answered}
                for m in found[: bind["limit"]]]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
