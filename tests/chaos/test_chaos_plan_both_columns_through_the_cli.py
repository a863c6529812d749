"""`email-rag chaos` for real: the whole pipeline (private Dovecot, the real poller in the
workers, three worker processes, the scheduler, the scripted LLM server, the fault SMTP
relay, Qdrant local, and per column a private mariadbd and redis-server that the plan
kills and restarts) under the seeded fault plan, both columns, through the CLI in a
subprocess. About 4.5 minutes on 2 cores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from email_rag_harness.chaos.harness import COUNTER_CHECKS
from email_rag_harness.chaos.verify import NAIVE_MUST_SHOW, PROMISED_ZERO

from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.slow


def test_small_plan_hardened_keeps_every_promise_and_naive_shows_every_defect():
    """GIVEN 60 generated mails (duplicates, threads, race follow-ups, auto-replies,
    malformed) and the default plan of seed 7: the run's own mariadbd and redis-server
    killed with kill -9 and restarted (one MariaDB outage >= 20 s), MariaDB hung, vector
    entries misrouted to plain workers, LLM timeouts/invalid JSON/429/5xx, a Qdrant outage,
    SMTP 421/451/550/drop/stalls, IMAP cuts, SIGKILLed workers, Redis flushed, duplicate
    deliveries, the OAuth2 token endpoint answering invalid_grant until an admin authorizes
    again; admins retrying from a stale console, retrying a refused send, deciding
    unknown sends, staff regenerating
    WHEN `email-rag chaos --mails 60 --seed 7 --json` runs
    THEN it exits 0: the hardened column is zero where zero is promised (no stranded or
    reopened mail, liveness held), the faults and acts really happened, and the naive
    column shows duplicate mails, drafts and sends. Each check is on what happened, not
    on timing: faults that must meet work wait for it (see chaos.faults)."""
    proc = run_cli("chaos", "--mails", "60", "--seed", "7", "--json", timeout=1200)
    assert proc.stdout, f"exit {proc.returncode}; stderr ends:\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout)
    hardened = out["data"]["columns"]["hardened"]
    naive = out["data"]["columns"]["naive"]
    findings = out["data"]["runs"]["hardened"]["findings"]
    assert proc.returncode == 0, (out["message"], findings, proc.stderr[-3000:])
    assert out["ok"] and out["data"]["verdict"] == {"ok": True, "reasons": []}
    # the run record of every long command: its items are the columns
    assert (out["status"], out["processed"], out["failed"], out["remaining"],
            out["resumeAvailable"]) == ("completed", 2, 0, 0, False)

    assert {k: hardened[k] for k in PROMISED_ZERO} == dict.fromkeys(PROMISED_ZERO, 0)
    assert out["data"]["runs"]["hardened"]["settled"]
    # the faults and acts were real, not skipped
    assert hardened["server_crashes"] >= 3 and hardened["longest_outage_s"] >= 18
    assert hardened["admin_actions"] >= 4
    assert hardened["hard_kills"] >= 3 and hardened["process_starts"] >= 4 + 3
    assert hardened["retries"] > 0 and hardened["stuck_resets"] > 0
    assert hardened["reconciled_sent"] > 0
    assert hardened["partially_indexed"] > 0
    assert hardened["duplicate_deliveries_dropped"] > 0
    assert hardened["replies_received"] > 20
    # seed 7 draws the OAuth2 token endpoint answering invalid_grant: ALARM, audit and the
    # admin's new authorization are promised zeros above; the refreshes really met the fault
    assert hardened["oauth_faults"] == 1 and hardened["oauth_fault_token_requests"] >= 1

    assert all(naive[k] > 0 for k in NAIVE_MUST_SHOW), naive
    assert naive["reconciled_sent"] == 0  # no reconciliation without the safeguards


def test_a_chaos_run_stopped_by_sigterm_prints_the_interrupted_record():
    """GIVEN `email-rag chaos --mails 10 --counter-checks --json` (hardened, one column per
    safeguard, naive) WHEN it gets SIGTERM while its first column runs THEN it stops every
    process it started and prints the interrupted record: exit 2, no column done, all of
    them remaining, resumeAvailable, and next the same plan again."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH",
                                                                               "")}
    proc = subprocess.Popen([sys.executable, "-m", "email_rag", "chaos", "--mails", "10",
                             "--seed", "3", "--counter-checks", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:  # the harness says when a column starts
            if "running the hardened column" in line:
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 2, out + err[-3000:]
    record = json.loads(out)
    assert (record["status"], record["processed"], record["remaining"],
            record["resumeAvailable"], record["verified"]) == (
        "interrupted", 0, len(COUNTER_CHECKS) + 2, True, None)
    assert record["next"] == "email-rag chaos --mails 10 --seed 3 --counter-checks"
