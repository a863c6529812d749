"""Retrieval: the context a reply draft is written from, and ``email-rag search``.

For one mail (``Retriever.for_mail``):

- similar past cases: the nearest mails of the SAME mailbox in the vector store
  that received a sent reply, with that reply (MariaDB decides "sent": drafts
  with status sent; the vector payload's ``has_sent_reply`` is only a hint,
  it was true or false when the mail was indexed);
- the thread: the other mails with the same thread_key (MariaDB, always there),
  with the replies we sent in it;
- the sender's history: from the graph when it is configured and answers,
  otherwise from MariaDB (said in ``sender_history_source``).

Failure table:

| situation | retry? | state known? | resume? |
|---|---|---|---|
| vector store / embeddings unavailable | store_tries tries, backoff | yes: reduced context, detail says which store and why, audited `retrieval_reduced` | the draft is written from thread + history; never fails the mail |
| graph unavailable | store_tries tries | yes: history from MariaDB, `reduced`, audited | - |
| a store refuses (configuration) | no | same as unavailable, with the reason | after the fix |
| mail has no text | - | no vector search (detail says so) | - |
| MariaDB lost | worker waits | yes | step re-runs |
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..core.index_ports import VectorHit
from ..db import slot_params, sql
from .chunking import clean_body, mail_chunks
from .indexer import StoreResult, _iso, store_policy, with_tries

SNIPPET = 300
REPLY_CHARS = 4000


def best_per_mail(hits: list[VectorHit]) -> list[VectorHit]:
    """The best-scoring chunk of each mail, best first."""
    best: dict[int, VectorHit] = {}
    for h in hits:
        if h.email_id not in best or h.score > best[h.email_id].score:
            best[h.email_id] = h
    return sorted(best.values(), key=lambda h: (-h.score, h.email_id))


class Retriever:
    def __init__(self, services: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.services = services
        self.settings = services.settings
        self.policy = store_policy(services.settings)
        self.sleep = sleep

    # --- for the draft ---
    def for_mail(self, email: dict[str, Any]) -> tuple[dict[str, Any], dict[str, StoreResult]]:
        s = self.settings
        stores: dict[str, StoreResult] = {}
        chunks, _ = mail_chunks(email.get("subject"), email.get("body_text"),
                                s.chunk_chars, s.chunk_overlap)
        similar: list[dict[str, Any]] = []
        if not chunks:
            stores["vectors"] = StoreResult("vectors", "skipped", info={"why": "no text"})
        else:
            found: list[dict[str, Any]] = []

            def search() -> dict[str, Any]:
                found[:] = self._similar_cases(email, chunks[0])
                return {"candidates": len(found)}
            stores["vectors"] = with_tries("vectors", search, self.policy, self.sleep)
            similar = found if stores["vectors"].state == "ok" else []
        thread = self._thread(email)
        history, source = [], "mariadb"
        if s.arango_url and email.get("from_addr"):
            got: list[dict[str, Any]] = []

            def graph_history() -> dict[str, Any]:
                graph = self.services.graph
                assert graph is not None
                got[:] = graph.sender_history(email["from_addr"], exclude_email_id=email["id"],
                                              limit=s.retrieve_context_limit,
                                              mailbox_id=email["mailbox_id"])
                return {"found": len(got)}
            stores["graph"] = with_tries("graph", graph_history, self.policy, self.sleep)
            if stores["graph"].state == "ok":
                history, source = got, "graph"
        else:
            stores["graph"] = StoreResult("graph", "off", info={"why": "EMAIL_RAG_ARANGO_URL unset"}
                                          if not s.arango_url else {"why": "no sender address"})
        if source == "mariadb" and email.get("from_addr"):
            history = [_jsonable(r) for r in self.services.db.fetchall(
                sql("index_sender_history"), {"mailbox_id": email["mailbox_id"],
                                               "from_addr": email["from_addr"], "id": email["id"],
                                               "limit": s.retrieve_context_limit})]
        missing = [n for n, r in stores.items() if r.state == "missing"]
        detail = {
            "similar": similar[: s.retrieve_limit],
            "thread": thread,
            "sender_history": history,
            "sender_history_source": source,
            "stores": {n: r.as_dict() for n, r in stores.items()},
            "reduced": bool(missing),
            "missing": missing,
            "embedder": self._embedder_name() if "vectors" in stores
            and stores["vectors"].state != "skipped" else None,
        }
        return detail, stores

    def _embedder_name(self) -> str | None:
        try:
            return str(self.services.embedder.name)
        except Exception:  # noqa: BLE001 - only a label
            return None

    def _similar_cases(self, email: dict[str, Any], query: str) -> list[dict[str, Any]]:
        s = self.settings
        vec = self.services.embedder.embed([query])[0]
        hits = best_per_mail(self.services.vectors.search(
            vec, mailbox_id=int(email["mailbox_id"]), exclude_email_id=int(email["id"]),
            limit=max(s.retrieve_candidates, s.retrieve_limit)))
        if not hits:
            return []
        ids = [h.email_id for h in hits]
        cases: dict[int, dict[str, Any]] = {}
        for row in self.services.db.fetchall(sql("index_sent_cases", ids=len(ids)),
                                             slot_params(ids=ids)):
            cases[int(row["email_id"])] = row  # ordered by draft id: the newest sent wins
        out = []
        for h in hits:
            row = cases.get(h.email_id)
            if row is None:
                continue
            out.append({
                "email_id": h.email_id, "score": round(h.score, 4), "chunk": h.chunk,
                "subject": row["subject"], "from_addr": row["from_addr"],
                "received_at": _iso(row["received_at"]), "category": row["category"],
                "snippet": (h.payload.get("text") or clean_body(row["body_text"]))[:SNIPPET],
                "reply": {"draft_id": int(row["draft_id"]),
                          "text": (row["reply_text"] or "")[:REPLY_CHARS]}})
            if len(out) >= s.retrieve_limit:
                break
        return out

    def _thread(self, email: dict[str, Any]) -> list[dict[str, Any]]:
        if not email.get("thread_key"):
            return []
        rows = self.services.db.fetchall(sql("index_thread_mails"), {
            "mailbox_id": email["mailbox_id"], "thread_key": email["thread_key"],
            "id": email["id"], "limit": self.settings.retrieve_context_limit})
        if not rows:
            return []
        ids = [int(r["id"]) for r in rows]
        replies: dict[int, str] = {}
        for row in self.services.db.fetchall(sql("index_sent_cases", ids=len(ids)),
                                             slot_params(ids=ids)):
            replies[int(row["email_id"])] = (row["reply_text"] or "")[:REPLY_CHARS]
        return [{"email_id": int(r["id"]), "subject": r["subject"], "from_addr": r["from_addr"],
                 "received_at": _iso(r["received_at"]), "status": r["status"],
                 "snippet": clean_body(r["body_text"])[:SNIPPET * 2],
                 "sent_reply": replies.get(int(r["id"]))} for r in rows]

    # --- email-rag search ---
    def search(self, text: str, mailbox_id: int | None = None,
               limit: int = 10) -> list[dict[str, Any]]:
        """Indexed mails nearest to ``text`` (raises StoreUnavailableError when the store is)."""
        vec = self.services.embedder.embed([text])[0]
        hits = best_per_mail(self.services.vectors.search(
            vec, mailbox_id=mailbox_id, limit=max(limit * 4, limit)))[:limit]
        if not hits:
            return []
        ids = [h.email_id for h in hits]
        rows = {int(r["id"]): r for r in self.services.db.fetchall(
            sql("index_emails_by_ids", ids=len(ids)), slot_params(ids=ids))}
        out = []
        for h in hits:
            r = rows.get(h.email_id)
            out.append({
                "email_id": h.email_id, "score": round(h.score, 4), "chunk": h.chunk,
                "mailbox_id": h.payload.get("mailbox_id"),
                "subject": r["subject"] if r else h.payload.get("subject"),
                "from_addr": r["from_addr"] if r else h.payload.get("from_addr"),
                "received_at": _iso(r["received_at"]) if r else h.payload.get("received_at"),
                "status": r["status"] if r else None,
                "has_sent_reply": bool(r["has_sent_reply"]) if r else None,
                "in_mariadb": r is not None,
                "snippet": (h.payload.get("text") or "")[:SNIPPET]})
        return out


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _iso(v) if hasattr(v, "isoformat") else v for k, v in row.items()}
