"""The mail-fidelity corpus through the real path, checked mail by mail.

GIVEN the 150+ mails of ``tests/corpus/mails`` (written by ``tests/corpus/generate.py``:
charsets, transfer encodings, addresses and reply rules, duplicates and reused
Message-IDs, bounded work, attachments as content, the loop guard, the MIME zoo and
hostile mails; reports, no-reply senders, raw 8-bit headers, a BOM, attachment-only mails
and mislabelled content of issue 26) APPENDed to a private Dovecot mailbox
WHEN the real poller polls it and the job runner processes every queued mail
THEN each stored row has the text, addresses, attachments and final state
``tests/corpus/expected.json`` says, and exact redeliveries have no row of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from tests.integration.realpath import RealPath

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
REST = {"draft_ready", "no_reply", "no_reply_suggested", "manual", "failed"}


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLMServer() as srv:
        yield srv


def check(exp: dict, row: dict, drafts: int) -> list[str]:
    wrong = []

    def want(key, actual):
        if key in exp and exp[key] != actual:
            wrong.append(f"{key}: expected {exp[key]!r}, got {actual!r}")

    def contains(key, text):
        for needle in exp.get(key, []):
            if needle not in (text or ""):
                wrong.append(f"{key}: {needle!r} not in {str(text)[:200]!r}")

    if "status" in exp and exp["status"] != row["status"]:
        wrong.append(f"status: expected {exp['status']!r}, got {row['status']!r} "
                     f"({row['status_reason']})")
    want("parse_status", row["parse_status"])
    want("auto_reason", row["auto_reason"])
    want("from_addr", row["from_addr"])
    want("from_name", row["from_name"])
    want("reply_addr", row["reply_addr"])
    want("subject", row["subject"])
    want("category", row["category"])
    contains("body_contains", row["body_text"])
    contains("parse_error_contains", row["parse_error"])
    contains("status_reason_contains", row["status_reason"])
    contains("reply_rule_contains", row["reply_rule"])
    contains("attachment_text_contains", row["attachment_text"])
    listed = json.loads(row["attachments"]) if row["attachments"] else []
    want("attachments", [a["filename"] for a in listed])
    contains("attachment_status_contains", " | ".join(str(a.get("text_status")) for a in listed))
    if "draft" in exp and exp["draft"] != bool(drafts):
        wrong.append(f"draft: expected {exp['draft']}, got {drafts} draft(s)")
    if row["status"] not in REST:
        wrong.append(f"status {row['status']} is not a rest state")
    return wrong


def test_every_corpus_mail_ends_as_expected(settings, mailbox, llm):
    expected = json.loads((CORPUS / "expected.json").read_text())
    assert len(expected) >= 150
    ours = mailbox.config.model_copy(update={"address": "support@example.com"})
    path = RealPath(settings, ours, llm, max_mail_bytes=250_000, max_attachment_bytes=50_000,
                    imap_fetch_batch=50)
    path.mailbox = mailbox  # APPEND straight to the Dovecot user
    try:
        path.deliver(*[(CORPUS / "mails" / e["file"]).read_bytes() for e in expected])
        result = path.poll()
        assert result.unpolled == []
        path.work()
        rows = {r["uid"]: r for r in path.db.fetchall("SELECT * FROM emails")}
        drafts = {r["email_id"]: r["n"] for r in path.db.fetchall(
            "SELECT email_id, COUNT(*) AS n FROM drafts GROUP BY email_id")}
        problems = []
        for uid, exp in enumerate(expected, start=1):
            row = rows.get(uid)
            if exp.get("row") == "duplicate":
                if row is not None:
                    problems.append(f"{exp['file']}: a redelivery got row {row['id']}")
                continue
            if row is None:
                problems.append(f"{exp['file']}: no row (lost)")
                continue
            problems += [f"{exp['file']} ({exp['class']}): {w}"
                         for w in check(exp, row, drafts.get(row["id"], 0))]
        assert not problems, "\n".join(problems)
        assert len(rows) == sum(1 for e in expected if e.get("row") != "duplicate")
    finally:
        path.close()
