-- The erasure's deletes (db/sql/privacy.sql, review/erasure.py) reach their rows by an index,
-- so a batch's transaction locks the rows of the mails it erases and no other: without these,
-- unlinking the answers to an erased reply scanned (and locked) every mail, unlinking bounces
-- every send attempt, and deleting the send jobs of the erased drafts every queue entry.
CREATE INDEX IF NOT EXISTS ix_email_answered_by ON emails (answered_by);
CREATE INDEX IF NOT EXISTS ix_send_bounce ON send_attempts (bounce_email_id);
CREATE INDEX IF NOT EXISTS ix_job_draft ON jobs (draft_id);
