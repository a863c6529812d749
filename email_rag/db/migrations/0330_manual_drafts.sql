-- Who wrote a draft: 'model' (the draft step) or 'manual' (staff wrote the reply by hand on
-- the mail page, e.g. for a mail kept for a human). Both go through the same approval.
ALTER TABLE drafts ADD COLUMN IF NOT EXISTS source VARCHAR(16) NOT NULL DEFAULT 'model';
