-- OAuth2 tokens of the mailboxes (issue 25): one row per mailbox that logs in with
-- XOAUTH2 / OAUTHBEARER on the refresh-token grant. Tokens are encrypted (Fernet, key from
-- EMAIL_RAG_OAUTH_TOKEN_KEY[_FILE]); generation counts refresh-token changes (a stored
-- rotation is conditional on the generation it replaces). status: authorized |
-- needs_authorization (a refresh was refused: an admin must run `mailboxes authorize`).
CREATE TABLE IF NOT EXISTS oauth_tokens (
  mailbox VARCHAR(190) NOT NULL PRIMARY KEY,
  refresh_token VARBINARY(8192) NULL,
  access_token VARBINARY(16384) NULL,
  access_expires_at DOUBLE NOT NULL DEFAULT 0,
  generation INT NOT NULL DEFAULT 0,
  status VARCHAR(32) NOT NULL DEFAULT 'needs_authorization',
  last_error VARCHAR(2000) NULL,
  authorized_at DATETIME(6) NULL,
  refreshed_at DATETIME(6) NULL,
  failed_at DATETIME(6) NULL,
  updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
