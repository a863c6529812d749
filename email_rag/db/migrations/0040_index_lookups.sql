-- Indexing and retrieval: lookups by Message-ID (the mail a reply answers, for the
-- graph's reply_to edge) and by sender (sender history when the graph store is off
-- or down). Prefix indexes: message_id is VARCHAR(998), from_addr VARCHAR(320).
CREATE INDEX IF NOT EXISTS ix_email_message_id ON emails (mailbox_id, message_id(191));
CREATE INDEX IF NOT EXISTS ix_email_from ON emails (mailbox_id, from_addr(191));
