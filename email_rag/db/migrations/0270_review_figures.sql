-- The figures staff work is judged by (email_rag.db.figures; docs/web.md, "Review figures"), each
-- row written in the transaction of the action it counts, so the status page and /metrics
-- sum rows instead of re-reading the drafts and the audit log.
-- week: the Monday (UTC) of the week the row counts in. No foreign keys to mails or drafts:
-- the figures are counters and must never shrink.

-- One row per draft staff decided on: approved (unchanged / light_edit / rewritten, with the
-- normalised edit distance between the generated and the approved text), rejected or
-- regenerated. category: the mail's category at the decision (after any correction).
CREATE TABLE IF NOT EXISTS draft_reviews (
  draft_id BIGINT NOT NULL PRIMARY KEY,
  email_id BIGINT NOT NULL,
  mailbox_id INT NOT NULL,
  category VARCHAR(32) NOT NULL DEFAULT '',
  outcome VARCHAR(16) NOT NULL,
  edit_distance DOUBLE NULL,
  week DATE NOT NULL,
  decided_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_draft_reviews_week (week, mailbox_id, category)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per classified mail: the category the classify step gave (rules, history or
-- LLM) and whether staff corrected the classification since (the draft page's correction,
-- or a reply asked for after a suggested "no reply"). week: when it was classified.
CREATE TABLE IF NOT EXISTS classified_mails (
  email_id BIGINT NOT NULL PRIMARY KEY,
  mailbox_id INT NOT NULL,
  category VARCHAR(32) NOT NULL DEFAULT '',
  week DATE NOT NULL,
  classified_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  corrected TINYINT(1) NOT NULL DEFAULT 0,
  corrected_at DATETIME(6) NULL,
  KEY ix_classified_week (week, mailbox_id, category)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
