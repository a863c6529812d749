"""`email-rag chaos` for real: the whole pipeline (private Dovecot, the real poller in the
workers, three worker processes, the scheduler, the scripted LLM server, the fault SMTP
relay, Qdrant local, MariaDB and Redis of this machine) under the seeded fault plan,
both columns, through the CLI in a subprocess. About 1.5 minutes on 2 cores."""

from __future__ import annotations

import json

import pytest

from email_rag.chaos.verify import NAIVE_MUST_SHOW, PROMISED_ZERO
from tests.helpers import run_cli

pytestmark = pytest.mark.slow


def test_small_plan_hardened_keeps_every_promise_and_naive_shows_every_defect():
    """GIVEN 60 generated mails (duplicates, threads, auto-replies, malformed) and the
    default fault plan of seed 7 (LLM timeouts/invalid JSON/429/5xx, a Qdrant outage,
    SMTP 421/451/550/drop/stalls, IMAP cuts, SIGKILLed workers mid-step and between SMTP
    accept and marking sent, MariaDB connections killed and MariaDB unreachable, Redis
    flushed, duplicate queue deliveries)
    WHEN `email-rag chaos --mails 60 --seed 7 --json` runs
    THEN it exits 0: the hardened column is zero where zero is promised, the faults
    really happened (kills, retries, a reconciliation, a repaired partial index), and
    the naive column shows duplicate mails, drafts and sends."""
    proc = run_cli("chaos", "--mails", "60", "--seed", "7", "--json", timeout=400)
    assert proc.stdout, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    hardened = out["data"]["columns"]["hardened"]
    naive = out["data"]["columns"]["naive"]
    findings = out["data"]["runs"]["hardened"]["findings"]
    assert proc.returncode == 0, (out["message"], findings, proc.stderr[-3000:])
    assert out["ok"] and out["data"]["verdict"] == {"ok": True, "reasons": []}

    assert {k: hardened[k] for k in PROMISED_ZERO} == dict.fromkeys(PROMISED_ZERO, 0)
    assert out["data"]["runs"]["hardened"]["settled"]
    # the faults were real, not skipped
    assert hardened["hard_kills"] >= 3 and hardened["process_starts"] >= 4 + 3
    assert hardened["retries"] > 0 and hardened["stuck_resets"] > 0
    assert hardened["reconciled_sent"] > 0
    assert hardened["unknown_sends"] > 0  # the stall the relay did not file: a human decides
    assert hardened["partially_indexed"] > 0
    assert hardened["duplicate_deliveries_dropped"] > 0
    assert hardened["replies_received"] > 20

    assert all(naive[k] > 0 for k in NAIVE_MUST_SHOW), naive
    assert naive["reconciled_sent"] == 0  # no reconciliation without the safeguards
