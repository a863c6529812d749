-- Retention per mailbox (issue 29, email_rag.review.retention) and the erasure marks shared
-- with privacy forget (email_rag.review.erasure).
--
-- emails.closed_at: when the mail entered a closed status (the final statuses of MAIL_MOVES
-- plus sent: no_reply, sent, rejected, resolved, history; email_rag.core.states.MAIL_TERMINAL),
-- NULL while it is open. Kept by the two triggers below for every write path (the stores'
-- moves, the poller's inserts of history and loop-guarded mail); a bounce that moves a sent
-- mail back to review clears it. A test checks the list against MAIL_TERMINAL.
ALTER TABLE emails ADD COLUMN IF NOT EXISTS closed_at DATETIME(6) NULL;

-- mails closed before this migration: their last change is the best time known (a history
-- mail: its Date, as on insert below)
UPDATE emails SET closed_at = IF(status = 'history', LEAST(COALESCE(sent_at, updated_at),
                                                          updated_at), updated_at),
                  updated_at = updated_at
 WHERE closed_at IS NULL AND status IN ('no_reply', 'sent', 'rejected', 'resolved', 'history');

CREATE INDEX IF NOT EXISTS ix_email_closed ON emails (mailbox_id, closed_at);

-- a history mail (a past case, imported) closed when it was sent: its Date, never later
-- than now; any other mail stored closed (a loop-guarded no_reply) closes on arrival
CREATE TRIGGER IF NOT EXISTS emails_closed_insert BEFORE INSERT ON emails FOR EACH ROW
SET NEW.closed_at = CASE
      WHEN NEW.status NOT IN ('no_reply', 'sent', 'rejected', 'resolved', 'history') THEN NULL
      WHEN NEW.closed_at IS NOT NULL THEN NEW.closed_at
      WHEN NEW.status = 'history' THEN LEAST(COALESCE(NEW.sent_at, UTC_TIMESTAMP(6)),
                                             UTC_TIMESTAMP(6))
      ELSE UTC_TIMESTAMP(6) END;

CREATE TRIGGER IF NOT EXISTS emails_closed_update BEFORE UPDATE ON emails FOR EACH ROW
SET NEW.closed_at = CASE
      WHEN NEW.status <=> OLD.status THEN NEW.closed_at
      WHEN NEW.status IN ('no_reply', 'sent', 'rejected', 'resolved', 'history')
        THEN UTC_TIMESTAMP(6)
      ELSE NULL END;

-- A mail whose erasure has begun (its vector points or graph documents may already be gone):
-- the run that marked it, or the next run of the same cause, finishes it; the row goes with
-- the mail's rows in one transaction. cause: retention | forget.
CREATE TABLE IF NOT EXISTS erasure_marks (
  email_id BIGINT NOT NULL PRIMARY KEY,
  mailbox_id INT NOT NULL,
  cause VARCHAR(16) NOT NULL,
  marked_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_erasure_marks_cause (cause, mailbox_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
