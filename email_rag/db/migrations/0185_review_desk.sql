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

-- The review queue: drafts waiting for a human, as the desk shows them. waiting_since is
-- when the customer sent the mail (its Date header), never later than when we received it
-- (a sender's clock in the future does not hide a mail).
CREATE OR REPLACE VIEW review_queue AS
SELECT d.id, d.email_id, d.version, d.status, d.check_flags, d.created_at,
       e.subject, e.from_addr, e.from_name, e.category, e.priority, e.language, e.mailbox_id,
       e.received_at, m.name AS mailbox,
       LEAST(COALESCE(e.sent_at, e.received_at), e.received_at) AS waiting_since
  FROM drafts d JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE d.status IN ('pending_review', 'stale');

-- Its sort index: one row per waiting draft and sort order (waiting | priority | mailbox)
-- with a binary sort key, so a page, "x of N", Next and Previous are index range reads
-- (keyset paging on (sort, sort_key, draft_id)) instead of sorting the whole queue. It is
-- derived data, kept exact by the triggers below in the same transaction as every write
-- to drafts and emails; the stores know nothing of it. Filters the desk applies (mailbox,
-- category, permissions, search by email_id) are columns of the row.
CREATE TABLE IF NOT EXISTS review_queue_keys (
  sort VARCHAR(8) NOT NULL,
  sort_key VARBINARY(160) NOT NULL,
  draft_id BIGINT NOT NULL,
  email_id BIGINT NOT NULL,
  mailbox_id INT NOT NULL,
  mailbox VARCHAR(100) NOT NULL,
  category VARCHAR(32) NULL,
  PRIMARY KEY (sort, sort_key, draft_id),
  KEY ix_rqk_draft (draft_id),
  KEY ix_rqk_email (email_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TRIGGER IF NOT EXISTS review_queue_draft_insert AFTER INSERT ON drafts FOR EACH ROW
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT srt.sort,
       CAST(CASE srt.sort
              WHEN 'priority' THEN CONCAT(CASE e.priority WHEN 'urgent' THEN 1 WHEN 'high' THEN 2
                                          WHEN 'normal' THEN 3 WHEN 'low' THEN 4 ELSE 5 END, DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
              WHEN 'mailbox' THEN CONCAT(m.name, CHAR(9), DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
              ELSE DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f')
            END AS BINARY),
       NEW.id, e.id, e.mailbox_id, m.name, e.category
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id JOIN (SELECT 'waiting' AS sort UNION ALL SELECT 'priority' UNION ALL SELECT 'mailbox') srt
 WHERE e.id = NEW.email_id
   AND NEW.status IN ('pending_review', 'stale');

CREATE TRIGGER IF NOT EXISTS review_queue_draft_leave AFTER UPDATE ON drafts FOR EACH ROW
DELETE FROM review_queue_keys
 WHERE draft_id = NEW.id AND NEW.status NOT IN ('pending_review', 'stale');

CREATE TRIGGER IF NOT EXISTS review_queue_draft_enter AFTER UPDATE ON drafts FOR EACH ROW
FOLLOWS review_queue_draft_leave
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT srt.sort,
       CAST(CASE srt.sort
              WHEN 'priority' THEN CONCAT(CASE e.priority WHEN 'urgent' THEN 1 WHEN 'high' THEN 2
                                          WHEN 'normal' THEN 3 WHEN 'low' THEN 4 ELSE 5 END, DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
              WHEN 'mailbox' THEN CONCAT(m.name, CHAR(9), DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
              ELSE DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f')
            END AS BINARY),
       NEW.id, e.id, e.mailbox_id, m.name, e.category
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id JOIN (SELECT 'waiting' AS sort UNION ALL SELECT 'priority' UNION ALL SELECT 'mailbox') srt
 WHERE e.id = NEW.email_id
   AND NEW.status IN ('pending_review', 'stale')
   AND OLD.status NOT IN ('pending_review', 'stale');

CREATE TRIGGER IF NOT EXISTS review_queue_draft_delete AFTER DELETE ON drafts FOR EACH ROW
DELETE FROM review_queue_keys WHERE draft_id = OLD.id;

-- a corrected priority or category, or a changed date: the mail's waiting drafts get new keys
CREATE TRIGGER IF NOT EXISTS review_queue_email_forget AFTER UPDATE ON emails FOR EACH ROW
DELETE FROM review_queue_keys
 WHERE email_id = NEW.id
   AND NOT (NEW.priority <=> OLD.priority AND NEW.category <=> OLD.category
            AND NEW.sent_at <=> OLD.sent_at AND NEW.received_at <=> OLD.received_at
            AND NEW.mailbox_id <=> OLD.mailbox_id);

CREATE TRIGGER IF NOT EXISTS review_queue_email_rekey AFTER UPDATE ON emails FOR EACH ROW
FOLLOWS review_queue_email_forget
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT srt.sort,
       CAST(CASE srt.sort
              WHEN 'priority' THEN CONCAT(CASE NEW.priority WHEN 'urgent' THEN 1 WHEN 'high' THEN 2
                                          WHEN 'normal' THEN 3 WHEN 'low' THEN 4 ELSE 5 END, DATE_FORMAT(LEAST(COALESCE(NEW.sent_at, NEW.received_at), NEW.received_at), '%Y%m%d%H%i%s%f'))
              WHEN 'mailbox' THEN CONCAT(m.name, CHAR(9), DATE_FORMAT(LEAST(COALESCE(NEW.sent_at, NEW.received_at), NEW.received_at), '%Y%m%d%H%i%s%f'))
              ELSE DATE_FORMAT(LEAST(COALESCE(NEW.sent_at, NEW.received_at), NEW.received_at), '%Y%m%d%H%i%s%f')
            END AS BINARY),
       d.id, NEW.id, NEW.mailbox_id, m.name, NEW.category
  FROM drafts d JOIN mailboxes m ON m.id = NEW.mailbox_id JOIN (SELECT 'waiting' AS sort UNION ALL SELECT 'priority' UNION ALL SELECT 'mailbox') srt
 WHERE d.email_id = NEW.id
   AND d.status IN ('pending_review', 'stale')
   AND NOT (NEW.priority <=> OLD.priority AND NEW.category <=> OLD.category
            AND NEW.sent_at <=> OLD.sent_at AND NEW.received_at <=> OLD.received_at
            AND NEW.mailbox_id <=> OLD.mailbox_id);

INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT srt.sort,
       CAST(CASE srt.sort
              WHEN 'priority' THEN CONCAT(CASE e.priority WHEN 'urgent' THEN 1 WHEN 'high' THEN 2
                                          WHEN 'normal' THEN 3 WHEN 'low' THEN 4 ELSE 5 END, DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
              WHEN 'mailbox' THEN CONCAT(m.name, CHAR(9), DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
              ELSE DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f')
            END AS BINARY),
       d.id, e.id, e.mailbox_id, m.name, e.category
  FROM drafts d JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
  JOIN (SELECT 'waiting' AS sort UNION ALL SELECT 'priority' UNION ALL SELECT 'mailbox') srt
 WHERE TRUE
   AND d.status IN ('pending_review', 'stale');

-- The instruction staff gave with their last Regenerate ("more formal", "in German"); the
-- draft step gives it to the LLM as the agent's request (trusted, unlike the mail).
ALTER TABLE emails ADD COLUMN IF NOT EXISTS draft_instruction VARCHAR(500) NULL;
