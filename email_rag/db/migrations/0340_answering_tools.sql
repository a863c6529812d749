-- Answering tools on the desk (email_rag.review.answers, email_rag.review.notes).
-- Saved replies: a team's reusable answers per mailbox, kept by admins; the body may hold
-- placeholders ({customer_name}, {order_number}, {agent_name}) filled when it is inserted
-- into a draft. version counts the edits (an edit of an older version is refused).
CREATE TABLE IF NOT EXISTS saved_replies (
  id INT AUTO_INCREMENT PRIMARY KEY,
  mailbox_id INT NOT NULL,
  title VARCHAR(200) NOT NULL,
  body TEXT NOT NULL,
  version INT NOT NULL DEFAULT 1,
  created_by VARCHAR(100) NOT NULL,
  updated_by VARCHAR(100) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_saved_replies_mailbox (mailbox_id, title),
  CONSTRAINT fk_sr_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The desk's signature of a mailbox (set by admins), inserted into a draft's editor on
-- request and put under a reply written by hand; the same placeholders as saved replies.
CREATE TABLE IF NOT EXISTS mailbox_signatures (
  mailbox_id INT NOT NULL PRIMARY KEY,
  body TEXT NOT NULL,
  updated_by VARCHAR(100) NOT NULL,
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  CONSTRAINT fk_ms_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Internal notes on a mail (never sent to the customer); they go with the mail (an erased
-- mail takes its notes along). author is the user's name as it was when writing.
CREATE TABLE IF NOT EXISTS mail_notes (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  email_id BIGINT NOT NULL,
  user_id INT NULL,
  author VARCHAR(100) NOT NULL,
  body TEXT NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_notes_email (email_id, created_at, id),
  CONSTRAINT fk_mn_email FOREIGN KEY (email_id) REFERENCES emails (id) ON DELETE CASCADE,
  CONSTRAINT fk_mn_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per user an @mention in a note notifies; read_at is set when that user opens
-- the mail (its page or one of its drafts).
CREATE TABLE IF NOT EXISTS note_mentions (
  note_id BIGINT NOT NULL,
  user_id INT NOT NULL,
  email_id BIGINT NOT NULL,
  read_at DATETIME(6) NULL,
  PRIMARY KEY (note_id, user_id),
  KEY ix_mentions_user (user_id, read_at, email_id),
  KEY ix_mentions_email (email_id, user_id),
  CONSTRAINT fk_nm_note FOREIGN KEY (note_id) REFERENCES mail_notes (id) ON DELETE CASCADE,
  CONSTRAINT fk_nm_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
