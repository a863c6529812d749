"""The erasure's delete transaction locks the rows of the mails it erases, not every mail:
each of its statements reaches its rows by an index (EXPLAIN on the real MariaDB), and a
worker writing another mail is not held while a batch's transaction is open."""

from __future__ import annotations

import pytest

from email_rag.core.errors import DatabaseBusyError, DatabaseError
from email_rag.db import sql
from email_rag.db.connection import Database
from email_rag.db.queries import slot_params
from email_rag.privacy.erasure import ROW_DELETES
from tests.conftest import MARIADB
from tests.factories import make_draft, make_email, make_job, make_mailbox


@pytest.mark.parametrize("name", ROW_DELETES)
def test_each_delete_of_a_batch_reaches_its_rows_by_an_index(db, name):
    _seed(db, 60)
    plan = db.fetchall("EXPLAIN " + sql(name, ids=2), slot_params(ids=[1, 2]))
    scans = [p for p in plan if p["type"] in ("ALL", "index")]
    assert not scans, plan


def _seed(db, n):
    """Mails with a draft, its send job and send attempt, and a bounce and an answer linked:
    enough rows that MariaDB plans as it does for a real mailbox."""
    mb = make_mailbox(db)
    for i in range(n):
        reply = make_email(db, mb, subject=f"Re: mail {i}", direction="out")
        mail = make_email(db, mb, subject=f"mail {i}", answered_by=reply)
        draft = make_draft(db, mail, status="sent")
        make_job(db, mail)
        with db.transaction() as cur:
            cur.execute("INSERT INTO jobs (kind, job_key, draft_id, queue, state) VALUES "
                        "('send_reply', %s, %s, 'email-rag', 'done')", (f"send:{draft}", draft))
            cur.execute("INSERT INTO send_attempts (draft_id, message_id, status, "
                        "bounce_email_id) VALUES (%s, %s, 'sent', %s)",
                        (draft, f"<reply-{draft}@example.com>", reply))
    with db.transaction() as cur:
        for table in ("emails", "drafts", "jobs", "send_attempts"):
            cur.execute(f"ANALYZE TABLE {table}")


def test_a_worker_writing_another_mail_is_not_held_by_an_open_erasure_batch(db):
    """GIVEN the erasure's transaction has unlinked the answers to an erased reply (and not
    committed yet) WHEN a worker updates an unrelated mail THEN it is not made to wait (the
    statement once scanned and locked every mail row: 1,261 rows locked for 125 mails)."""
    mb = make_mailbox(db)
    reply = make_email(db, mb, subject="Re: Rechnung", direction="out")
    make_email(db, mb, subject="Rechnung", answered_by=reply)
    other = make_email(db, mb, subject="Lieferung")
    worker = Database(**MARIADB, database=db.database)
    try:
        with db.transaction() as cur:
            cur.execute(sql("privacy_unlink_answers", ids=1), slot_params(ids=[reply]))
            with worker.transaction() as wcur:
                wcur.execute("SET SESSION innodb_lock_wait_timeout = 1")
            try:
                worker.execute("UPDATE emails SET status = 'classified' WHERE id = %s",
                               (other,))
            except (DatabaseBusyError, DatabaseError) as e:
                pytest.fail(f"a worker's write to another mail waited for the erasure: {e}")
    finally:
        worker.close()
