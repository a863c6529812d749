"""The main job end to end on one machine, with the local defaults.

A private Dovecot mailbox with sample support mail, the local LLM (llama.cpp's
llama-server with Qwen2.5-Coder-1.5B-Instruct, installed by
scripts/local-llm/install.sh; ``--scripted`` uses the scripted test double
instead, for fast development runs), local embeddings (WordLlama), Qdrant local,
a local SMTP relay that files what it accepts into the Sent folder: polled,
parsed, classified, indexed, drafted by a real worker process; one draft approved
as a user would (``email-rag drafts approve``); the reply received once; then a
summary of every mail's state and the LLM time per mail. The database it used
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
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from email_rag.core.errors import ConfigError
from email_rag.core.settings import Settings
from email_rag.db import Database, drop_database, sql
from email_rag.db.migrate import ensure_database, migrate
from email_rag.wiring.services import Services

DEMO_DB = "email_rag_demo"


def _cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "email_rag", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _burst_worker(env: dict[str, str], log: Path, timeout: float) -> float:
    """Run a burst worker until the queues are empty; the seconds it took. ``timeout``
    is the job timeout x the jobs it may run: a healthy demo never reaches it."""
    started = time.monotonic()
    with log.open("ab") as out:
        subprocess.run([sys.executable, "-m", "email_rag", "worker", "--with-vectors", "--burst"],
                       env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                       check=False)
    return time.monotonic() - started


def _llm_endpoint(stack: ExitStack, scripted: bool, work: Path) -> tuple[dict[str, str], str]:
    """The LLM the demo's processes use: the local model, or the scripted test double."""
    if scripted:
        from .llm_server import ScriptedLLMServer

        llm = stack.enter_context(ScriptedLLMServer())
        return ({"EMAIL_RAG_LLM_BASE_URL": llm.url, "EMAIL_RAG_LLM_TIMEOUT": "30"},
                f"scripted LLM endpoint (TEST DOUBLE: canned answers, no model) at {llm.url}")
    from email_rag.llm.local_server import LocalLLMServer

    server = stack.enter_context(LocalLLMServer(log=work / "llama-server.log"))
    return ({"EMAIL_RAG_LLM_BASE_URL": server.url, "EMAIL_RAG_LLM_MODEL": server.model_id},
            f"local LLM {server.model_id} (llama.cpp llama-server, {server.threads} threads, "
            f"context {server.context // server.parallel} tokens per slot) at {server.url}, "
            f"started in {server.started_in:.1f} s with {server.flags}")


def run_demo(settings: Settings, say: Any = print, database: str = DEMO_DB,
             scripted: bool = False) -> dict[str, Any]:
    from .dovecot import Dovecot, mailboxes_json
    from .mails import sample_mails
    from .redis_claim import claimed_db
    from .smtp_server import FaultSmtpServer

    if not re.fullmatch(r"\w+", database):
        raise ConfigError(f"database name {database!r} must be letters, digits and underscores")
    work = Path(tempfile.mkdtemp(prefix="email-rag-demo-"))
    server = Database.from_settings(settings, database="")
    server.execute(drop_database(database))
    server.close()
    db = Database.from_settings(settings, database=database)
    ensure_database(db, database)
    migrate(db)
    say(f"1. database {database} created and migrated")

    with ExitStack() as stack:
        redis_url = stack.enter_context(claimed_db(settings.redis_url))
        dovecot = stack.enter_context(Dovecot())
        say("   starting the LLM (the local model loads in a few seconds) ...")
        llm_env, llm_text = _llm_endpoint(stack, scripted, work)
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
                   **relay.relay_env,
                   "EMAIL_RAG_QDRANT_PATH": str(work / "qdrant"),
                   "EMAIL_RAG_AUDIT_SPOOL_PATH": str(work / "audit-spool.jsonl"),
                   "EMAIL_RAG_LOG_LEVEL": "WARNING", "EMAIL_RAG_HISTORY_IMPORT": "false",
                   **llm_env}
            run_settings = settings.model_copy(update={
                "llm_timeout": float(env.get("EMAIL_RAG_LLM_TIMEOUT", settings.llm_timeout))})
            say(f"   {llm_text}")
            say(f"   embeddings: {settings.embedding_backend} "
                f"({settings.embedding_local_model if settings.embedding_backend == 'local' else ''}"
                f"); SMTP relay on 127.0.0.1:{relay.port}; Qdrant local in {work / 'qdrant'}")
            polled = _cli(env, "poll", "--once", "--json")
            counts = json.loads(polled.stdout)["data"]["totals"] if polled.stdout else {}
            say(f"3. email-rag poll --once: {counts}")
            budget = run_settings.job_timeout * (len(mails) + 2)
            worker_s = _burst_worker(env, work / "worker.log", budget)
            drafts = json.loads(_cli(env, "drafts", "list", "--json").stdout)["data"]["drafts"]
            flagged = [d for d in drafts if d.get("check_flags")]
            say(f"4. worker (parse, classify, index, retrieve, draft) took {worker_s:.0f} s: "
                f"{len(drafts)} draft(s) wait for review, {len(flagged)} of them FLAGGED by the "
                "draft checks")
            sent_id = None
            if drafts:
                clean = [d for d in drafts if not d.get("check_flags")]
                first = (clean or drafts)[0]
                args = ["drafts", "approve", str(first["id"]), "--by", "demo-user", "--json"]
                if not clean:  # a flagged draft is never approved unchanged: staff rewrite it
                    edit = work / "edited-reply.txt"
                    edit.write_text("Hello,\n\nthank you for your message. We are looking into "
                                    "it and will get back to you shortly.\n\nYour support team\n")
                    args += ["--edit-file", str(edit)]
                approved = _cli(env, *args)
                sent_id = json.loads(approved.stdout)["data"]["message_id"]
                edited = " (rewritten: every draft was flagged)" if not clean else ""
                say(f"5. email-rag drafts approve {first['id']} --by demo-user{edited} "
                    f"(\"{first['subject']}\") -> {sent_id}")
                _burst_worker(env, work / "worker.log", budget)
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
    with_llm = [m for m in summary if m.get("llm_s")]
    per_mail = (sum(m["llm_s"] for m in with_llm) / len(with_llm)) if with_llm else 0.0
    return {"database": database, "drafts": len(drafts), "flagged": len(flagged),
            "approved_message_id": sent_id, "received": received, "filed_in_sent": filed,
            "mails": summary, "work_dir": str(work), "llm": llm_text, "worker_seconds":
            round(worker_s, 1), "llm_seconds_per_mail": round(per_mail, 1),
            "mails_with_llm": len(with_llm)}


def summarize(svc: Services) -> list[dict[str, Any]]:
    try:
        rows = svc.db.fetchall(sql("demo_summary"))
        times: dict[int, float] = {}
        for t in svc.db.fetchall(sql("llm_time_per_mail")):
            times[int(t["email_id"])] = times.get(int(t["email_id"]), 0.0) + float(t["seconds"])
        for r in rows:
            r["llm_s"] = round(times.get(int(r["id"]), 0.0), 1)
            r["flags"] = (r["flags"] or "")[:40] or None
        return rows
    finally:
        svc.close()
