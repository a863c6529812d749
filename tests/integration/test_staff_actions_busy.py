"""A deadlock while staff act on a draft or a mail is repeated inside the action (issue 43).

Each staff action that writes (approve, approve with an edit, reject, regenerate, a reply
written by hand, a forward, an admin's send decision) is one transaction: when MariaDB
rolls it back for a deadlock (1213) or a lock wait timeout (1205), nothing of it was
written, so the action runs it again itself (``repeat_when_busy``) and staff see the
action's result, never "Deadlock found when trying to get lock". The repeat is audited
(``action_repeated``) in the transaction that commits.

The deadlock is a real one: a second connection holds the row the action takes second,
the action takes its first row and waits, then the second connection asks for that first
row. InnoDB rolls back the lighter transaction, the action's (the other one has written
ballast rows first), and the other connection commits, which lets the repeat through.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

from email_rag.db import Database
from email_rag.db.audit import events_for
from email_rag.sending import admin, forward, handwrite, regenerate, review
from tests.conftest import MARIADB
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.helpers import wait_for

DRAFT_ROW = "SELECT id FROM drafts WHERE id = %s FOR UPDATE"
MAIL_ROW = "SELECT id FROM emails WHERE id = %s FOR UPDATE"
ATTEMPT_ROW = "SELECT id FROM send_attempts WHERE id = %s FOR UPDATE"
# every draft of a mail and the gap after them: an insert of a new draft for it waits
DRAFTS_OF_MAIL = "SELECT id FROM drafts WHERE email_id = %s FOR UPDATE"


def lock_waits(db: Database) -> int:
    """Transactions of this test's database waiting for a row lock. InnoDB refreshes the
    INNODB_TRX table only when it was not read for 0.1 s: ask less often than that."""
    return int(db.fetchone(
        "SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t "
        "JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id "
        "WHERE t.trx_state = 'LOCK WAIT' AND p.DB = %s", (db.database,))["n"])


def against(db: Database, action: Callable[[], Any],
            other: Callable[[Any, Callable[[], None], dict[str, Any]], None]) -> Any:
    """Run ``action`` in a thread against another connection's transaction:
    ``other(cur, start, outcome)`` takes its locks, starts the action (``start()``) and
    commits by returning. Returns the action's result (or raises its error)."""
    second = Database(**MARIADB, database=db.database)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = action()
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            outcome["error"] = e

    worker = threading.Thread(target=run)
    try:
        with second.transaction() as cur:
            other(cur, worker.start, outcome)
        worker.join(60)
    finally:
        if worker.is_alive():
            worker.join(60)
        second.close()
    assert not worker.is_alive(), "the action did not finish after the other transaction"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def through_a_deadlock(db: Database, action: Callable[[], Any],
                       second: tuple[str, int], first: tuple[str, int]) -> Any:
    """Run ``action`` in a thread so that its first try is a deadlock's victim: another
    connection holds ``second`` (the row the action locks after ``first``), waits until the
    action waits for it, then asks for ``first``. Returns the action's result (or raises its
    error)."""
    db.execute("CREATE TABLE IF NOT EXISTS ballast (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")

    def deadlock(cur, start: Callable[[], None], outcome: dict[str, Any]) -> None:
        # the heavier transaction: InnoDB picks the action's as the deadlock victim
        cur.execute("INSERT INTO ballast (n) SELECT seq FROM seq_1_to_500")
        cur.fetchall(second[0], (second[1],))
        start()
        wait_for(lambda: outcome or lock_waits(db) == 1, 60, 0.25,
                 "the action to wait for the row")
        assert not outcome, f"the action ended before it waited: {outcome}"
        cur.fetchall(first[0], (first[1],))  # the deadlock: the action's try rolls back

    return against(db, action, deadlock)


def repeats(db: Database, entity: str, entity_id: int) -> list[dict]:
    return [e for e in events_for(db, entity, entity_id) if e["event"] == "action_repeated"]


def count(db: Database, query: str, *params: Any) -> int:
    return int(db.fetchone(query, params)["n"])


@pytest.fixture
def mail_and_draft(db):
    mail = make_email(db, make_mailbox(db), thread_key="t" * 64)
    return mail, make_draft(db, mail)


def test_an_approval_that_hits_a_deadlock_is_repeated_and_sends_once(services, db,
                                                                     mail_and_draft):
    """GIVEN a draft whose mail row another transaction holds WHEN anna approves it with
    her edit and her transaction is a deadlock's victim THEN the approval succeeds (her
    text), with one send attempt, one send job and one approval in the audit log, and the
    repeat is audited."""
    mail, draft = mail_and_draft
    r = through_a_deadlock(
        db, lambda: review.approve(services, draft, "anna", "Hallo Alice,\n\nneu gestartet.\n"),
        second=(MAIL_ROW, mail), first=(DRAFT_ROW, draft))
    assert r.action == "approved" and r.detail == {"edited": True}
    assert count(db, "SELECT COUNT(*) AS n FROM send_attempts WHERE draft_id = %s", draft) == 1
    assert count(db, "SELECT COUNT(*) AS n FROM jobs WHERE kind = 'send_draft'") == 1
    assert db.fetchone("SELECT status, body_final FROM drafts WHERE id = %s", (draft,)) == {
        "status": "approved", "body_final": "Hallo Alice,\n\nneu gestartet.\n"}
    assert [e["event"] for e in events_for(db, "draft", draft)].count("approved") == 1
    [repeat] = repeats(db, "draft", draft)
    assert repeat["actor"] == "user:anna"
    assert '"action": "approve"' in repeat["detail"] and '"errno": 1213' in repeat["detail"]


