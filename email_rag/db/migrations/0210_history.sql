-- History import (issue 31): a cut-off per mailbox (mail sent before it is history: stored,
-- threaded and indexed, never classified or drafted), and the link of an answered mail to
-- the reply that solved it (answered_via: flag = IMAP \Answered, sent_reply = a reply of
-- ours in Sent names it by In-Reply-To/References; answered_by: that reply's row).
ALTER TABLE mailboxes ADD COLUMN IF NOT EXISTS history_cutoff DATETIME(6) NULL;
ALTER TABLE emails ADD COLUMN IF NOT EXISTS answered_via VARCHAR(16) NULL;
ALTER TABLE emails ADD COLUMN IF NOT EXISTS answered_by BIGINT NULL;
ALTER TABLE emails ADD COLUMN IF NOT EXISTS direction VARCHAR(8) NOT NULL DEFAULT 'in';
CREATE INDEX IF NOT EXISTS ix_email_message_id ON emails (mailbox_id, message_id(190));
CREATE INDEX IF NOT EXISTS ix_email_in_reply_to ON emails (mailbox_id, in_reply_to(190));
