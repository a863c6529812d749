-- The one exception to the append-only audit log (issue 29): erasure (privacy forget,
-- retention; email_rag.review.erasure) overwrites the personal content of the detail of the
-- erased mails' events, in the transaction that deletes the mails. Everything else of an
-- event (id, event_uid, at, actor, entity, event, states, attempt) stays as written, and the
-- update is allowed only while the erasing session has set @email_rag_audit_erasure = 1;
-- DELETE stays refused.
CREATE OR REPLACE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW
IF NOT (@email_rag_audit_erasure <=> 1 AND NEW.id <=> OLD.id
        AND NEW.event_uid <=> OLD.event_uid AND NEW.at <=> OLD.at AND NEW.actor <=> OLD.actor
        AND NEW.entity_type <=> OLD.entity_type AND NEW.entity_id <=> OLD.entity_id
        AND NEW.event <=> OLD.event AND NEW.from_state <=> OLD.from_state
        AND NEW.to_state <=> OLD.to_state AND NEW.attempt <=> OLD.attempt)
THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit_log is append-only'; END IF;
