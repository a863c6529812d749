"""The stages' mail read (core.records.Mail): an explicit column list, never the raw mail."""

from __future__ import annotations

import re

from email_rag.core.records import MAIL_COLUMNS, Mail
from email_rag.db import sql


def selected(name: str) -> list[str]:
    text = sql(name)
    columns = re.search(r"SELECT\s+(.*?)\s+FROM\s", text, re.S).group(1)
    return [c.strip() for c in columns.split(",")]


def test_the_mail_reads_select_exactly_the_records_fields_and_never_the_raw_mail():
    for name in ("pipeline_mail", "index_partial_batch", "index_all_batch"):
        cols = selected(name)
        assert tuple(cols) == MAIL_COLUMNS, name
        assert "raw" not in cols and "body_html" not in cols and "*" not in cols


def test_a_step_s_columns_update_the_record_and_unknown_columns_are_left_out():
    mail = Mail(7, "received", subject="Hi", index_status="pending")
    after = mail.with_columns({"status": "classified", "category": "billing",
                               "body_html": "<p>x</p>", "needs_reply": True})
    assert (after.status, after.category, after.needs_reply) == ("classified", "billing", True)
    assert mail.status == "received" and mail.category is None  # the record is frozen
    assert "body_html" not in after.as_row() and after.as_row()["subject"] == "Hi"


def test_one_named_query_creates_job_rows():
    """Every product path that creates queue entries goes through jobs.store.create_jobs and
    its one named query (the harness's own files aside: bench, chaos, demo)."""
    from email_rag.db.queries import SQL_DIR, parse_named_queries

    harness = {"bench.sql", "chaos.sql", "demo.sql"}
    inserting = [name for p in SQL_DIR.iterdir() if p.name.endswith(".sql")
                 and p.name not in harness
                 for name, text in parse_named_queries(p.read_text(), p.name).items()
                 if re.search(r"\bINSERT\s+(IGNORE\s+)?INTO\s+jobs\b", text, re.I)]
    assert inserting == ["jobs_insert"]


def test_the_runner_reads_the_mail_with_its_mailbox_name_and_the_raw_mail_only_on_request():
    """pipeline_run_mail: the record's fields (from emails) and the mailbox's name;
    pipeline_run_mail_raw: the same and the raw source, nothing else."""
    plain = [c.removeprefix("e.") for c in selected("pipeline_run_mail")]
    assert tuple(plain) == (*MAIL_COLUMNS, "m.name AS mailbox_name")
    raw = [c.removeprefix("e.") for c in selected("pipeline_run_mail_raw")]
    assert raw == [*plain, "raw"]
