-- Review desk (issue 18): sessions that can be revoked, login throttling per (name,
-- client), per-mailbox permissions, server-side autosave of reply edits, full-text search.

-- Every session carries the user's session_version; logout and disable raise it, so a
-- copied cookie is worthless afterwards. time_zone / ui_language: per-user display.
ALTER TABLE users ADD COLUMN IF NOT EXISTS session_version INT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN IF NOT EXISTS time_zone VARCHAR(64) NULL;
ALTER TABLE users ADD COLUMN IF NOT EXISTS ui_language VARCHAR(8) NULL;

-- Failed logins per (typed name, client address). name_key is the SHA-256 of the
-- lower-cased name as typed (a password typed into the name field is never stored), so an
-- unknown name is throttled exactly like a real one and one address cannot lock a user out
-- everywhere. lockouts counts the locks in a row: each lock lasts twice the previous one.
CREATE TABLE IF NOT EXISTS login_throttle (
  name_key CHAR(64) NOT NULL,
  client VARCHAR(64) NOT NULL,
  failures INT NOT NULL DEFAULT 0,
  lockouts INT NOT NULL DEFAULT 0,
  locked_until DATETIME(6) NULL,
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (name_key, client)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Mailboxes a staff member may see and act on (admins: all, no rows needed).
CREATE TABLE IF NOT EXISTS user_mailboxes (
  user_id INT NOT NULL,
  mailbox_id INT NOT NULL,
  PRIMARY KEY (user_id, mailbox_id),
  CONSTRAINT fk_um_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
  CONSTRAINT fk_um_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The reply text an agent is writing, saved as they type (one row per draft and agent).
-- A work buffer, not a state: approve/reject read the submitted text; the row shows
-- "being edited by X" to the others and restores the text after a reload or a conflict.
CREATE TABLE IF NOT EXISTS draft_edits (
  draft_id BIGINT NOT NULL,
  user_id INT NOT NULL,
  body MEDIUMTEXT NOT NULL,
  saved_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (draft_id, user_id),
  KEY ix_draft_edits_saved (draft_id, saved_at),
  CONSTRAINT fk_de_draft FOREIGN KEY (draft_id) REFERENCES drafts (id) ON DELETE CASCADE,
  CONSTRAINT fk_de_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Queue search over subject, sender and text.
ALTER TABLE emails ADD FULLTEXT INDEX IF NOT EXISTS ft_email_search (subject, from_addr, from_name, body_text);

-- The review queue: drafts waiting for a human, with what the desk sorts and pages by.
-- waiting_since is when the customer sent the mail (its Date header), never later than
-- when we received it (a sender's clock in the future does not hide a mail). The key_*
-- columns are the binary sort keys of each order (keyset paging: key, then draft id).
CREATE OR REPLACE VIEW review_queue AS
SELECT d.id, d.email_id, d.version, d.status, d.check_flags, d.created_at,
       e.subject, e.from_addr, e.from_name, e.category, e.priority, e.language, e.mailbox_id,
       e.received_at, m.name AS mailbox,
       LEAST(COALESCE(e.sent_at, e.received_at), e.received_at) AS waiting_since,
       CAST(DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at),
                        '%Y%m%d%H%i%s%f') AS BINARY) AS key_waiting,
       CAST(CONCAT(CASE e.priority WHEN 'urgent' THEN 1 WHEN 'high' THEN 2 WHEN 'normal' THEN 3
                                   WHEN 'low' THEN 4 ELSE 5 END,
                   DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at),
                               '%Y%m%d%H%i%s%f')) AS BINARY) AS key_priority,
       CAST(CONCAT(m.name, CHAR(9), DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at),
                                                      e.received_at), '%Y%m%d%H%i%s%f'))
            AS BINARY) AS key_mailbox
  FROM drafts d JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE d.status IN ('pending_review', 'stale');

-- The instruction staff gave with their last Regenerate ("more formal", "in German"); the
-- draft step gives it to the LLM as the agent's request (trusted, unlike the mail).
ALTER TABLE emails ADD COLUMN IF NOT EXISTS draft_instruction VARCHAR(500) NULL;
