-- An erasure asked for in the web UI that the vector worker carries out (issue 29,
-- email_rag.review.privacy_requests): a local Qdrant folder is opened by one process only,
-- so the web process queues the erasure instead of running it. The row holds the address
-- because the erasure cannot be done without it (it finds the mails, the graph vertex, and
-- re-searches every store); the worker deletes the row when the erasure is done, so an
-- address stays here only while its erasure is pending. The erasure list
-- (privacy_erasures) and the audit log name the person by address_hash only.
CREATE TABLE IF NOT EXISTS privacy_requests (
  address_hash CHAR(64) NOT NULL PRIMARY KEY,
  address VARCHAR(320) NOT NULL,
  reason VARCHAR(500) NOT NULL,
  requested_by VARCHAR(100) NOT NULL,
  requested_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
