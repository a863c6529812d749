-- Truthful outcomes (issue 16): how the outcome of a send attempt was established.
-- verified_by: relay_250 (the relay answered 250), sent_folder (the Message-ID was found in
-- the Sent folder), admin (an admin decided by `sends resolve`; not verified), bounce (a
-- delivery status notification named it). decided_by: the admin of an admin decision.
-- bounce_email_id: the stored bounce mail that named the attempt.
ALTER TABLE send_attempts ADD COLUMN IF NOT EXISTS verified_by VARCHAR(16) NULL;
ALTER TABLE send_attempts ADD COLUMN IF NOT EXISTS verified_at DATETIME(6) NULL;
ALTER TABLE send_attempts ADD COLUMN IF NOT EXISTS decided_by VARCHAR(100) NULL;
ALTER TABLE send_attempts ADD COLUMN IF NOT EXISTS bounce_email_id BIGINT NULL;
ALTER TABLE send_attempts ADD COLUMN IF NOT EXISTS accepted_at DATETIME(6) NULL;
