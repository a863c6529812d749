-- The team's labelled examples (issue 27): one row per mail whose labels a person confirmed
-- (source: correction | approval | no_reply | history), written in the transaction of that
-- human action. vector: the mail's embedding (float32, little-endian) by ``embedder``; NULL
-- when embedding failed at that moment (the classify step embeds it later; the label is
-- never lost). The classify step learns category, priority and needs_reply from them.
CREATE TABLE IF NOT EXISTS labelled_examples (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  mailbox_id INT NOT NULL,
  email_id BIGINT NOT NULL,
  source VARCHAR(16) NOT NULL,
  category VARCHAR(32) NOT NULL,
  priority VARCHAR(16) NOT NULL,
  needs_reply TINYINT(1) NOT NULL,
  embedder VARCHAR(100) NULL,
  vector MEDIUMBLOB NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_example_email (email_id),
  KEY ix_example_mailbox (mailbox_id, id),
  CONSTRAINT fk_example_email FOREIGN KEY (email_id) REFERENCES emails (id) ON DELETE CASCADE,
  CONSTRAINT fk_example_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Per mail: where each classification field came from and how sure (JSON, see
-- email_rag.pipeline.classify), shown to staff on the draft page.
ALTER TABLE emails ADD COLUMN IF NOT EXISTS classification_sources JSON NULL;
