"""The real CLI tells only what is verified (issue 16): no "sent" before the relay answered,
and exit codes that mean one thing (0 ok, 1 error - usage errors too -, 2 some items failed,
3 verification failed), with the --json object whenever --json was given."""

from __future__ import annotations

import json
import re

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.helpers import run_cli
from tests.integration.test_send_outcomes import MemoryRunner
from tests.integration.test_sending import MemorySentFolder


def says_sent(text: str) -> bool:
    """Whether a text claims the reply was sent ("not sent yet" is no such claim)."""
    return bool(re.search(r"\bsent\b", text.lower().replace("not sent yet", "")))


def test_no_sent_wording_before_the_relay_answered_then_accepted_by_the_relay(env, db, settings):
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    approved = run_cli("drafts", "approve", str(draft), "--by", "anna")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "approved — queued to send, not sent yet" in approved.stdout
    assert not says_sent(approved.stdout), approved.stdout
    shown = run_cli("drafts", "show", str(draft))
    [reply_line] = [ln for ln in shown.stdout.splitlines() if ln.startswith("Reply: ")]
    assert not says_sent(reply_line), reply_line
    listed = json.loads(run_cli("sends", "list", "--json").stdout)["data"]["sends"]
    assert [not says_sent(s["outcome"]) for s in listed] == [True]
    again = run_cli("drafts", "approve", str(draft), "--by", "ben")  # a second terminal
    assert "already approved" in again.stdout and not says_sent(again.stdout), again.stdout

    # the relay answers 250: now, and only now, it says sent, and how we know
    with FaultSmtpServer() as relay:
        settings.smtp_port, settings.smtp_timeout = relay.port, 30.0  # the relay: a thread
        svc = Services(settings)
        try:
            job = db.fetchone("SELECT id FROM jobs WHERE draft_id = %s", (draft,))["id"]
            assert MemoryRunner(svc, MemorySentFolder()).run(job) == "done"
        finally:
            svc.close()
    [sent] = json.loads(run_cli("sends", "list", "--json").stdout)["data"]["sends"]
    assert sent["verified_by"] == "relay_250"
    assert sent["outcome"].startswith("sent — accepted by the relay at ")
    assert "Reply: sent — accepted by the relay at " in run_cli("drafts", "show", str(draft)).stdout


USAGE_ERRORS = [  # one per command family: missing, unknown or malformed arguments
    (),
    ("nosuch",),
    ("drafts", "approve", "12"),  # --by missing
    ("drafts", "show", "twelve"),
    ("sends", "resolve", "1", "--by", "root"),  # no decision
    ("sends", "list", "--status", "maybe"),
    ("failed", "resolve", "3"),  # --note missing
    ("jobs", "list", "--state", "sleeping"),
    ("mails", "--bogus"),
    ("users", "add"),
    ("poll", "--bogus"),
    ("reindex", "--bogus"),
    ("migrate", "--bogus"),
    ("status", "--bogus"),
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=lambda a: " ".join(a) or "(nothing)")
def test_usage_errors_exit_1_never_2_and_print_json_when_asked(argv):
    human = run_cli(*argv)
    assert human.returncode == 1, human.stdout + human.stderr
    assert "Usage error" in human.stdout and "usage: email-rag" in human.stdout
    as_json = run_cli(*argv, "--json")
    assert as_json.returncode == 1, as_json.stdout + as_json.stderr
    out = json.loads(as_json.stdout)
    assert (out["ok"], out["exit_code"], out["data"]["error"]) == (False, 1, "usage")


def test_exit_codes_0_1_2_3_mean_one_thing_each(env, db):
    mailbox = make_mailbox(db)
    # 0: ok
    ok = run_cli("sends", "list", "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["exit_code"] == 0
    # 1: an error (the item does not exist), with the JSON object
    err = run_cli("drafts", "approve", "999", "--by", "anna", "--json")
    assert err.returncode == 1 and json.loads(err.stdout)["exit_code"] == 1
    # 2: some items failed, the others succeeded (retry of every dead entry: one retried,
    # one refused because its mail is resolved)
    retryable = make_email(db, mailbox, status="failed")
    closed = make_email(db, mailbox, status="resolved", subject="closed")
    make_job(db, retryable, state="dead")
    make_job(db, closed, state="dead")
    partial = run_cli("failed", "retry", "--all", "--by", "root", "--json")
    out = json.loads(partial.stdout)
    assert partial.returncode == 2 and out["exit_code"] == 2, partial.stdout
    assert len(out["data"]["retried"]) == 1 and len(out["data"]["refused"]) == 1
    # 3: verification failed (the schema the code expects is not there)
    db.execute("ALTER TABLE send_attempts DROP COLUMN verified_by")
    verify = run_cli("migrate", "--json")
    assert verify.returncode == 3 and json.loads(verify.stdout)["exit_code"] == 3, verify.stdout
