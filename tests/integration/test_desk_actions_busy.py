"""The desk's and the admin's writes repeat a deadlock or lock wait inside the action, as
the staff actions on drafts do (issue 43; test_staff_actions_busy.py): an admin's retry and
resolve, a classification correction, an assignment, a snooze and the autosaved edit run
again when MariaDB rolled their transaction back (1213, 1205), audited ``action_repeated``.

The deadlocks are real ones, made as in test_staff_actions_busy.py (``through_a_deadlock``);
the lock wait timeout is a real 1205: the action's session waits at most 1 s
(``innodb_lock_wait_timeout``) for a row another connection holds, and the other connection
lets go once it has seen the action's second try waiting (a new transaction in INNODB_TRX),
whatever the time that took.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from email_rag.db import Database
from email_rag.db.audit import events_for
from email_rag.review import assignment, console, corrections, edits, snooze
from tests.factories import make_draft, make_email, make_job, make_mailbox
from tests.helpers import wait_for
from tests.integration.test_staff_actions_busy import (
    DRAFT_ROW,
    MAIL_ROW,
    against,
    count,
    repeats,
    through_a_deadlock,
)

JOB_ROW = "SELECT id FROM jobs WHERE id = %s FOR UPDATE"
SNOOZE_ROW = "SELECT email_id FROM mail_snoozes WHERE email_id = %s FOR UPDATE"
ASSIGNMENT_ROW = "SELECT email_id FROM mail_assignments WHERE email_id = %s FOR UPDATE"
USER_ROW = "SELECT id FROM users WHERE id = %s FOR UPDATE"
EDIT_ROW = "SELECT draft_id FROM draft_edits WHERE draft_id = %s FOR UPDATE"


def errnos(db: Database, entity: str, entity_id: int) -> list[int]:
    import json

    return [json.loads(e["detail"])["errno"] for e in repeats(db, entity, entity_id)]


def dead_job(db: Database) -> tuple[int, int]:
    mail = make_email(db, make_mailbox(db), status="failed")
    job = make_job(db, mail, state="dead")
    db.execute("UPDATE jobs SET attempts = 4, last_error = 'LLMError: 503' WHERE id = %s",
               (job,))
    return mail, job


def user(db: Database, name: str) -> int:
    with db.transaction() as cur:
        cur.execute("INSERT INTO users (name, role, password_hash) VALUES (%s, 'admin', 'x')",
                    (name,))
        return cur.lastrowid


def test_an_admin_retry_that_hits_a_deadlock_is_repeated_and_queues_the_entry_once(
        services, db):
    mail, job = dead_job(db)
    r = through_a_deadlock(db, lambda: console.retry_jobs(services, [job], "user:root"),
                           second=(MAIL_ROW, mail), first=(JOB_ROW, job))
    assert r.retried == [job] and r.refused == {}
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "queued"
    assert [e["event"] for e in events_for(db, "job", job)].count("admin_retry") == 1
    assert errnos(db, "job", job) == [1213]


def test_an_admin_resolve_that_hits_a_deadlock_is_repeated(services, db):
    mail, job = dead_job(db)
    r = through_a_deadlock(
        db, lambda: console.resolve_mail(services, mail, "user:root", "answered by phone"),
        second=(JOB_ROW, job), first=(MAIL_ROW, mail))
    assert r["resolved_jobs"] == [job]
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (mail,))["status"] == \
        "resolved"
    assert [e["event"] for e in events_for(db, "job", job)].count("admin_resolved") == 1
    assert errnos(db, "email", mail) == [1213]


def test_a_classification_correction_that_hits_a_deadlock_is_repeated(services, db):
    mail = make_email(db, make_mailbox(db))
    draft = make_draft(db, mail)
    changes = through_a_deadlock(
        db, lambda: corrections.correct_classification(services, draft, "user:anna", "billing", "de",
                                                "high"),
        second=(MAIL_ROW, mail), first=(DRAFT_ROW, draft))
    assert changes["category"][1] == "billing"
    assert db.fetchone("SELECT category FROM emails WHERE id = %s", (mail,))["category"] == \
        "billing"
    assert [e["event"] for e in events_for(db, "email", mail)].count(
        "classification_corrected") == 1
    assert errnos(db, "draft", draft) == [1213]


def test_an_assignment_that_hits_a_deadlock_is_repeated(services, db):
    box = make_mailbox(db)
    mail = make_email(db, box)
    bob, anna = user(db, "bob"), user(db, "anna")
    db.execute("INSERT INTO mail_assignments (email_id, user_id, assigned_by) VALUES "
               "(%s, %s, 'bob')", (mail, bob))
    r = through_a_deadlock(
        db, lambda: assignment.assign(services, mail, box, "anna", "user:root"),
        second=(USER_ROW, anna), first=(ASSIGNMENT_ROW, mail))
    assert r == ("bob", "anna")
    assert db.fetchone("SELECT user_id FROM mail_assignments WHERE email_id = %s",
                       (mail,))["user_id"] == anna
    assert [e["event"] for e in events_for(db, "email", mail)].count("assigned") == 1
    assert errnos(db, "email", mail) == [1213]


def test_a_snooze_that_hits_a_deadlock_is_repeated(services, db):
    mail = make_email(db, make_mailbox(db), status="draft_ready")
    until = datetime(2030, 1, 2, 8, 0)
    db.execute("INSERT INTO mail_snoozes (email_id, until_at, snoozed_by) VALUES "
               "(%s, %s, 'user:bob')", (mail, until - timedelta(days=1)))
    s = through_a_deadlock(db, lambda: snooze.snooze(services, mail, until, "anna"),
                           second=(SNOOZE_ROW, mail), first=(MAIL_ROW, mail))
    assert s.until_at == until
    assert db.fetchone("SELECT until_at FROM mail_snoozes WHERE email_id = %s",
                       (mail,))["until_at"] == until
    assert [e["event"] for e in events_for(db, "email", mail)].count("snoozed") == 1
    assert errnos(db, "email", mail) == [1213]


def waiting(db: Database) -> list[tuple[int, Any]]:
    """(thread, started) of the transactions of this test's database waiting for a lock: a
    try that ran again is a new transaction of the same thread, started later."""
    return [(int(r["t"]), r["s"]) for r in db.fetchall(
        "SELECT t.trx_mysql_thread_id AS t, t.trx_started AS s "
        "FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p "
        "ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = %s",
        (db.database,))]


def through_a_lock_wait_timeout(db: Database, services: Any, action, held: tuple[str, int]):
    """Run ``action`` in a thread on a session that waits at most 1 s for a lock while
    another connection holds ``held``; the other lets go once the action's second try waits
    (its first ended in 1205). Returns the action's result (or raises its error)."""
    services.db.execute("SET SESSION innodb_lock_wait_timeout = 1")

    def hold(cur, start, outcome: dict[str, Any]) -> None:
        cur.fetchall(held[0], (held[1],))
        start()
        seen: list[tuple[int, Any]] = []

        def a_second_try_waits() -> bool:
            seen.extend(w for w in waiting(db) if w not in seen)
            return bool(outcome) or len({s for _, s in seen}) >= 2

        wait_for(a_second_try_waits, 120, 0.25, "the action's second try to wait")
        assert not outcome, f"the action ended before it was repeated: {outcome}"

    return against(db, action, hold)


def test_a_snooze_that_waits_past_the_lock_wait_timeout_is_repeated(services, db):
    mail = make_email(db, make_mailbox(db), status="draft_ready")
    until = datetime(2030, 1, 2, 8, 0)
    through_a_lock_wait_timeout(db, services, lambda: snooze.snooze(services, mail, until,
                                                                    "anna"), (MAIL_ROW, mail))
    assert count(db, "SELECT COUNT(*) AS n FROM mail_snoozes WHERE email_id = %s", mail) == 1
    assert set(errnos(db, "email", mail)) == {1205}


def test_an_autosaved_edit_that_waits_past_the_lock_wait_timeout_is_repeated(services, db):
    mail = make_email(db, make_mailbox(db))
    draft = make_draft(db, mail)
    anna = user(db, "anna")
    edits.save_edit(services, draft, anna, "Hallo", "user:anna")
    through_a_lock_wait_timeout(db, services, lambda: edits.save_edit(
        services, draft, anna, "Hallo Alice", "user:anna"), (EDIT_ROW, draft))
    assert edits.own_edit(services, draft, anna).body == "Hallo Alice"
    assert set(errnos(db, "draft", draft)) == {1205}
