-- Who owns a mail on the desk (one agent at a time; none = unassigned), and who has a
-- draft open right now (presence: from the moment the draft page is opened, refreshed
-- by its autosave; the collision warning reads it).
CREATE TABLE IF NOT EXISTS mail_assignments (
  email_id BIGINT NOT NULL PRIMARY KEY,
  user_id INT NOT NULL,
  assigned_by VARCHAR(100) NOT NULL,
  assigned_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_assign_user (user_id),
  CONSTRAINT fk_ma_email FOREIGN KEY (email_id) REFERENCES emails (id) ON DELETE CASCADE,
  CONSTRAINT fk_ma_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS draft_presence (
  draft_id BIGINT NOT NULL,
  user_id INT NOT NULL,
  seen_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (draft_id, user_id),
  KEY ix_presence_seen (draft_id, seen_at),
  CONSTRAINT fk_dp_draft FOREIGN KEY (draft_id) REFERENCES drafts (id) ON DELETE CASCADE,
  CONSTRAINT fk_dp_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
