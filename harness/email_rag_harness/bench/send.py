"""Send speed: the real send job against a bare smtplib loop, in the same run.

    python -m bench send [--mails 500] [--json]

N mails with a pending draft each are approved through the staff function
(``sending.review.approve``: send attempt with its fixed Message-ID, send job,
enqueue); then one real ``email-rag worker`` sends them to the local SMTP relay
(``email_rag_harness.testing.smtp_server`` in its own process, no faults) through the
send job: load, newer-mail check, mark attempted (committed before the relay is
contacted), SMTP, mark sent, copy to the Sent folder of the private Dovecot
mailbox. The clock runs from the first claim to the last finished job (MariaDB
timestamps), so the worker's start is not in it.

Baselines, the same messages (same builder, sizes, relay, connection settings):
- bare smtplib, a new connection per message - as the send job does;
- bare smtplib, one connection reused - for context.

Before any figure: every send attempt, draft and mail is ``sent``, and the relay
received each Message-ID exactly once (its own record); the bare loops' messages
too.
"""

from __future__ import annotations

import json
import os
import smtplib
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from email_rag.db import Database, sql
from email_rag.sending.compose import build_reply
from email_rag.sending.review import approve
from email_rag.wiring.services import Services
from email_rag_harness.testing import llm_rules
from email_rag_harness.testing.corpus import generate
from email_rag_harness.testing.dovecot import Dovecot, DovecotUser

from .common import (
    ROOT,
    CheckFailed,
    Report,
    Workspace,
    rate,
    ratio,
    rq_workers,
    spawn,
    stop,
    store_mails,
    terminate,
    wait_until,
)


class Relay:
    """The fault SMTP relay (no faults) in its own process; its record file is the truth."""

    def __init__(self, tmp: Path) -> None:
        self.record = tmp / f"relay-{time.monotonic_ns()}.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "email_rag_harness.testing.smtp_server", "--port", "0", "--record",
             str(self.record)], stdout=subprocess.PIPE, text=True, env=env, cwd=tmp)
        assert self.popen.stdout is not None
        line = self.popen.stdout.readline().strip()  # "SMTP 127.0.0.1:PORT"
        self.host, port = line.split()[-1].rsplit(":", 1)
        self.port = int(port)

    def counts(self) -> Counter[str]:
        if not self.record.exists():
            return Counter()
        return Counter(json.loads(line)["message_id"]
                       for line in self.record.read_text().splitlines() if line.strip())

    def stop(self) -> None:
        terminate(self.popen)


def make_drafts(db: Database, user: DovecotUser, mails: int) -> list[int]:
    """N received mails, each with a pending draft (as the draft step leaves them)."""
    raws = [m.raw for m in generate(mails, seed=5, duplicate_rate=0, auto_rate=0,
                                    malformed_rate=0, followup_rate=0)]
    items = store_mails(db, raws, "email-rag", mailbox=user.config.name)
    drafts = []
    with db.transaction() as cur:
        for email_id, _ in items:
            mail = cur.fetchone(sql("bench_mail_outcome"), {"id": email_id})
            body = llm_rules.draft(mail["subject"] or "", mail["body_text"] or "")
            cur.execute(sql("bench_insert_draft"),
                        {"email_id": email_id, "subject": f"Re: {mail['subject']}", "body": body})
            drafts.append(cur.lastrowid)
            cur.execute(sql("bench_mail_draft_ready"), {"id": email_id})
        # the process jobs of these mails are not run here: they would only get in the way
        cur.execute(sql("bench_send_skip_process_jobs"))
    return drafts


def bare_messages(db: Database, user: DovecotUser, mails: int) -> list[tuple[bytes, str, str]]:
    """The same replies the send job composes, with Message-IDs of their own."""
    rows = db.fetchall(sql("bench_send_drafts"), {"limit": mails})
    frm = user.config.reply_address
    return [(bytes(build_reply(message_id=f"<bare-{r['id']}@email-rag.invalid>", from_addr=frm,
                               from_name=user.config.name, to_addr=r["from_addr"],
                               subject=r["subject"], body=r["body_draft"],
                               in_reply_to=r["message_id"],
                               original_references=r["references_header"], draft_id=r["id"])),
             frm, r["from_addr"]) for r in rows]


def bare_loop(relay: Relay, messages: list[tuple[bytes, str, str]], reuse: bool,
              timeout: float) -> float:
    started = time.perf_counter()
    if reuse:
        with smtplib.SMTP(relay.host, relay.port, timeout=timeout) as smtp:
            for data, frm, to in messages:
                smtp.sendmail(frm, [to], data)
    else:
        for data, frm, to in messages:
            with smtplib.SMTP(relay.host, relay.port, timeout=timeout) as smtp:
                smtp.sendmail(frm, [to], data)
    return time.perf_counter() - started


