-- Mailboxes managed in the web admin and the CLI (db/mailbox_configs.py). Secrets arrive
-- encrypted.

-- name: mailbox_configs_all
SELECT name, settings, secrets, enabled, removed_at, version, check_ok, check_summary,
       check_report, checked_at, created_by, updated_by, created_at, updated_at
  FROM mailbox_configs ORDER BY name;

-- name: mailbox_configs_get_for_update
SELECT name, settings, secrets, enabled, removed_at, version, check_ok, check_summary,
       check_report, checked_at, created_by, updated_by, created_at, updated_at
  FROM mailbox_configs WHERE name = %(name)s FOR UPDATE;

-- name: mailbox_configs_insert
INSERT INTO mailbox_configs (name, settings, secrets, enabled, created_by, updated_by)
VALUES (%(name)s, %(settings)s, %(secrets)s, %(enabled)s, %(actor)s, %(actor)s);

-- A removed mailbox added again under its name: new settings over the tombstone.
-- name: mailbox_configs_revive
UPDATE mailbox_configs
   SET settings = %(settings)s, secrets = %(secrets)s, enabled = %(enabled)s,
       removed_at = NULL, version = version + 1, check_ok = NULL, check_summary = NULL, check_report = NULL,
       checked_at = NULL, updated_by = %(actor)s
 WHERE name = %(name)s AND removed_at IS NOT NULL;

-- name: mailbox_configs_update
UPDATE mailbox_configs
   SET settings = %(settings)s, secrets = %(secrets)s, version = version + 1,
       updated_by = %(actor)s
 WHERE name = %(name)s AND version = %(version)s AND removed_at IS NULL;

-- name: mailbox_configs_set_enabled
UPDATE mailbox_configs
   SET enabled = %(enabled)s, version = version + 1, updated_by = %(actor)s
 WHERE name = %(name)s AND enabled <> %(enabled)s AND removed_at IS NULL;

-- name: mailbox_configs_remove
UPDATE mailbox_configs
   SET enabled = 0, removed_at = NOW(6), version = version + 1, updated_by = %(actor)s
 WHERE name = %(name)s AND removed_at IS NULL;

-- The last `mailboxes check` of its settings (no version change: nothing to pick up).
-- name: mailbox_configs_checked
UPDATE mailbox_configs
   SET check_ok = %(ok)s, check_summary = %(summary)s, check_report = %(report)s,
       checked_at = NOW(6)
 WHERE name = %(name)s;

-- After a new OAuth2 consent: the mailbox is polled at the next poll, not after its backoff.
-- name: mailbox_backoff_clear
UPDATE mailboxes SET backoff_until = NULL
 WHERE name = %(name)s AND backoff_until IS NOT NULL;
