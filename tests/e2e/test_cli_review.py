"""Staff review through the real CLI: list, show, approve (twice, concurrently), reject, sends."""

import json
import subprocess
import sys

from tests.factories import make_draft, make_email, make_mailbox
from tests.helpers import ROOT, run_cli


def test_drafts_list_show_approve_reject(env, db, tmp_path):
    mailbox = make_mailbox(db)
    m1 = make_email(db, mailbox, subject="<script>alert(1)</script> broken", category="technical")
    m2 = make_email(db, mailbox, subject="Invoice wrong", category="billing")
    d1, d2 = make_draft(db, m1), make_draft(db, m2)

    listed = json.loads(run_cli("drafts", "list", "--json").stdout)
    assert [d["id"] for d in listed["data"]["drafts"]] == [d1, d2]
    only = json.loads(run_cli("drafts", "list", "--category", "billing", "--json").stdout)
    assert [d["id"] for d in only["data"]["drafts"]] == [d2]

    shown = run_cli("drafts", "show", str(d1))
    assert shown.returncode == 0 and "original mail (untrusted text)" in shown.stdout

    edit = tmp_path / "reply.txt"
    edit.write_text("Hello Alice,\nfixed.\n")
    approved = run_cli("drafts", "approve", str(d1), "--by", "anna", "--edit-file", str(edit), "--json")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    out = json.loads(approved.stdout)["data"]
    assert out["action"] == "approved" and out["message_id"].startswith("<draft-")
    assert db.fetchone("SELECT body_final FROM drafts WHERE id = %s", (d1,))["body_final"] == "Hello Alice,\nfixed.\n"

    rejected = run_cli("drafts", "reject", str(d2), "--by", "ben", "--reason", "duplicate")
    assert rejected.returncode == 0 and "rejected" in rejected.stdout
    missing = run_cli("drafts", "approve", "9999", "--by", "anna", "--json")
    assert missing.returncode == 1 and "DraftNotFoundError" in json.loads(missing.stdout)["data"]["error"]
    no_by = run_cli("drafts", "approve", str(d2))
    assert no_by.returncode == 1 and "--by" in no_by.stdout  # a usage error is an error, not 2


def test_two_terminals_approving_at_once_create_one_attempt(env, db):
    draft = make_draft(db, make_email(db))
    cmd = [sys.executable, "-m", "email_rag", "drafts", "approve", str(draft), "--json"]
    import os

    e = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(cmd + ["--by", f"user{i}"], stdout=subprocess.PIPE, text=True, env=e)
             for i in range(3)]
    actions = sorted(json.loads(p.communicate(timeout=180)[0])["data"]["action"] for p in procs)
    assert actions == ["already_approved", "already_approved", "approved"]
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1
    assert db.fetchone("SELECT COUNT(*) AS n FROM jobs WHERE kind = 'send_draft'")["n"] == 1


def test_unknown_send_is_decided_by_an_admin(env, db):
    draft = make_draft(db, make_email(db))
    run_cli("drafts", "approve", str(draft), "--by", "anna")
    db.execute("UPDATE send_attempts SET status = 'unknown' WHERE draft_id = %s", (draft,))
    listed = json.loads(run_cli("sends", "list", "--status", "unknown", "--json").stdout)
    [attempt] = listed["data"]["sends"]
    res = run_cli("sends", "resolve", str(attempt["id"]), "--mark-sent", "--by", "root", "--note",
                  "customer confirmed", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["data"]["status"] == "sent"
    assert json.loads(res.stdout)["data"]["outcome"] == "marked sent by root, not verified"
    assert db.fetchone("SELECT e.status FROM emails e JOIN drafts d ON d.email_id = e.id"
                       " WHERE d.id = %s", (draft,))["status"] == "sent"
    again = run_cli("sends", "resolve", str(attempt["id"]), "--resend", "--by", "root")
    assert again.returncode == 1 and "not unknown" in again.stdout


def test_drafts_list_tells_the_true_count_and_pages_on(env, db):
    """GIVEN 5 drafts waiting in two mailboxes
    WHEN `drafts list --limit 2` runs, then again with the cursor it printed
    THEN it says "2 of 5" (not "2 drafts waiting"), the pages follow each other without a gap
    or a repeat, and --mailbox / --search narrow the count the same way the web desk does."""
    a, b = make_mailbox(db, "support"), make_mailbox(db, "billing")
    drafts = [make_draft(db, make_email(db, a, subject=f"Drucker {i} defekt")) for i in range(3)]
    drafts += [make_draft(db, make_email(db, b, subject=f"Rechnung {i}")) for i in range(2)]

    first = json.loads(run_cli("drafts", "list", "--limit", "2", "--json").stdout)
    assert first["data"]["total"] == 5 and len(first["data"]["drafts"]) == 2
    assert first["message"].startswith("2 of 5 draft(s) waiting for review")
    cursor = first["data"]["next_cursor"]
    assert cursor and f"--after {cursor}" in first["message"]
    seen = [d["id"] for d in first["data"]["drafts"]]
    while cursor:
        page = json.loads(run_cli("drafts", "list", "--limit", "2", "--after", cursor,
                                  "--json").stdout)["data"]
        seen += [d["id"] for d in page["drafts"]]
        cursor = page["next_cursor"]
    assert sorted(seen) == sorted(drafts) and len(seen) == 5

    billing = json.loads(run_cli("drafts", "list", "--mailbox", "billing", "--json").stdout)
    assert billing["data"]["total"] == 2
    found = json.loads(run_cli("drafts", "list", "--search", "drucker", "--json").stdout)
    assert found["data"]["total"] == 3
    bad = run_cli("drafts", "list", "--limit", "0", "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["exit_code"] == 1


def test_drafts_list_fits_the_terminal_width(env, db):
    """GIVEN a draft whose mail has a 994-character subject WHEN `drafts list` runs in a
    120-column terminal THEN no line is wider than 120 characters: the subject column is
    cut (marked with '…'), the other columns are whole, and --json keeps the whole subject."""
    mailbox = make_mailbox(db)
    long = "Rechnung 4711 " + "sehr lang " * 98  # 994 characters (the column holds 998)
    short = make_email(db, mailbox, subject="Kurz", category="billing")
    wide = make_email(db, mailbox, subject=long, category="billing")
    make_draft(db, short), make_draft(db, wide)
    out = run_cli("drafts", "list", env_extra={"COLUMNS": "120"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, [len(line) for line in lines]
    assert any("Rechnung 4711 sehr" in line and line.endswith("…") for line in lines)
    assert any(line.rstrip().endswith("Kurz") for line in lines)
    data = json.loads(run_cli("drafts", "list", "--json", env_extra={"COLUMNS": "120"}).stdout)
    assert long in [d["subject"] for d in data["data"]["drafts"]]
