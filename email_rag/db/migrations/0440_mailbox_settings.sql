-- Mailboxes managed in the web admin and the CLI (issue 44; db/mailbox_configs.py). One row
-- per mailbox an admin added: its settings (MailboxConfig as JSON, without secrets), its
-- secrets (password, SMTP password, OAuth2 client secret) encrypted with the token key
-- (Fernet, like oauth_tokens), whether it is polled (enabled) and whether it was removed
-- (kept as a tombstone: its mail and jobs stay, lookups by name still find its settings).
-- version counts saved changes: every process sees a change by it.
CREATE TABLE IF NOT EXISTS mailbox_configs (
  name VARCHAR(190) NOT NULL PRIMARY KEY,
  settings LONGTEXT NOT NULL,
  secrets VARBINARY(8192) NULL,
  enabled TINYINT(1) NOT NULL DEFAULT 1,
  removed_at DATETIME(6) NULL,
  version INT NOT NULL DEFAULT 1,
  check_ok TINYINT(1) NULL,
  check_summary VARCHAR(2000) NULL,
  check_report MEDIUMTEXT NULL,
  checked_at DATETIME(6) NULL,
  created_by VARCHAR(190) NOT NULL,
  updated_by VARCHAR(190) NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The first start (web/views_setup.py): one-time links printed by `email-rag setup`, stored
-- as SHA-256 of the token; a link works once, before expires_at, and only while no admin
-- exists.
CREATE TABLE IF NOT EXISTS setup_tokens (
  token_hash CHAR(64) NOT NULL PRIMARY KEY,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  expires_at DATETIME(6) NOT NULL,
  used_at DATETIME(6) NULL,
  used_by VARCHAR(190) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The history import of a mailbox as a job an admin can pause (ingest/history_import.py):
-- while paused its index_history entries wait (next_run_at parked far ahead).
ALTER TABLE mailboxes ADD COLUMN IF NOT EXISTS history_paused TINYINT(1) NOT NULL DEFAULT 0;
