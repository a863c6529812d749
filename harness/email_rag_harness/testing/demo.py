"""The main job end to end on one machine, with the local defaults.

The sample team is the shop of the labelled kaffeewerk set (bench/labelled/kaffeewerk): its
56 answered cases go into a private Dovecot mailbox's INBOX and Sent folder and are imported
as history (no LLM call), its 19 knowledge articles are imported with `email-rag knowledge
import`, its saved replies are written; then eight new mails arrive (``DEMO_MAILS``: four
languages, answered by a past reply, by an article, by no source, and a newsletter). The local LLM
(llama.cpp's llama-server with Qwen2.5-Coder-1.5B-Instruct, installed by
scripts/local-llm/install.sh; ``--scripted`` uses the scripted test double instead, for fast
development runs), local embeddings, Qdrant local and a local SMTP relay that files what it
accepts into the Sent folder: polled, parsed, classified, indexed, drafted by a real worker
process; one draft approved as a user would (``email-rag drafts approve``); the reply received
once; then, per mail, its state, the draft's sources and what was dropped as unsupported,
and which of the facts the set labels for it the draft holds. The database it used
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from email_rag.core.errors import ConfigError
from email_rag.core.settings import Settings
from email_rag.db import Database, drop_database, sql
from email_rag.db.migrate import ensure_database, migrate
from email_rag.wiring.services import Services

from .labelled import load_set
from .team import message_ids, new_raws, poll, prepare

DEMO_DB = "email_rag_demo"
SAMPLE_SET = Path(__file__).resolve().parent.parent / "bench" / "labelled" / "kaffeewerk"
# de/en/fr/es; answered by a past reply (m02, m11), by an article (m21-m24), by nothing
# (m41), a newsletter (m55)
DEMO_MAILS = ["m02", "m11", "m21", "m22", "m23", "m24", "m41", "m55"]


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
        team = load_set(SAMPLE_SET)
        sample = team.only(DEMO_MAILS)
        user = dovecot.add_user(team.mailbox)
        user.create_folder("Sent")
        relay = FaultSmtpServer(file_to=lambda data: user.append(data, "Sent")).start()
        try:
            now = datetime.now(UTC).replace(microsecond=0)
            box = user.config.model_copy(update={"history_cutoff": now - timedelta(minutes=10),
                                                 "signature": team.signature})
            env = {**os.environ,
                   "EMAIL_RAG_DB_NAME": database, "EMAIL_RAG_REDIS_URL": redis_url,
                   "EMAIL_RAG_MAILBOXES": mailboxes_json([box]),
                   **relay.relay_env,
                   "EMAIL_RAG_QDRANT_PATH": str(work / "qdrant"),
                   "EMAIL_RAG_AUDIT_SPOOL_PATH": str(work / "audit-spool.jsonl"),
                   "EMAIL_RAG_LOG_LEVEL": "WARNING", "EMAIL_RAG_HISTORY_IMPORT": "true",
                   **llm_env}
            run_settings = settings.model_copy(update={
                "db_name": database, "mailboxes": [box],
                "llm_timeout": float(env.get("EMAIL_RAG_LLM_TIMEOUT", settings.llm_timeout))})
            say(f"   {llm_text}")
            say(f"   embeddings: {settings.embedding_backend}; SMTP relay on "
                f"127.0.0.1:{relay.port}; Qdrant local in {work / 'qdrant'}")
            say(f"2. the sample team {team.team} ({team.mailbox}, private Dovecot on "
                f"127.0.0.1:{dovecot.port}): {len(team.history)} answered cases, "
                f"{len(team.articles)} knowledge articles, {len(team.saved_replies)} saved replies")
            steps = prepare(team, user, env, work, db, run_settings, box.name,
                            lambda line: say(f"   {line}"))
            mails = new_raws(list(sample), team.mailbox, datetime.now(UTC).replace(microsecond=0))
            user.deliver(mails)
            counts = poll(env, work)
            say(f"3. {len(mails)} new mails arrive; email-rag poll --once: {counts}")
            budget = run_settings.job_timeout * (len(mails) + 2)
            worker_s = _burst_worker(env, work / "worker.log", budget)
            drafts = json.loads(_cli(env, "drafts", "list", "--json").stdout)["data"]["drafts"]
            written = answered(db, sample)
            say(f"4. worker (parse, classify, index, retrieve, draft) took {worker_s:.0f} s: "
                f"{len(drafts)} draft(s) wait for review")
            for w in written:
                say(f"   {w['mail']} [{w['language']}] {w['subject'][:40]}: {w['status']}; "
                    f"{w['basis'] or 'no draft'}; sources {', '.join(w['sources']) or '-'}; "
                    f"facts {w['facts_found']}/{w['facts']}"
                    + (f"; dropped: {', '.join(w['removed'])}" if w["removed"] else ""))
            sent_id = None
            if drafts:
                first = drafts[0]
                args = ["drafts", "approve", str(first["id"]), "--by", "demo-user", "--json"]
                approved = _cli(env, *args)
                sent_id = json.loads(approved.stdout)["data"]["message_id"]
                say(f"5. email-rag drafts approve {first['id']} --by demo-user "
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
    questions = [w for w in written if w["facts"]]
    return {"database": database, "drafts": len(drafts), "team": steps,
            "answered": [w for w in written],
            "questions": len(questions),
            "questions_answered": sum(w["facts_found"] == w["facts"] for w in questions),
            "approved_message_id": sent_id, "received": received, "filed_in_sent": filed,
            "mails": summary, "work_dir": str(work), "llm": llm_text, "worker_seconds":
            round(worker_s, 1), "llm_seconds_per_mail": round(per_mail, 1),
            "mails_with_llm": len(with_llm)}


def answered(db: Database, sample: Any) -> list[dict[str, Any]]:
    """Per sample mail: its state, how its draft was written (sources, what was dropped) and
    how many of the facts the set labels for it the draft holds."""
    out = []
    for m in sample:
        row = db.fetchone(sql("demo_mail_draft"), {"message_id": message_ids(m.id)})
        body, stored = (row or {}).get("body_draft") or "", {}
        if row and row.get("sources"):
            stored = json.loads(row["sources"])
            stored = stored if isinstance(stored, dict) else {}
        out.append({"mail": m.id, "language": m.language, "group": m.group,
                    "subject": m.subject, "status": (row or {}).get("status"),
                    "basis": stored.get("basis"),
                    "sources": [f"{x.get('ref')} {x.get('kind')} '{x.get('title')}'"
                                for x in stored.get("sources") or []],
                    "removed": list(stored.get("removed") or []),
                    "facts": len(m.facts), "facts_found": sum(f.found_in(body) for f in m.facts),
                    "missing": [str(f) for f in m.facts if not f.found_in(body)]})
    return out


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
