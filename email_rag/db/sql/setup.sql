-- The first start (auth/first_start.py): one-time set-up links.

-- name: setup_any_user
SELECT id FROM users LIMIT 1;

-- name: setup_token_insert
INSERT INTO setup_tokens (token_hash, expires_at)
VALUES (%(token_hash)s, NOW(6) + INTERVAL %(seconds)s SECOND);

-- name: setup_token_valid
SELECT token_hash FROM setup_tokens
 WHERE token_hash = %(token_hash)s AND used_at IS NULL AND expires_at > NOW(6);

-- name: setup_token_use
UPDATE setup_tokens SET used_at = NOW(6), used_by = %(name)s
 WHERE token_hash = %(token_hash)s AND used_at IS NULL AND expires_at > NOW(6);
