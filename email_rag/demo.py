"""The main job end to end on one machine, with the local defaults.

A private Dovecot mailbox with sample support mail, the scripted LLM endpoint,
Qdrant local, a local SMTP relay that files what it accepts into the Sent
folder: polled, parsed, classified, indexed, drafted by real worker processes;
one draft approved as a user would (``email-rag drafts approve``); the reply
received once; then a summary of every mail's state. The database it used
(``email_rag_demo``) is kept so the web UI can show the result.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .app import Services
from .db import Database
from .db.migrate import ensure_database, migrate
from .errors import ConfigError
from .settings import Settings

DEMO_DB = "email_rag_demo"


def _cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "email_rag", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _burst_worker(env: dict[str, str], log: Path) -> None:
    with log.open("ab") as out:
        subprocess.run([sys.executable, "-m", "email_rag", "worker", "--with-vectors", "--burst"],
                       env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False)


def run_demo(settings: Settings, say: Any = print, database: str = DEMO_DB) -> dict[str, Any]:
    from .testing.dovecot import Dovecot, mailboxes_json
    from .testing.llm_server import ScriptedLLMServer
    from .testing.mails import sample_mails
    from .testing.redis_claim import claimed_db
    from .testing.smtp_server import FaultSmtpServer

    if not re.fullmatch(r"\w+", database):
        raise ConfigError(f"database name {database!r} must be letters, digits and underscores")
    work = Path(tempfile.mkdtemp(prefix="email-rag-demo-"))
    server = Database.from_settings(settings, database="")
    server.execute(f"DROP DATABASE IF EXISTS `{database}`")
    server.close()
    db = Database.from_settings(settings, database=database)
    ensure_database(db, database)
    migrate(db)
    say(f"1. database {database} created and migrated")

    with claimed_db(settings.redis_url) as redis_url, Dovecot() as dovecot, \
            ScriptedLLMServer() as llm:
        user = dovecot.add_user("support@example.com")
        user.create_folder("Sent")
        relay = FaultSmtpServer(file_to=lambda data: user.append(data, "Sent")).start()
        try:
            mails = sample_mails()
            user.append_many(mails)
            say(f"2. private Dovecot on 127.0.0.1:{dovecot.port}: {len(mails)} sample mails "
                "in support@example.com's INBOX")
            env = {**os.environ,
                   "EMAIL_RAG_DB_NAME": database, "EMAIL_RAG_REDIS_URL": redis_url,
                   "EMAIL_RAG_MAILBOXES": mailboxes_json([user.config]),
                   "EMAIL_RAG_LLM_BASE_URL": llm.url, "EMAIL_RAG_SMTP_PORT": str(relay.port),
                   "EMAIL_RAG_QDRANT_PATH": str(work / "qdrant"),
                   "EMAIL_RAG_AUDIT_SPOOL_PATH": str(work / "audit-spool.jsonl"),
                   "EMAIL_RAG_LOG_LEVEL": "WARNING"}
            say(f"   scripted LLM endpoint (test double) at {llm.url}; "
                f"SMTP relay on 127.0.0.1:{relay.port}; Qdrant local in {work / 'qdrant'}")
            polled = _cli(env, "poll", "--once", "--json")
            counts = json.loads(polled.stdout)["data"]["totals"] if polled.stdout else {}
            say(f"3. email-rag poll --once: {counts}")
            _burst_worker(env, work / "worker.log")
            drafts = json.loads(_cli(env, "drafts", "list", "--json").stdout)["data"]["drafts"]
            say(f"4. worker (parse, classify, index, retrieve, draft): {len(drafts)} draft(s) "
                "wait for review")
            sent_id = None
            if drafts:
                first = drafts[0]
                approved = _cli(env, "drafts", "approve", str(first["id"]), "--by", "demo-user",
                                "--json")
                sent_id = json.loads(approved.stdout)["data"]["message_id"]
                say(f"5. email-rag drafts approve {first['id']} --by demo-user "
                    f"(\"{first['subject']}\") -> {sent_id}")
                _burst_worker(env, work / "worker.log")
                deadline = time.monotonic() + 10
                while relay.count(sent_id) == 0 and time.monotonic() < deadline:
                    time.sleep(0.1)
            received = relay.count(sent_id) if sent_id else 0
            with user.imap() as imap:
                filed = len(imap.find_message_id("Sent", sent_id)) if sent_id else 0
            say(f"6. SMTP relay received the reply {received} time(s); Sent folder holds "
                f"{filed} copy")
        finally:
            relay.stop()
    summary = summarize(Services(settings.model_copy(update={"db_name": database})))
    return {"database": database, "drafts": len(drafts), "approved_message_id": sent_id,
            "received": received, "filed_in_sent": filed, "mails": summary, "work_dir": str(work)}


def summarize(svc: Services) -> list[dict[str, Any]]:
    try:
        return svc.db.fetchall(
            "SELECT e.id, e.status, e.index_status, e.parse_status, e.category, e.language,"
            " LEFT(e.subject, 40) AS subject, d.status AS draft, s.status AS send"
            " FROM emails e LEFT JOIN drafts d ON d.email_id = e.id AND d.status <> 'superseded'"
            " LEFT JOIN send_attempts s ON s.draft_id = d.id ORDER BY e.id")
    finally:
        svc.close()
