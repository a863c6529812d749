-- The desk's case work (issue 28). A mail put aside until a date (pending / snoozed on the desk, email_rag.review.snooze):
-- its drafts leave the queue's views (All, Mine, Unassigned) and are listed under Snoozed
-- until until_at (UTC) has passed; the row is then deleted with an audit event
-- (snooze_ended). At most one per mail; it goes with its mail.
CREATE TABLE IF NOT EXISTS mail_snoozes (
  email_id BIGINT NOT NULL PRIMARY KEY,
  until_at DATETIME(6) NOT NULL,
  snoozed_by VARCHAR(100) NOT NULL,
  snoozed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_snoozes_until (until_at),
  CONSTRAINT fk_snooze_email FOREIGN KEY (email_id) REFERENCES emails (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Search over every mail and reply (email_rag.review.search): the mails use the desk's
-- FULLTEXT index ft_email_search (0185); our replies get the same kind of index on their
-- text (the generated one and the one that went out).
ALTER TABLE drafts ADD FULLTEXT INDEX IF NOT EXISTS ft_draft_text (body_draft, body_final);

-- The customer page: every mail of one sender address, whatever its mailbox.
CREATE INDEX IF NOT EXISTS ix_email_sender ON emails (from_addr(191), received_at);
