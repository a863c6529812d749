"""Bulk actions on the queue against the real MariaDB: each item done by the single
action's domain function in its own transaction, one outcome per item; a refused item
(another mailbox, approved meanwhile) is reported and never hides or undoes the others."""

from __future__ import annotations

import pytest

from email_rag.auth import users as user_store
from email_rag.core.errors import BadInputError
from email_rag.review import assignment, bulk
from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import make_user


@pytest.fixture
def world(db):
    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    for name in ("anna", "bob", "carl"):
        make_user(db, name)
    user_store.set_mailbox(db, "anna", "support", True, "test")
    user_store.set_mailbox(db, "bob", "support", True, "test")
    user_store.set_mailbox(db, "carl", "sales", True, "test")
    drafts = [make_draft(db, make_email(db, support, subject=f"Frage {i}")) for i in range(3)]
    foreign = make_draft(db, make_email(db, sales, subject="Sales"))
    return {"support": support, "drafts": drafts, "foreign": foreign}


def _status(db, draft_id):
    return db.fetchone("SELECT d.status AS draft, e.status AS mail FROM drafts d JOIN emails e "
                       "ON e.id = d.email_id WHERE d.id = %s", (draft_id,))


def test_a_bulk_reject_reports_each_item_and_a_refused_one_hides_nothing(services, db, world):
    """GIVEN three support drafts, the second approved by bob meanwhile, and a sales draft
    WHEN anna (support) rejects all four with a reason THEN the first and third are rejected
    (mails rejected, audited under user:anna), the second is refused with its state and
    stays approved, the sales one "does not exist" and is untouched; a second run says
    unchanged for the rejected ones."""
    a, b, c = world["drafts"]
    db.execute("UPDATE drafts SET status = 'approved' WHERE id = %s", (b,))
    scope = frozenset({world["support"]})
    out = bulk.run(services, scope, "anna", "reject", [a, b, c, world["foreign"]],
                   reason="Doppelte Anfrage")
    assert [(o.draft_id, o.result) for o in out] == [
        (a, "done"), (b, "refused"), (c, "done"), (world["foreign"], "refused")]
    assert "approved" in out[1].why and "does not exist" in out[3].why
    assert _status(db, a) == {"draft": "rejected", "mail": "rejected"}
    assert _status(db, b)["draft"] == "approved"
    assert _status(db, world["foreign"]) == {"draft": "pending_review", "mail": "draft_ready"}
    actors = db.fetchall("SELECT DISTINCT actor FROM audit_log WHERE event = 'rejected'")
    assert actors == [{"actor": "user:anna"}]
    again = bulk.run(services, scope, "anna", "reject", [a, c], reason="Doppelte Anfrage")
    assert [o.result for o in again] == ["unchanged", "unchanged"]


def test_mark_no_reply_closes_each_mail_without_an_answer(services, db, world):
    a, b, _ = world["drafts"]
    out = bulk.run(services, None, "anna", "no_reply", [a, b])
    assert [o.result for o in out] == ["done", "done"]
    assert _status(db, a) == {"draft": "rejected", "mail": "no_reply"}
    row = db.fetchone("SELECT reject_reason FROM drafts WHERE id = %s", (a,))
    assert row["reject_reason"] == bulk.NO_REPLY_REASON
    ev = db.fetchone("SELECT actor, from_state, to_state FROM audit_log "
                     "WHERE event = 'marked_no_reply' ORDER BY id LIMIT 1")
    assert ev == {"actor": "user:anna", "from_state": "draft_ready", "to_state": "no_reply"}
    assert db.fetchone("SELECT COUNT(*) AS n FROM draft_reviews WHERE outcome = 'rejected'")["n"] == 2
    assert [o.result for o in bulk.run(services, None, "anna", "no_reply", [a])] == ["unchanged"]


def test_a_bulk_assign_gives_each_mail_to_bob_and_refuses_an_outsider(services, db, world):
    a, b, c = world["drafts"]
    email_b = db.fetchone("SELECT email_id FROM drafts WHERE id = %s", (b,))["email_id"]
    assignment.assign(services, email_b, world["support"], "bob", "user:root")
    out = bulk.run(services, None, "anna", "assign", [a, b, c], to="bob")
    assert [o.result for o in out] == ["done", "unchanged", "done"]
    owners = db.fetchall("SELECT u.name FROM mail_assignments m JOIN users u ON u.id = m.user_id")
    assert [r["name"] for r in owners] == ["bob"] * 3
    refused = bulk.run(services, None, "anna", "assign", [a], to="carl")
    assert refused[0].result == "refused" and "cannot work on this mailbox" in refused[0].why


def test_a_reject_without_a_reason_or_an_unknown_action_does_nothing(services, db, world):
    with pytest.raises(BadInputError):
        bulk.run(services, None, "anna", "reject", world["drafts"], reason=" ")
    with pytest.raises(BadInputError):
        bulk.run(services, None, "anna", "approve", world["drafts"])
    assert {_status(db, d)["draft"] for d in world["drafts"]} == {"pending_review"}
