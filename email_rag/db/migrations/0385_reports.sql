-- Reports (docs/web.md, "Reports"): the review figures per agent, and the sends of recent
-- weeks read by their time.
-- agent: who decided on the draft (user:NAME as the drafts store it; '' when not known).
ALTER TABLE draft_reviews ADD COLUMN IF NOT EXISTS agent VARCHAR(100) NOT NULL DEFAULT '';
UPDATE draft_reviews r JOIN drafts d ON d.id = r.draft_id
   SET r.agent = COALESCE(IF(r.outcome = 'rejected', d.rejected_by, d.approved_by), '')
 WHERE r.agent = '' AND r.outcome <> 'regenerated';
CREATE INDEX IF NOT EXISTS ix_draft_reviews_agent ON draft_reviews (week, agent);
CREATE INDEX IF NOT EXISTS ix_send_sent_at ON send_attempts (sent_at);

-- The queue's category filter lists the categories in use (web_categories: SELECT DISTINCT):
-- read from this index (a loose index scan), not from every mail's row.
CREATE INDEX IF NOT EXISTS ix_email_category ON emails (category);
