-- Service levels (docs/web.md, "Service levels"): when a waiting mail's first reply is
-- due, computed in Python from its mailbox's business hours (email_rag/core/service_levels.py)
-- and kept with the mail. due_rule: the fingerprint of the mailbox's service level it was
-- computed under ('none': the mailbox has none, so due_at stays NULL); NULL: not computed
-- yet. A changed service level clears the fingerprints, and the mails are computed again.
ALTER TABLE emails ADD COLUMN IF NOT EXISTS due_at DATETIME(6) NULL;
ALTER TABLE emails ADD COLUMN IF NOT EXISTS due_rule CHAR(16) NULL;
CREATE INDEX IF NOT EXISTS ix_email_due_rule ON emails (mailbox_id, due_rule);

-- The queue's fourth sort order, 'due', in its sort index review_queue_keys (migration 0185),
-- kept by triggers like the other three. Its key: '0' + the due time; '1' + the waiting
-- time for a mailbox without a service level; '2' + the waiting time while not computed
-- (the web process computes those first: an index range read on ('due', '2...')).
CREATE TRIGGER IF NOT EXISTS review_queue_due_draft_insert AFTER INSERT ON drafts FOR EACH ROW
FOLLOWS review_queue_draft_insert
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT 'due',
       CAST(CASE WHEN e.due_at IS NOT NULL THEN CONCAT('0', DATE_FORMAT(e.due_at, '%Y%m%d%H%i%s%f'))
                 ELSE CONCAT(IF(e.due_rule IS NULL, '2', '1'), DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
            END AS BINARY),
       NEW.id, e.id, e.mailbox_id, m.name, e.category
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id = NEW.email_id
   AND NEW.status IN ('pending_review', 'stale');

CREATE TRIGGER IF NOT EXISTS review_queue_due_draft_enter AFTER UPDATE ON drafts FOR EACH ROW
FOLLOWS review_queue_draft_enter
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT 'due',
       CAST(CASE WHEN e.due_at IS NOT NULL THEN CONCAT('0', DATE_FORMAT(e.due_at, '%Y%m%d%H%i%s%f'))
                 ELSE CONCAT(IF(e.due_rule IS NULL, '2', '1'), DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f'))
            END AS BINARY),
       NEW.id, e.id, e.mailbox_id, m.name, e.category
  FROM emails e JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE e.id = NEW.email_id
   AND NEW.status IN ('pending_review', 'stale')
   AND OLD.status NOT IN ('pending_review', 'stale');

-- a new due time, or anything the other sorts re-key on (their trigger removed every sort)
CREATE TRIGGER IF NOT EXISTS review_queue_due_email_forget AFTER UPDATE ON emails FOR EACH ROW
FOLLOWS review_queue_email_rekey
DELETE FROM review_queue_keys
 WHERE email_id = NEW.id AND sort = 'due'
   AND NOT (NEW.due_at <=> OLD.due_at AND NEW.due_rule <=> OLD.due_rule
            AND NEW.priority <=> OLD.priority AND NEW.category <=> OLD.category
            AND NEW.sent_at <=> OLD.sent_at AND NEW.received_at <=> OLD.received_at
            AND NEW.mailbox_id <=> OLD.mailbox_id);

CREATE TRIGGER IF NOT EXISTS review_queue_due_email_rekey AFTER UPDATE ON emails FOR EACH ROW
FOLLOWS review_queue_due_email_forget
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT 'due',
       CAST(CASE WHEN NEW.due_at IS NOT NULL THEN CONCAT('0', DATE_FORMAT(NEW.due_at, '%Y%m%d%H%i%s%f'))
                 ELSE CONCAT(IF(NEW.due_rule IS NULL, '2', '1'), DATE_FORMAT(LEAST(COALESCE(NEW.sent_at, NEW.received_at), NEW.received_at), '%Y%m%d%H%i%s%f'))
            END AS BINARY),
       d.id, NEW.id, NEW.mailbox_id, m.name, NEW.category
  FROM drafts d JOIN mailboxes m ON m.id = NEW.mailbox_id
 WHERE d.email_id = NEW.id
   AND d.status IN ('pending_review', 'stale')
   AND NOT (NEW.due_at <=> OLD.due_at AND NEW.due_rule <=> OLD.due_rule
            AND NEW.priority <=> OLD.priority AND NEW.category <=> OLD.category
            AND NEW.sent_at <=> OLD.sent_at AND NEW.received_at <=> OLD.received_at
            AND NEW.mailbox_id <=> OLD.mailbox_id);

-- the drafts waiting now: not computed yet
INSERT IGNORE INTO review_queue_keys (sort, sort_key, draft_id, email_id, mailbox_id, mailbox, category)
SELECT 'due',
       CAST(CONCAT('2', DATE_FORMAT(LEAST(COALESCE(e.sent_at, e.received_at), e.received_at), '%Y%m%d%H%i%s%f')) AS BINARY),
       d.id, e.id, e.mailbox_id, m.name, e.category
  FROM drafts d JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE d.status IN ('pending_review', 'stale');

-- the queue's rows carry the due time
CREATE OR REPLACE VIEW review_queue AS
SELECT d.id, d.email_id, d.version, d.status, d.check_flags, d.created_at,
       e.subject, e.from_addr, e.from_name, e.category, e.priority, e.language, e.mailbox_id,
       e.received_at, m.name AS mailbox,
       LEAST(COALESCE(e.sent_at, e.received_at), e.received_at) AS waiting_since, e.due_at
  FROM drafts d JOIN emails e ON e.id = d.email_id JOIN mailboxes m ON m.id = e.mailbox_id
 WHERE d.status IN ('pending_review', 'stale');
