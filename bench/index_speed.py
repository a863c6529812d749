"""How fast the index step's work runs: N mails through ``Indexer`` into a local Qdrant
folder (hashing embedder, or ``--backend local`` for all-MiniLM-L6-v2), and N searches.

    python -m bench.index_speed [--mails 300] [--backend hashing|local]

Uses a throw-away MariaDB database on 127.0.0.1 (dropped at the end) and a temp folder.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
import uuid

from email_rag.app import Services
from email_rag.db import Database
from email_rag.db.migrate import ensure_database, migrate
from email_rag.indexing.indexer import Indexer
from email_rag.indexing.retrieval import Retriever
from email_rag.settings import Settings

TOPICS = ["printer error after the firmware update", "invoice charged twice",
          "password reset link expired", "parcel delivery is late", "cancel the subscription"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--mails", type=int, default=300)
    p.add_argument("--backend", default="hashing")
    args = p.parse_args(argv)
    name = f"erag_bench_{uuid.uuid4().hex[:8]}"
    server = Database()
    ensure_database(server, name)
    db = Database(database=name)
    migrate(db)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db_name=name, qdrant_path=f"{tmp}/q", embedding_backend=args.backend,
                            audit_spool_path=f"{tmp}/spool.jsonl")
        svc = Services(settings)
        try:
            db.execute("INSERT INTO mailboxes (name) VALUES ('bench')")
            rows = []
            for i in range(args.mails):
                mid = f"<b{i}@bench>"
                rows.append((1, hashlib.sha256(mid.encode()).hexdigest(), mid, "received",
                             f"Mail {i}: {TOPICS[i % 5]}",
                             f"Hello,\n\nwe have a problem: {TOPICS[i % 5]} (case {i}).\n"
                             "Details follow in this paragraph. " * 3 + "\n\nRegards,\nX"))
            with db.transaction() as cur:
                cur.executemany("INSERT INTO emails (mailbox_id, dedup_key, message_id, status,"
                                " subject, body_text) VALUES (?, ?, ?, ?, ?, ?)", rows)
            mails = db.fetchall("SELECT * FROM emails ORDER BY id")
            indexer = Indexer(svc)
            svc.vectors.open()
            svc.embedder.embed(["warm up"])
            started = time.perf_counter()
            for m in mails:
                assert not indexer.index(m).missing
            took = time.perf_counter() - started
            print(f"index: {len(mails)} mails ({args.backend}, local Qdrant on disk) in "
                  f"{took:.2f} s = {len(mails) / took:.0f} mails/s, "
                  f"{svc.vectors.count()} points")
            r = Retriever(svc)
            started = time.perf_counter()
            for i in range(50):
                r.search(TOPICS[i % 5], limit=5)
            took = time.perf_counter() - started
            print(f"search: 50 queries in {took:.2f} s = {took / 50 * 1000:.1f} ms per query")
        finally:
            svc.close()
            db.close()
            server.execute(f"DROP DATABASE IF EXISTS `{name}`")
            server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
