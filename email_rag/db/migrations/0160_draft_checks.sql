-- Draft checks (email_rag.draft_checks): a draft that failed them after one
-- regeneration is stored with the reasons; staff see it flagged and cannot
-- approve it unchanged.
ALTER TABLE drafts ADD COLUMN IF NOT EXISTS check_flags VARCHAR(1000) NULL;
