"""The schema the code expects: tables and the columns the code uses.

``verify(db)`` compares it with information_schema; ``email-rag migrate``
runs it after applying migrations (exit 3 when it fails), and a test proves
that the migrations produce it.
"""

from __future__ import annotations

from .connection import Database

EXPECTED: dict[str, set[str]] = {
    "schema_migrations": {"version", "name", "checksum", "applied_at"},
    "mailboxes": {
        "id", "name", "address", "consecutive_failures", "backoff_until", "failing_since",
        "last_error", "last_error_at", "needs_attention", "last_success_at", "lease_owner",
        "lease_until", "created_at", "updated_at", "history_paused",
    },
    "mailbox_cursors": {"mailbox_id", "folder", "uidvalidity", "last_uid", "updated_at"},
    "emails": {
        "id", "mailbox_id", "dedup_key", "content_hash", "message_id", "folder", "uidvalidity", "uid",
        "thread_key", "in_reply_to", "references_header", "from_addr", "from_name", "to_addrs",
        "cc_addrs", "reply_addr", "reply_rule", "subject", "sent_at", "received_at", "body_text",
        "body_html", "raw", "raw_size", "attachments", "attachment_text", "parse_status", "parse_error", "auto_reason", "status",
        "status_reason", "index_status", "index_missing", "category", "priority", "language",
        "summary", "needs_reply", "classification_defaulted", "classification_prompt_version",
        "created_at", "updated_at", "draft_instruction", "closed_at", "due_at", "due_rule",
    },
    "missing_uids": {"mailbox_id", "folder", "uidvalidity", "uid", "misses", "first_missing_at",
                     "last_missing_at"},
    "email_steps": {"email_id", "step", "confirmed_at", "detail"},
    "jobs": {
        "id", "kind", "job_key", "email_id", "draft_id", "queue", "state", "attempts",
        "next_run_at", "started_at", "finished_at", "worker", "last_error", "enqueued_at",
        "created_at", "updated_at",
    },
    "drafts": {
        "id", "email_id", "version", "status", "subject", "body_draft", "body_final",
        "edit_diff", "sources", "language", "prompt_version", "model", "approved_by",
        "approved_at", "rejected_by", "reject_reason", "stale_reason", "check_flags", "created_at",
        "updated_at", "source",
    },
    "send_attempts": {
        "id", "draft_id", "message_id", "status", "tries", "recipients", "last_error",
        "smtp_response", "reconciled", "attempted_at", "sent_at", "created_at", "updated_at",
        "verified_by", "verified_at", "decided_by", "bounce_email_id", "accepted_at",
    },
    "audit_log": {
        "id", "event_uid", "at", "actor", "entity_type", "entity_id", "event", "from_state",
        "to_state", "attempt", "detail",
    },
    "users": {
        "id", "name", "role", "password_hash", "disabled", "failed_logins", "locked_until",
        "last_login_at", "created_at", "updated_at", "session_version", "time_zone",
        "ui_language",
    },
    "login_throttle": {"name_key", "client", "failures", "lockouts", "locked_until", "updated_at"},
    "user_mailboxes": {"user_id", "mailbox_id"},
    "draft_edits": {"draft_id", "user_id", "body", "saved_at"},
    "oauth_tokens": {"mailbox", "refresh_token", "access_token", "access_expires_at",
                     "generation", "status", "last_error", "authorized_at", "refreshed_at",
                     "failed_at", "updated_at"},
    "review_queue_keys": {"sort", "sort_key", "draft_id", "email_id", "mailbox_id", "mailbox",
                          "category"},
    "draft_reviews": {"draft_id", "email_id", "mailbox_id", "category", "outcome",
                      "edit_distance", "week", "decided_at", "agent"},
    "classified_mails": {"email_id", "mailbox_id", "category", "week", "classified_at",
                         "corrected", "corrected_at"},
    "saved_replies": {"id", "mailbox_id", "title", "body", "version", "created_by",
                      "updated_by", "created_at", "updated_at"},
    "mailbox_signatures": {"mailbox_id", "body", "updated_by", "updated_at"},
    "knowledge_articles": {"id", "mailbox_id", "mailbox_key", "origin", "status", "title",
                           "language", "body", "version", "content_hash", "file_hash",
                           "source_key", "source_root", "created_by", "updated_by",
                           "created_at", "updated_at"},
    "knowledge_passages": {"article_id", "version", "passage_no", "heading", "body", "vector",
                           "embedder"},
    "knowledge_imports": {"id", "root", "mailbox_key", "status", "processed", "failed",
                          "remaining", "removed", "started_by", "started_at", "finished_at"},
    "knowledge_import_files": {"import_id", "path", "status", "outcome", "article_id", "error"},
    "knowledge_candidates": {"id", "mailbox_id", "email_id", "draft_id", "status", "title",
                             "question", "answer", "language", "article_id", "decided_by",
                             "created_at", "decided_at"},
    "mail_notes": {"id", "email_id", "user_id", "author", "body", "created_at"},
    "note_mentions": {"note_id", "user_id", "email_id", "read_at"},
    "erasure_marks": {"email_id", "mailbox_id", "cause", "marked_at"},
    "mail_snoozes": {"email_id", "until_at", "snoozed_by", "snoozed_at"},
    "saved_views": {"id", "user_id", "name", "query", "created_at"},
    "privacy_requests": {"address_hash", "address", "reason", "requested_by", "requested_at"},
    "mailbox_configs": {"name", "settings", "secrets", "enabled", "removed_at", "version",
                        "check_ok", "check_summary", "check_report", "checked_at", "created_by", "updated_by",
                        "created_at", "updated_at"},
    "setup_tokens": {"token_hash", "created_at", "expires_at", "used_at", "used_by"},
    "run_results": {"id", "command", "scope", "status", "processed", "failed", "skipped",
                    "remaining", "resumed_from", "continued_by", "current_item", "cursor_key",
                    "actor",
                    "started_at", "updated_at", "finished_at"},
}


def actual(db: Database) -> dict[str, set[str]]:
    rows = db.fetchall(
        "SELECT table_name AS t, column_name AS c FROM information_schema.columns"
        " WHERE table_schema = DATABASE()"
    )
    found: dict[str, set[str]] = {}
    for r in rows:
        found.setdefault(r["t"], set()).add(r["c"])
    return found


def verify(db: Database) -> list[str]:
    """Problems found (empty when the schema is as the code expects)."""
    have = actual(db)
    problems = []
    for table, columns in EXPECTED.items():
        if table not in have:
            problems.append(f"table {table} is missing")
            continue
        missing = columns - have[table]
        if missing:
            problems.append(f"table {table} lacks columns {sorted(missing)}")
    return problems
