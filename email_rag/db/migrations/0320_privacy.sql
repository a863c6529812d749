-- Erasure requests (issue 29, email_rag.review.privacy): one row per person erased, named
-- only by the sha256 of the normalised address, never the address itself. state: running
-- (started) | partial (a store was down: run forget again) | done.
CREATE TABLE IF NOT EXISTS privacy_erasures (
  address_hash CHAR(64) NOT NULL PRIMARY KEY,
  reason VARCHAR(500) NOT NULL,
  requested_by VARCHAR(100) NOT NULL,
  state VARCHAR(16) NOT NULL,
  mails_erased INT NOT NULL DEFAULT 0,
  last_error TEXT NULL,
  requested_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  finished_at DATETIME(6) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
