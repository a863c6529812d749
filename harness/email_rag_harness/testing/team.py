"""A labelled set's team as a real mailbox: its history in INBOX and Sent, imported by the
product; its knowledge imported with `email-rag knowledge import`; its saved replies through
the product's saved replies; its new mails delivered. Used by `bench quality --drafts` and by
the demo (the sample team is a part of the kaffeewerk set)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from email_rag.core.settings import Settings
from email_rag.db import sql

from .labelled import LabelledSet

HISTORY_DOMAIN = "history.kaffeewerk-bench.invalid"
NEW_DOMAIN = "new.kaffeewerk-bench.invalid"


# --- the mails as raw messages ---
def message_ids(case_or_mail_id: str, reply: bool = False) -> str:
    domain = NEW_DOMAIN if case_or_mail_id.startswith("m") else HISTORY_DOMAIN
    return f"<{case_or_mail_id}{'-reply' if reply else ''}@{domain}>"


def history_raws(s: LabelledSet) -> tuple[list[bytes], list[bytes]]:
    """(INBOX mails, Sent replies) of the set's history, linked by In-Reply-To."""
    from email_rag_harness.testing.mails import mail

    inbox, sent = [], []
    for n, h in enumerate(s.history, 1):
        customer = h.sender
        question = message_ids(h.id)
        inbox.append(mail(n, subject=h.subject, body=h.body, sender=customer, to=s.mailbox,
                          message_id=question, date=datetime.fromisoformat(h.date)))
        subject = h.subject if h.subject.lower().startswith("re:") else f"Re: {h.subject}"
        sent.append(mail(10_000 + n, subject=subject, body=h.reply_body,
                         sender=f"{s.team} <{s.mailbox}>", to=customer,
                         message_id=message_ids(h.id, reply=True),
                         date=datetime.fromisoformat(h.reply_date),
                         extra={"In-Reply-To": question, "References": question}))
    return inbox, sent


def new_raws(mails: list[Any], mailbox: str, when: datetime) -> list[bytes]:
    from email_rag_harness.testing.mails import mail

    return [mail(20_000 + n, subject=m.subject, body=m.body, sender=m.sender, to=mailbox,
                 message_id=message_ids(m.id), date=when + timedelta(seconds=n))
            for n, m in enumerate(mails, 1)]


# --- the product's commands ---
def cli(env: dict[str, str], cwd: Path, *args: str, timeout: float = 600
         ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "email_rag", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


def json_out(done: subprocess.CompletedProcess) -> dict[str, Any]:
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {}


def poll(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = cli(env, cwd, "poll", "--once", "--json")
    out = json_out(done)
    if done.returncode not in (0, 2) or not out:
        raise RuntimeError(f"email-rag poll --once exited {done.returncode}: "
                           f"{(done.stderr or done.stdout)[-800:]}")
    return out.get("data", {}).get("totals", {})


def workers_until(env: dict[str, str], cwd: Path, done: Any, bound: float) -> tuple[bool, float]:
    """Burst workers (``email-rag worker --with-vectors --burst``) one after the other until
    ``done()`` or ``bound`` seconds; (done, seconds taken). A retry the product scheduled
    for later is waited for by the next burst."""
    started = time.monotonic()
    log = cwd / "worker.log"
    while not done():
        left = bound - (time.monotonic() - started)
        if left <= 0:
            return False, time.monotonic() - started
        with log.open("ab") as out:
            try:
                subprocess.run([sys.executable, "-m", "email_rag", "worker", "--with-vectors",
                                "--burst"], env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                               timeout=left, check=False)
            except subprocess.TimeoutExpired:
                return done(), time.monotonic() - started
        if not done():
            time.sleep(1.0)
    return True, time.monotonic() - started


def knowledge_import(env: dict[str, str], cwd: Path, folder: Path) -> dict[str, Any]:
    probe = cli(env, cwd, "knowledge", "--help", timeout=120)
    if probe.returncode != 0:
        return {"status": "not available",
                "detail": "knowledge import not available (no `email-rag knowledge` command)"}
    done = cli(env, cwd, "knowledge", "import", str(folder), "--json", timeout=1800)
    out = json_out(done)
    return {"status": "ok" if done.returncode == 0 else "failed", "exit_code": done.returncode,
            "message": out.get("message") or (done.stderr or done.stdout)[-400:],
            "data": out.get("data")}


def saved_replies(settings: Settings, s: LabelledSet, mailbox_name: str) -> int:
    from email_rag.review import answers
    from email_rag.wiring.services import Services

    svc = Services(settings)
    try:
        box = next((b for b in answers.mailboxes(svc) if b.name == mailbox_name), None)
        if box is None:
            raise RuntimeError(f"mailbox {mailbox_name!r} not in the database after the poll")
        for r in s.saved_replies:
            answers.create(svc, box.id, r.title, r.body, "bench")
        return len(s.saved_replies)
    finally:
        svc.close()




HISTORY_WAIT_START, HISTORY_WAIT_PER_CASE = 180.0, 10.0


def prepare(s: LabelledSet, user: Any, env: dict[str, str], cwd: Path, db: Any,
            settings: Settings, mailbox_name: str, say: Any) -> dict[str, Any]:
    """The team's past before its new mail: the history delivered, polled (the product's
    history import) and indexed by burst workers; the knowledge imported; the saved replies
    written. What each step did, for the caller's report."""
    steps: dict[str, Any] = {}
    inbox, sent = history_raws(s)
    user.deliver(inbox)
    user.deliver(sent, folder="Sent")
    t = time.monotonic()
    steps["history_poll"] = poll(env, cwd)

    def indexed() -> bool:
        row = db.fetchone(sql("bench_drafts_history_left"))
        return int(row["stored"]) >= 2 * len(s.history) and not int(row["left"])

    ok, _ = workers_until(env, cwd, indexed,
                          HISTORY_WAIT_START + HISTORY_WAIT_PER_CASE * len(s.history))
    left = db.fetchone(sql("bench_drafts_history_left"))
    steps["history"] = {"cases": len(s.history), "stored": int(left["stored"]),
                        "not_indexed": int(left["left"]), "indexed_all": ok,
                        "seconds": round(time.monotonic() - t, 1)}
    say(f"history: {steps['history']}")
    steps["knowledge"] = knowledge_import(env, cwd, s.path / "knowledge")
    say(f"knowledge: {steps['knowledge'].get('detail') or steps['knowledge']['status']}")
    steps["saved_replies"] = saved_replies(settings, s, mailbox_name)
    return steps
