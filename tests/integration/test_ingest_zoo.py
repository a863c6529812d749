"""A folder full of bad input is polled to the end; the parse step finishes each mail."""

from __future__ import annotations

import json

from email_rag_harness.testing.mails import ZOO_EXPECTED, garbage, zoo

from email_rag.core.records import Job, Mail
from email_rag.core.states import JobKind, JobState, Step
from email_rag.db import sql
from email_rag.ingest.poller import Poller
from email_rag.pipeline import parse
from email_rag.pipeline.contract import StepContext
from tests.factories import make_email
from tests.integration.ingest_helpers import emails, jobs, services_for

LIMITS = dict(max_mail_bytes=200_000, max_attachment_bytes=50_000)


def _apply(db, email_id: int, updates: dict) -> None:
    """What the worker does with a step's email_updates (here: just the UPDATE)."""
    cols = ", ".join(f"{k} = ?" for k in updates)
    db.execute(f"UPDATE emails SET {cols} WHERE id = ?", (*updates.values(), email_id))


def test_zoo_folder_is_polled_to_the_end_and_parsed(settings, db, mailbox):
    """GIVEN the MIME zoo in a folder WHEN polled THEN every mail is stored (garbage as failed,
    the huge one headers-only) AND the parse step gives each the expected parse status."""
    z = zoo(huge_bytes=300_000)
    mailbox.create_folder("Zoo")
    mailbox.deliver(z.values(), "Zoo")
    config = mailbox.config.model_copy(update={"folders": ["Zoo"]})
    svc = services_for(settings, config, imap_fetch_batch=4, **LIMITS)
    try:
        result = Poller(svc).poll()
        t = result.totals
        assert (t["fetched"], t["new"], t["failed"], t["too_large"], t["queued"]) == (
            len(z), len(z), 1, 1, len(z) - 2)
        rows = {r["uid"]: r for r in emails(db)}
        assert len(rows) == len(z)
        by_name = dict(zip(z, (rows[uid] for uid in sorted(rows)), strict=True))
        huge, bad = by_name["huge"], by_name["garbage"]
        assert (huge["status"], huge["parse_status"]) == ("manual", "too_large")
        assert huge["raw_size"] > 300_000 and len(huge["raw"]) < 2_000
        assert huge["subject"] == "Riesige Mail" and "above the limit" in huge["parse_error"]
        assert (bad["status"], bad["parse_status"]) == ("failed", "failed")
        # stored whole, as IMAP delivered it (Dovecot sends NUL as 0x80 and LF as CRLF)
        assert bytes(bad["raw"]).startswith(b"\x80\xff\xfe") and bad["raw_size"] == len(bad["raw"])
        assert "no header fields" in bad["parse_error"]
        assert by_name["encoded_headers"]["subject"] == "Reklamation: Ärger mit der Lieferung"
        assert by_name["no_date"]["sent_at"] is None
        assert by_name["no_message_id"]["message_id"] is None
        # the worker's parse step on every queued mail
        job_of = {j["email_id"]: Job.from_row(j) for j in jobs(db)}
        for name, row in by_name.items():
            if row["id"] not in job_of:
                continue
            out = parse.run(StepContext(svc, read_mail(db, row["id"]), job_of[row["id"]],
                                        Step.PARSE))
            assert out.email_updates["parse_status"] == ZOO_EXPECTED[name][0], name
            assert out.confirmed and not out.stop
            _apply(db, row["id"], out.email_updates)
        multi = db.fetchone("SELECT * FROM emails WHERE id = ?", (by_name["multipart"]["id"],))
        assert multi["parse_status"] == "ok" and "Rechnung anbei" in multi["body_text"]
        assert {a["filename"] for a in json.loads(multi["attachments"])} == {
            "rechnung.pdf", "gross.bin"}
        wrong = db.fetchone("SELECT * FROM emails WHERE id = ?",
                            (by_name["wrong_charset"]["id"],))
        assert wrong["parse_status"] == "partial" and "us-ascii" in wrong["parse_error"]
        assert wrong["body_text"].startswith("Grüße aus Köln")
    finally:
        svc.close()


JOB = Job(1, JobKind.PROCESS_EMAIL, JobState.PROCESSING, "email-rag", attempts=1)


def read_mail(db, email_id: int) -> Mail:
    """The mail as the pipeline runner reads it (no raw source: the parse step reads it)."""
    return Mail.from_row(db.fetchone(sql("pipeline_mail"), {"id": email_id}))


def test_parse_step_stops_failed_and_too_large_mails_for_a_human(settings, db, mailbox):
    svc = services_for(settings, mailbox, **LIMITS)
    try:
        bad = make_email(db, raw=garbage(), raw_size=2051, parse_status="pending")
        out = parse.run(StepContext(svc, read_mail(db, bad), JOB, Step.PARSE))
        assert out.stop and out.mail_status == "failed" and out.confirmed
        assert out.email_updates["index_status"] == "skipped"
        assert "no header fields" in out.status_reason
        head = zoo()["huge"].split(b"\r\n\r\n")[0] + b"\r\n\r\n"
        huge = make_email(db, raw=head, raw_size=300_000, parse_status="too_large")
        big = parse.run(StepContext(svc, read_mail(db, huge), JOB, Step.PARSE))
        assert big.stop and big.mail_status == "manual"
        assert big.email_updates["parse_status"] == "too_large"
    finally:
        svc.close()
