"""The transition tables, exhaustively: every allowed move works, every other is refused.

Each record's store (email_rag/db/stores.py) is driven against the real MariaDB from
every status to every status: an allowed move changes the row and writes one
``state_changed`` event; any other move raises ``TransitionRefused`` naming the
record, both statuses and why, and writes nothing.
"""

from __future__ import annotations

import itertools

import pytest

from email_rag.core.errors import TransitionRefused
from email_rag.core.states import (
    DRAFT_MOVES,
    JOB_MOVES,
    MAIL_MOVES,
    MAIL_REOPENABLE,
    MAIL_TERMINAL,
    SEND_MOVES,
    DraftStatus,
    JobState,
    MailStatus,
    SendStatus,
)
from email_rag.db.stores import Stores
from tests.factories import make_draft, make_email, make_job, make_mailbox

TABLES = {"email": (MailStatus, MAIL_MOVES), "draft": (DraftStatus, DRAFT_MOVES),
          "send_attempt": (SendStatus, SEND_MOVES), "job": (JobState, JOB_MOVES)}
SQL_TABLE = {"email": ("emails", "status"), "draft": ("drafts", "status"),
             "send_attempt": ("send_attempts", "status"), "job": ("jobs", "state")}


@pytest.mark.parametrize("record", TABLES)
def test_every_status_has_a_row_and_moves_only_to_known_statuses(record):
    enum, moves = TABLES[record]
    assert set(moves) == set(enum)
    for targets in moves.values():
        assert targets <= set(enum)


def test_terminal_mail_statuses_have_no_way_out_but_reopen_and_a_bounce_of_a_sent_one():
    """A closed mail leaves only when staff reopen it (to manual; review/reopen.py) or, a
    sent one, when its reply bounced; a history mail never."""
    assert {s for s, nxt in MAIL_MOVES.items() if nxt <= {MailStatus.MANUAL}} \
        | {MailStatus.SENT} == set(MAIL_TERMINAL)
    assert MAIL_MOVES[MailStatus.SENT] == {MailStatus.DRAFT_READY, MailStatus.MANUAL}
    assert set(MAIL_REOPENABLE) == set(MAIL_TERMINAL) - {MailStatus.HISTORY}
    assert all(MAIL_MOVES[s] >= {MailStatus.MANUAL} for s in MAIL_REOPENABLE)
    assert not MAIL_MOVES[MailStatus.HISTORY]


@pytest.fixture
def rows(db):
    mail = make_email(db, make_mailbox(db))
    draft = make_draft(db, mail)
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status) VALUES (%s, %s, 'pending')",
               (draft, f"<draft-{draft}@x>"))
    send = db.fetchone("SELECT id FROM send_attempts")["id"]
    job = make_job(db, mail)
    return {"email": mail, "draft": draft, "send_attempt": send, "job": job}


def _store(stores: Stores, record: str):
    return {"email": stores.mails, "draft": stores.drafts, "send_attempt": stores.sends,
            "job": stores.jobs}[record]


def _columns(record: str) -> dict:
    # the send store's move query also records the relay's answer
    return ({"error": None, "response": None, "reconciled": 0, "verified_by": None,
             "accepted_at": None, "decided_by": None} if record == "send_attempt" else {})


@pytest.mark.parametrize("record", TABLES)
def test_every_allowed_move_works_and_every_other_is_refused(db, rows, record):
    enum, moves = TABLES[record]
    table, column = SQL_TABLE[record]
    store = _store(Stores.build(), record)
    row_id = rows[record]
    refused = allowed = 0
    for current, wanted in itertools.product(enum, enum):
        db.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s", (str(current), row_id))
        events_before = db.fetchone("SELECT COUNT(*) AS n FROM audit_log")["n"]
        if current == wanted:
            continue
        with db.transaction() as cur:
            if wanted in moves[current]:
                store.move(cur, row_id, wanted, actor="test", reason="table test",
                           **_columns(record))
                allowed += 1
            else:
                with pytest.raises(TransitionRefused) as e:
                    store.move(cur, row_id, wanted, actor="test", **_columns(record))
                assert (e.value.record, e.value.current, e.value.wanted) == (record, current, wanted)
                assert str(current) in str(e.value) and str(wanted) in str(e.value)
                refused += 1
        now = db.fetchone(f"SELECT {column} AS s FROM {table} WHERE id = %s", (row_id,))["s"]
        events = db.fetchone("SELECT COUNT(*) AS n FROM audit_log")["n"]
        if wanted in moves[current]:
            assert (now, events) == (str(wanted), events_before + 1), (current, wanted)
        else:
            assert (now, events) == (str(current), events_before), (current, wanted)
    assert allowed == sum(len(v) for v in moves.values())
    assert allowed + refused == len(enum) * (len(enum) - 1)


def test_the_naive_store_of_the_counter_check_writes_any_move(db, rows):
    from email_rag_harness.chaos.naive import NaiveMailStore

    store = NaiveMailStore()
    db.execute("UPDATE emails SET status = 'sent' WHERE id = %s", (rows["email"],))
    with db.transaction() as cur:
        store.move(cur, rows["email"], MailStatus.CLASSIFIED, actor="test")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s",
                       (rows["email"],))["status"] == "classified"
