-- OAuth2 tokens of the mailboxes (db/oauth_tokens.py). Tokens arrive encrypted.

-- name: oauth_get
SELECT mailbox, refresh_token, access_token, access_expires_at, generation, status,
       last_error, authorized_at, refreshed_at, failed_at
  FROM oauth_tokens WHERE mailbox = %(mailbox)s;

-- name: oauth_all
SELECT mailbox, access_expires_at, generation, status, last_error, authorized_at,
       refreshed_at, failed_at
  FROM oauth_tokens ORDER BY mailbox;

-- An admin authorized the mailbox: a new refresh token, a new generation (the row is made
-- first by oauth_new, with generation 0 and no token).
-- name: oauth_new
INSERT IGNORE INTO oauth_tokens (mailbox, generation, status) VALUES (%(mailbox)s, 0,
                                                                      'needs_authorization');

-- Statuses: authorized <-> needs_authorization, both ways (a new consent; a refused refresh).
-- name: oauth_authorize
UPDATE oauth_tokens
   SET refresh_token = %(refresh_token)s, access_token = %(access_token)s,
       access_expires_at = %(expires_at)s, generation = generation + 1,
       status = 'authorized', last_error = NULL, authorized_at = NOW(6)
 WHERE mailbox = %(mailbox)s AND status IN ('authorized', 'needs_authorization');

-- A refresh answered: the access token, and a rotated refresh token when there is one;
-- only when the stored generation is still the one the refresh used (compare-and-swap).
-- name: oauth_rotate
UPDATE oauth_tokens
   SET refresh_token = COALESCE(%(refresh_token)s, refresh_token),
       generation = generation + %(rotated)s,
       access_token = COALESCE(%(access_token)s, access_token),
       access_expires_at = IF(%(access_token)s IS NULL, access_expires_at, %(expires_at)s),
       status = 'authorized', last_error = NULL, refreshed_at = NOW(6)
 WHERE mailbox = %(mailbox)s AND generation = %(generation)s
   AND status IN ('authorized', 'needs_authorization');

-- name: oauth_refresh_failed
UPDATE oauth_tokens
   SET status = 'needs_authorization', last_error = %(error)s, failed_at = NOW(6),
       access_token = NULL, access_expires_at = 0
 WHERE mailbox = %(mailbox)s AND status IN ('authorized', 'needs_authorization');

-- name: oauth_drop_access
UPDATE oauth_tokens SET access_token = NULL, access_expires_at = 0
 WHERE mailbox = %(mailbox)s AND access_expires_at = %(expires_at)s;

-- name: oauth_lock
SELECT GET_LOCK(%(name)s, %(seconds)s) AS got;

-- name: oauth_unlock
SELECT RELEASE_LOCK(%(name)s) AS released;

-- The refresh token was last used (granted or refreshed) over %(seconds)s ago: renewed before
-- a provider ends it for inactivity (Microsoft: 90 days), even when no poll needed a refresh.
-- name: oauth_idle
SELECT mailbox FROM oauth_tokens
 WHERE mailbox = %(mailbox)s AND status = 'authorized' AND refresh_token IS NOT NULL
   AND COALESCE(GREATEST(authorized_at, refreshed_at), authorized_at, refreshed_at)
       < NOW(6) - INTERVAL %(seconds)s SECOND;
