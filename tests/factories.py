"""Factories for test data rows (real MariaDB)."""

from __future__ import annotations

import hashlib
import uuid

from email_rag.db import Database


def make_mailbox(db: Database, name: str = "support") -> int:
    db.execute("INSERT IGNORE INTO mailboxes (name, address) VALUES (%s, %s)",
               (name, f"{name}@example.com"))
    return int(db.fetchone("SELECT id FROM mailboxes WHERE name = %s", (name,))["id"])


def make_email(db: Database, mailbox_id: int | None = None, status: str = "received",
               subject: str = "Printer broken", body: str = "My printer does not print.",
               **cols) -> int:
    mailbox_id = mailbox_id or make_mailbox(db)
    message_id = cols.pop("message_id", f"<{uuid.uuid4().hex}@customer.example>")
    values = {"mailbox_id": mailbox_id, "status": status, "subject": subject,
              "body_text": body, "message_id": message_id,
              "dedup_key": hashlib.sha256(message_id.encode()).hexdigest(),
              "from_addr": "alice@customer.example", **cols}
    values.setdefault("raw", _raw(values))
    names = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    with db.transaction() as cur:
        cur.execute(f"INSERT INTO emails ({names}) VALUES ({marks})", tuple(values.values()))
        return cur.lastrowid


def make_job(db: Database, email_id: int, queue: str = "email-rag", kind: str = "process_email",
             state: str = "queued") -> int:
    with db.transaction() as cur:
        cur.execute("INSERT INTO jobs (kind, job_key, email_id, queue, state) VALUES"
                    " (%s, %s, %s, %s, %s)", (kind, f"{kind}:{email_id}", email_id, queue, state))
        return cur.lastrowid


def make_draft(db: Database, email_id: int, body: str = "Dear Alice,\n\nplease restart it.\n",
               status: str = "pending_review", sources: str = "[]") -> int:
    with db.transaction() as cur:
        cur.execute("INSERT INTO drafts (email_id, version, status, subject, body_draft, sources)"
                    " VALUES (%s, 1, %s, 'Re: x', %s, %s)", (email_id, status, body, sources))
        draft_id = cur.lastrowid
        cur.execute("UPDATE emails SET status = 'draft_ready' WHERE id = %s", (email_id,))
        return draft_id


def _raw(values: dict) -> bytes:
    """The raw mail the poller would have stored for these columns."""
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Message-ID"] = values["message_id"]
    msg["From"] = values["from_addr"]
    msg["To"] = "support@example.com"
    msg["Subject"] = (values.get("subject") or "").replace("\r", " ").replace("\n", " ")
    msg.set_content(values.get("body_text") or "")
    return bytes(msg)
