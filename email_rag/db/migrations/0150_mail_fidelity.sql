-- Mail fidelity (issue 15).
-- Dedup on Message-ID plus a content hash: a different mail that reuses a Message-ID is a
-- row of its own (kept for a human), an exact redelivery stays a duplicate. Rows stored
-- before this migration have content_hash '' (the poller hashes their stored raw mail
-- when a mail with the same Message-ID arrives).
ALTER TABLE emails ADD COLUMN IF NOT EXISTS content_hash CHAR(64) NOT NULL DEFAULT '' AFTER dedup_key;
ALTER TABLE emails ADD UNIQUE KEY IF NOT EXISTS uq_email_dedup_content (mailbox_id, dedup_key, content_hash);
ALTER TABLE emails DROP INDEX IF EXISTS uq_email_dedup;
CREATE INDEX IF NOT EXISTS ix_email_dedup ON emails (mailbox_id, dedup_key);

-- Whom a reply goes to and why (email_rag/ingest/addresses.py: choose_reply). NULL
-- reply_rule: stored before the rule existed (the reply then goes to from_addr).
ALTER TABLE emails ADD COLUMN IF NOT EXISTS reply_addr VARCHAR(320) NULL AFTER cc_addrs;
ALTER TABLE emails ADD COLUMN IF NOT EXISTS reply_rule VARCHAR(500) NULL AFTER reply_addr;

-- Text of the attachments (documents, text parts, forwarded mails), marked as
-- attachment content; written by the parse step, bounded (email_rag/ingest/mime.py).
ALTER TABLE emails ADD COLUMN IF NOT EXISTS attachment_text MEDIUMTEXT NULL AFTER attachments;

-- UIDs the IMAP server listed but returned no body for: the cursor waits below them and
-- they are fetched again; after EMAIL_RAG_MISSING_UID_POLLS polls they become a mail row
-- for a human.
CREATE TABLE IF NOT EXISTS missing_uids (
  mailbox_id INT NOT NULL,
  folder VARCHAR(255) NOT NULL,
  uidvalidity BIGINT UNSIGNED NOT NULL,
  uid BIGINT UNSIGNED NOT NULL,
  misses INT NOT NULL DEFAULT 0,
  first_missing_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  last_missing_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (mailbox_id, folder, uidvalidity, uid),
  CONSTRAINT fk_missing_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
