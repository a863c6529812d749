"""Who did it, written one way: a person is ``user:NAME`` in every audit event, whether
they acted on the web, with ``--by NAME`` on the command line, or confirmed a no-reply;
a command-line call without ``--by`` is the login, ``cli:LOGIN``; an audit search by a
name finds the person's events in every form, old rows included."""

from __future__ import annotations

import getpass
import json

from email_rag.core.settings import MailboxConfig
from email_rag.core.states import Actor
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


def test_a_search_by_process_name_finds_its_events_old_and_new(db, settings):
    svc = Services(settings)
    try:
        for actor, event in ((Actor.POLLER, "poll_failed"), ("poller", "poll_failed"),
                             (Actor.WORKER, "claimed"), ("worker", "claimed"),
                             ("user:anna", "approved")):
            svc.audit.record(AuditEvent(actor, "mailbox", 1, event))
        pollers = {r.actor for r in timeline.search_audit(svc, actor="poller")}
        workers = {r.actor for r in timeline.search_audit(svc, actor="worker")}
    finally:
        svc.close()
    assert pollers == {"system:poller", "poller"}
    assert workers == {"worker:jobs", "worker"}


def test_a_mailbox_command_without_by_is_the_login(env, db):
    config = MailboxConfig(name="m1", host="127.0.0.1", port=9, username="u", password="p")
    extra = {**env, "EMAIL_RAG_MAILBOXES": json.dumps(
        [{**config.model_dump(mode="json"), "password": "p"}])}
    done = run_cli("mailboxes", "cutoff", "m1", "2026-10-01", env_extra=extra)
    assert done.returncode == 0, done.stdout + done.stderr
    assert actors(db, "history_cutoff_changed") == [f"cli:{getpass.getuser()}"]