def test_a_rejection_that_hits_a_deadlock_is_repeated(services, db, mail_and_draft):
    mail, draft = mail_and_draft
    r = through_a_deadlock(db, lambda: review.reject(services, draft, "anna", "spam"),
                           second=(MAIL_ROW, mail), first=(DRAFT_ROW, draft))
    assert r.action == "rejected"
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == "rejected"
    assert [e["event"] for e in events_for(db, "draft", draft)].count("rejected") == 1
    assert len(repeats(db, "draft", draft)) == 1


def test_a_regenerate_that_hits_a_deadlock_is_repeated_and_queues_once(services, db,
                                                                       mail_and_draft):
    mail, draft = mail_and_draft
    make_job(db, mail, state="done")
    r = through_a_deadlock(db, lambda: regenerate.regenerate(services, draft, "anna", "kürzer"),
                           second=(MAIL_ROW, mail), first=(DRAFT_ROW, draft))
    assert r.action == "requeued"
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == \
        "superseded"
    assert count(db, "SELECT COUNT(*) AS n FROM jobs WHERE email_id = %s", mail) == 1
    assert len(repeats(db, "draft", draft)) == 1


def test_a_reply_by_hand_that_hits_a_deadlock_is_repeated_and_written_once(services, db,
                                                                           mail_and_draft):
    mail, draft = mail_and_draft
    w = through_a_deadlock(
        db, lambda: handwrite.write(services, mail, "anna", "alice@customer.example", "Hallo"),
        second=(DRAFT_ROW, draft), first=(MAIL_ROW, mail))
    assert w.superseded == [draft]
    assert count(db, "SELECT COUNT(*) AS n FROM drafts WHERE email_id = %s", mail) == 2
    assert len(repeats(db, "email", mail)) == 1


def test_a_forward_that_hits_a_deadlock_is_repeated_and_sends_once(services, db,
                                                                   mail_and_draft):
    mail, _ = mail_and_draft
    f = through_a_deadlock(
        db, lambda: forward.forward(services, mail, "anna", "buha@firma.example", "Bitte."),
        second=(DRAFTS_OF_MAIL, mail), first=(MAIL_ROW, mail))
    assert f.action == "forwarded"
    assert count(db, "SELECT COUNT(*) AS n FROM send_attempts") == 1
    assert count(db, "SELECT COUNT(*) AS n FROM jobs WHERE kind = 'send_draft'") == 1
    assert len(repeats(db, "email", mail)) == 1


def test_an_admin_send_decision_that_hits_a_deadlock_is_repeated(services, db, mail_and_draft):
    mail, draft = mail_and_draft
    attempt = review.approve(services, draft, "anna").send_attempt_id
    db.execute("UPDATE send_attempts SET status = 'unknown' WHERE id = %s", (attempt,))
    status = through_a_deadlock(
        db, lambda: admin.resolve_unknown(services, attempt, "root", "mark_sent", "phoned"),
        second=(DRAFT_ROW, draft), first=(ATTEMPT_ROW, attempt))
    assert status == "sent"
    assert [e["event"] for e in events_for(db, "send_attempt", attempt)].count(
        "admin_mark_sent") == 1
    assert len(repeats(db, "send_attempt", attempt)) == 1


def test_staff_approving_on_the_web_through_a_deadlock_see_it_approved(client, db,
                                                                       mail_and_draft):
    """GIVEN anna on a draft's page WHEN her approval's transaction is a deadlock's victim
    THEN the page she lands on says the draft was approved (no error page, no "Deadlock"),
    and one send attempt exists."""
    mail, draft = mail_and_draft
    anna = client("anna")
    page = anna.get(f"/drafts/{draft}").text
    seen = re.search(r'name="seen" value="([^"]+)"', page).group(1)
    r = through_a_deadlock(
        db, lambda: anna.post(f"/drafts/{draft}/approve", data={
            "csrf_token": anna.csrf, "seen": seen, "body": "Hallo Alice"}),
        second=(MAIL_ROW, mail), first=(DRAFT_ROW, draft))
    assert r.status_code == 200
    assert f"Draft #{draft} approved with your edits." in r.text
    assert "Deadlock" not in r.text and "Temporarily unavailable" not in r.text
    assert count(db, "SELECT COUNT(*) AS n FROM send_attempts WHERE draft_id = %s", draft) == 1