def run(args: Any) -> Report:
    mails = args.mails or 500
    with Workspace("send") as ws:
        dovecot = Dovecot().start()
        ws.on_exit(dovecot.stop)
        user = dovecot.add_user()
        relay = Relay(ws.tmp)
        ws.on_exit(relay.stop)
        db = ws.fresh()
        settings = dict(mailboxes=[json.loads(user.config.model_dump_json())
                                   | {"password": user.password}],
                        smtp_host=relay.host, smtp_port=relay.port, smtp_security="plain",
                        worker_class=args.worker_class)
        drafts = make_drafts(db, user, mails)
        svc = Services(ws.settings(db, **settings))
        try:
            attempts = [approve(svc, d, "bench").message_id for d in drafts]
        finally:
            svc.close()
        env = ws.env(db, **settings)
        procs = [spawn("send-worker", ["-m", "email_rag", "worker", "--json", "--name",
                                       "bench-send"], env, ws.tmp)]
        r = ws.redis()
        try:
            wait_until(lambda: rq_workers(r) >= 1, 120, "the worker to start", procs=procs)
            from .pipeline import fail_fast

            def finished() -> bool:
                row = db.fetchone(sql("bench_jobs_finished"), {"kind": "send_draft"}) or {}
                if int(row.get("n") or 0) >= mails:
                    return True
                fail_fast(db)
                return False

            wait_until(finished, 60 + mails * 0.5, f"{mails} sends", interval=0.1, procs=procs)
        finally:
            stop(procs)
            r.close()
        window = db.fetchone(sql("bench_send_window")) or {}
        seconds = float(window["last"]) - float(window["first"])
        checks = check_sent(db, relay, attempts)
        worker = procs[0].result().get("data", {})
        messages = bare_messages(db, user, mails)
        timeout = ws.settings(db, **settings).smtp_timeout
        bare_new = bare_loop(relay, messages, reuse=False, timeout=timeout)
        bare_reuse = bare_loop(relay, [(d.replace(b"<bare-", b"<reuse-", 1), f, t)
                                       for d, f, t in messages], reuse=True, timeout=timeout)
        counts = relay.counts()
        bare_ids = [m for m in counts if m.startswith(("<bare-", "<reuse-"))]
        if len(bare_ids) != 2 * mails or any(counts[m] != 1 for m in bare_ids):
            raise CheckFailed(f"the bare loops' messages did not arrive once each "
                              f"({len(bare_ids)} distinct of {2 * mails})")
        db.close()
    rates = {"send job": rate(mails, seconds), "bare smtplib, new connection": rate(mails, bare_new),
             "bare smtplib, one connection": rate(mails, bare_reuse)}
    r_new = ratio(rates["send job"], rates["bare smtplib, new connection"])
    per_send = {k: round(float(worker[k]) / mails, 1) for k in
                ("db_commits", "db_statements", "redis_round_trips") if k in worker}
    figures = {"mails": mails, "sends_per_s": rates, "ratio": r_new,
               "ratio_reuse": ratio(rates["send job"], rates["bare smtplib, one connection"]),
               "per_send": per_send, "seconds": round(seconds, 2)}
    rows = [{"run": k, "sends/s": v,
             "ratio": ratio(rates["send job"], v) if k != "send job" else "",
             **(per_send if k == "send job" else {})} for k, v in rates.items()]
    summary = (f"send ({mails} drafts): send job {rates['send job']} sends/s vs bare smtplib "
               f"{rates['bare smtplib, new connection']} with a new connection per message "
               f"(ratio {r_new}), {rates['bare smtplib, one connection']} over one connection")
    notes = ["no target is set for sending (the design has none): a send is an RQ job that "
             "commits 'attempted' before the relay is contacted, sends, commits 'sent' and "
             "files the reply in the mailbox's Sent folder over IMAP - the bare loops only send"]
    return Report("send", summary, ["run", "sends/s", "ratio", "db_commits", "db_statements",
                                    "redis_round_trips"], rows, figures, [], checks, notes)


def check_sent(db: Database, relay: Relay, message_ids: list[str]) -> list[str]:
    rows = db.fetchall(sql("bench_send_attempts"))
    states = Counter((r["send_status"], r["draft_status"], r["mail_status"]) for r in rows)
    if states != Counter({("sent", "sent", "sent"): len(message_ids)}):
        raise CheckFailed(f"send attempts / drafts / mails: {dict(states)}; expected all sent")
    counts = relay.counts()
    wrong = {m: counts.get(m, 0) for m in message_ids if counts.get(m, 0) != 1}
    if wrong:
        raise CheckFailed(f"{len(wrong)} drafts did not reach the relay exactly once, e.g. "
                          f"{list(wrong.items())[:3]}")
    return [f"{len(message_ids)} drafts: attempt, draft and mail sent",
            "the relay received every Message-ID exactly once"]
