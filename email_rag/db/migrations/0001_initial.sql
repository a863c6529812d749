-- email-rag initial schema. MariaDB is the source of truth for every mail,
-- job, draft, send attempt and audit event. Status columns hold the string
-- values of the enums in email_rag/states.py.

CREATE TABLE IF NOT EXISTS mailboxes (
  id INT AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  address VARCHAR(320) NOT NULL DEFAULT '',
  -- poll health and backoff (IMAP failures are retried forever, with capped backoff)
  consecutive_failures INT NOT NULL DEFAULT 0,
  backoff_until DATETIME(6) NULL,
  failing_since DATETIME(6) NULL,
  last_error TEXT NULL,
  last_error_at DATETIME(6) NULL,
  needs_attention TINYINT(1) NOT NULL DEFAULT 0,
  last_success_at DATETIME(6) NULL,
  -- lease: polls of one mailbox never overlap; an expired lease may be taken over
  lease_owner VARCHAR(120) NULL,
  lease_until DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_mailbox_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- poll cursor per (mailbox, folder): advanced in the same transaction as the mail rows
CREATE TABLE IF NOT EXISTS mailbox_cursors (
  mailbox_id INT NOT NULL,
  folder VARCHAR(255) NOT NULL,
  uidvalidity BIGINT UNSIGNED NOT NULL,
  last_uid BIGINT UNSIGNED NOT NULL DEFAULT 0,
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (mailbox_id, folder),
  CONSTRAINT fk_cursor_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS emails (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  mailbox_id INT NOT NULL,
  -- sha256 of the Message-ID, or of the content when the header is missing
  dedup_key CHAR(64) NOT NULL,
  message_id VARCHAR(998) NULL,
  folder VARCHAR(255) NOT NULL DEFAULT '',
  uidvalidity BIGINT UNSIGNED NULL,
  uid BIGINT UNSIGNED NULL,
  thread_key CHAR(64) NULL,
  in_reply_to VARCHAR(998) NULL,
  references_header TEXT NULL,
  from_addr VARCHAR(320) NULL,
  from_name VARCHAR(320) NULL,
  to_addrs TEXT NULL,
  cc_addrs TEXT NULL,
  subject VARCHAR(998) NULL,
  sent_at DATETIME NULL,
  received_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  body_text MEDIUMTEXT NULL,
  body_html MEDIUMTEXT NULL,
  raw LONGBLOB NULL,
  raw_size INT UNSIGNED NOT NULL DEFAULT 0,
  attachments JSON NULL,
  parse_status VARCHAR(16) NOT NULL DEFAULT 'ok',
  parse_error TEXT NULL,
  -- loop guard: why no draft is made (our own mail, auto-reply, bounce); NULL = normal
  auto_reason VARCHAR(100) NULL,
  status VARCHAR(32) NOT NULL,
  status_reason TEXT NULL,
  index_status VARCHAR(32) NOT NULL DEFAULT 'pending',
  index_missing VARCHAR(100) NULL,
  -- classification (validated model; defaulted = LLM output was unusable twice)
  category VARCHAR(32) NULL,
  priority VARCHAR(16) NULL,
  language VARCHAR(8) NULL,
  summary TEXT NULL,
  needs_reply TINYINT(1) NULL,
  classification_defaulted TINYINT(1) NOT NULL DEFAULT 0,
  classification_prompt_version VARCHAR(50) NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_email_dedup (mailbox_id, dedup_key),
  KEY ix_email_status (status),
  KEY ix_email_index_status (index_status),
  KEY ix_email_thread (mailbox_id, thread_key),
  CONSTRAINT fk_email_mailbox FOREIGN KEY (mailbox_id) REFERENCES mailboxes (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- confirmed step results (checkpoints): a row exists only after the step succeeded
CREATE TABLE IF NOT EXISTS email_steps (
  email_id BIGINT NOT NULL,
  step VARCHAR(16) NOT NULL,
  confirmed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  detail JSON NULL,
  PRIMARY KEY (email_id, step),
  CONSTRAINT fk_step_email FOREIGN KEY (email_id) REFERENCES emails (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- queue entries: MariaDB decides; Redis/RQ only carries the job id
CREATE TABLE IF NOT EXISTS jobs (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  kind VARCHAR(32) NOT NULL,
  -- natural key: one entry per (kind, subject), e.g. process_email:42, send_draft:7
  job_key VARCHAR(100) NOT NULL,
  email_id BIGINT NULL,
  draft_id BIGINT NULL,
  queue VARCHAR(64) NOT NULL,
  state VARCHAR(16) NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  next_run_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at DATETIME(6) NULL,
  finished_at DATETIME(6) NULL,
  worker VARCHAR(200) NULL,
  last_error TEXT NULL,
  enqueued_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_job_key (job_key),
  KEY ix_job_state_next (state, next_run_at),
  KEY ix_job_email (email_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS drafts (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  email_id BIGINT NOT NULL,
  version INT NOT NULL DEFAULT 1,
  status VARCHAR(16) NOT NULL,
  subject VARCHAR(998) NULL,
  body_draft MEDIUMTEXT NOT NULL,
  body_final MEDIUMTEXT NULL,
  edit_diff MEDIUMTEXT NULL,
  sources JSON NULL,
  language VARCHAR(8) NULL,
  prompt_version VARCHAR(50) NULL,
  model VARCHAR(100) NULL,
  approved_by VARCHAR(100) NULL,
  approved_at DATETIME(6) NULL,
  rejected_by VARCHAR(100) NULL,
  reject_reason TEXT NULL,
  stale_reason TEXT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_draft_version (email_id, version),
  KEY ix_draft_status (status),
  CONSTRAINT fk_draft_email FOREIGN KEY (email_id) REFERENCES emails (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- exactly one send attempt per draft, created before the first try, updated on each retry
CREATE TABLE IF NOT EXISTS send_attempts (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  draft_id BIGINT NOT NULL,
  message_id VARCHAR(255) NOT NULL,
  status VARCHAR(16) NOT NULL,
  tries INT NOT NULL DEFAULT 0,
  recipients TEXT NULL,
  last_error TEXT NULL,
  smtp_response TEXT NULL,
  reconciled TINYINT(1) NOT NULL DEFAULT 0,
  attempted_at DATETIME(6) NULL,
  sent_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_send_draft (draft_id),
  UNIQUE KEY uq_send_message_id (message_id),
  KEY ix_send_status (status),
  CONSTRAINT fk_send_draft FOREIGN KEY (draft_id) REFERENCES drafts (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- append-only: triggers below refuse UPDATE and DELETE
CREATE TABLE IF NOT EXISTS audit_log (
  id BIGINT AUTO_INCREMENT PRIMARY KEY,
  event_uid CHAR(32) NOT NULL,
  at DATETIME(6) NOT NULL,
  actor VARCHAR(100) NOT NULL,
  entity_type VARCHAR(32) NOT NULL,
  entity_id VARCHAR(64) NOT NULL,
  event VARCHAR(64) NOT NULL,
  from_state VARCHAR(32) NULL,
  to_state VARCHAR(32) NULL,
  attempt INT NULL,
  detail JSON NULL,
  UNIQUE KEY uq_audit_event (event_uid),
  KEY ix_audit_entity (entity_type, entity_id, at),
  KEY ix_audit_event (event, at),
  KEY ix_audit_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW
  SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit_log is append-only';

CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log FOR EACH ROW
  SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit_log is append-only';
