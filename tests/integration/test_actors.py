"""Who did it, written one way: a person is ``user:NAME`` in every audit event, whether
they acted on the web, with ``--by NAME`` on the command line, or confirmed a no-reply;
a command-line call without ``--by`` is the login, ``cli:LOGIN``; an audit search by a
name finds the person's events in every form, old rows included."""

from __future__ import annotations

from email_rag.db.audit import AuditEvent
from email_rag.review import no_reply, timeline
from email_rag.wiring.services import Services
from tests.factories import make_email, make_job, make_mailbox
from tests.helpers import run_cli


def actors(db, event):
    return [r["actor"] for r in db.fetchall("SELECT actor FROM audit_log WHERE event = %s",
                                            (event,))]


def test_a_person_is_user_name_on_the_command_line_and_in_no_reply_decisions(env, db,
                                                                             settings):
    mb = make_mailbox(db)
    failed = make_email(db, mb, status="failed")
    job = make_job(db, failed, state="dead")
    done = run_cli("failed", "retry", str(job), "--by", "anna", "--note", "LLM is back",
                   env_extra=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert actors(db, "admin_retry") == ["user:anna"]

    quiet = make_email(db, mb, status="no_reply_suggested")
    svc = Services(settings)
    try:
        no_reply.decide(svc, quiet, "anna", reply=False)
    finally:
        svc.close()
    assert {r["actor"] for r in db.fetchall(
        "SELECT actor FROM audit_log WHERE entity_type = 'email' AND entity_id = %s",
        (str(quiet),))} == {"user:anna"}


def test_a_search_by_name_finds_every_form_of_that_person(db, settings):
    svc = Services(settings)
    try:
        for actor, event in (("user:anna", "approved"), ("anna", "no_reply_confirmed"),
                             ("cli:anna", "admin_retry"), ("user:annabel", "approved"),
                             ("worker", "claimed")):
            svc.audit.record(AuditEvent(actor, "email", 1, event))
        found = {(r.actor, r.event) for r in timeline.search_audit(svc, actor="anna")}
        by_prefix = {r.actor for r in timeline.search_audit(svc, actor="user:")}
    finally:
        svc.close()
    assert found >= {("user:anna", "approved"), ("anna", "no_reply_confirmed"),
                     ("cli:anna", "admin_retry")}
    assert ("worker", "claimed") not in found
    assert by_prefix == {"user:anna", "user:annabel"}
