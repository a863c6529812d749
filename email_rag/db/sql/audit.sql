-- The append-only audit log (email_rag/db/audit.py).

-- name: audit_insert
-- One row per event; event_uid makes a repeated flush of the spool harmless.
INSERT IGNORE INTO audit_log (event_uid, at, actor, entity_type, entity_id, event,
                              from_state, to_state, attempt, detail)
VALUES (%(event_uid)s, %(at)s, %(actor)s, %(entity_type)s, %(entity_id)s, %(event)s,
        %(from_state)s, %(to_state)s, %(attempt)s, %(detail)s);

-- name: audit_of_entity
SELECT * FROM audit_log WHERE entity_type = %(type)s AND entity_id = %(id)s ORDER BY at, id;
