"""The "no reply suggested" list through the real CLI: list, confirm, reply (one click each)."""

import json

from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_cli


def _status(db, email_id):
    return db.fetchone("SELECT status, needs_reply FROM emails WHERE id = %s", (email_id,))


def test_staff_confirm_or_ask_for_a_reply_and_a_second_click_changes_nothing(env, db):
    """GIVEN two mails the model said need no reply (no header agreeing) WHEN staff confirm
    one and ask for a reply to the other THEN the first is no_reply (audited with who
    decided), the second is classified again with its job queued for a draft; a second
    click on either is a no-op that says so."""
    mb = make_mailbox(db)
    quiet = make_email(db, mb, status="no_reply_suggested", subject="Thanks a lot",
                       category="feedback", needs_reply=False)
    injected = make_email(db, mb, status="no_reply_suggested", subject="Problem mit Rechnung",
                          category="spam", needs_reply=False)
    job = make_job(db, injected, state="done")

    listed = json.loads(run_cli("mails", "no-reply", "list", "--json").stdout)
    assert [m["id"] for m in listed["data"]["mails"]] == [quiet, injected]

    ok = run_cli("mails", "no-reply", "confirm", str(quiet), "--by", "anna", "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)["data"]["action"] == "confirmed"
    assert _status(db, quiet)["status"] == "no_reply"

    reply = run_cli("mails", "no-reply", "reply", str(injected), "--by", "ben", "--json")
    assert reply.returncode == 0, reply.stdout + reply.stderr
    out = json.loads(reply.stdout)["data"]
    assert out["action"] == "reply_requested" and out["job_id"] == job
    assert _status(db, injected) == {"status": "classified", "needs_reply": 1}
    assert db.fetchone("SELECT state FROM jobs WHERE id = %s", (job,))["state"] == "queued"

    again = run_cli("mails", "no-reply", "confirm", str(injected), "--by", "anna", "--json")
    assert json.loads(again.stdout)["data"]["action"] == "unchanged"
    assert "nothing changed" in json.loads(again.stdout)["message"]
    assert _status(db, injected)["status"] == "classified"
    who = db.fetchall("SELECT actor, to_state FROM audit_log WHERE entity_type = 'email' AND "
                      "event = 'state_changed' ORDER BY id")
    assert [(r["actor"], r["to_state"]) for r in who] == [("user:anna", "no_reply"),
                                                          ("user:ben", "classified")]
