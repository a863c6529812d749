"""Pending/snooze, reopen and forward over HTTP (real MariaDB, Redis and a local SMTP
relay): the forms on the draft and mail pages, what the queue shows, what is audited, the
refusals with nothing changed, and nobody outside the mail's mailbox gets near them."""

from __future__ import annotations

import email
import html as htmllib
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from email_rag_harness.testing.smtp_server import FaultSmtpServer

from email_rag.runtime.job_runner import JobRunner
from email_rag.sending.sender import SendService
from email_rag.wiring.services import Services
from tests.factories import make_draft, make_email
from tests.integration.test_desk_casework import SentFolder

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}


@pytest.fixture
def relay():
    with FaultSmtpServer() as server:
        yield server


@pytest.fixture
def app(settings, db, relay):
    from tests.webutil import web_app

    settings.smtp_port = relay.port
    settings.retry_jitter = 0
    return web_app(settings, db, PEOPLE)


@pytest.fixture
def case(db, team) -> dict[str, int]:
    support, sales = team
    mail = make_email(db, support, subject="Lieferung <b>fehlt</b>", from_name="Carla Kunde",
                      from_addr="carla@kunde.example",
                      body="Mein Paket ist nicht da. <script>alert(1)</script>")
    other = make_email(db, support, subject="Andere Frage")
    return {"mail": mail, "draft": make_draft(db, mail), "other": make_draft(db, other),
            "closed": make_email(db, support, status="rejected", subject="Abgelehnt"),
            "sales": make_email(db, sales, status="sent", subject="Sales"),
            "sales_waiting": make_email(db, sales, subject="Sales wartet")}


def _tomorrow_local() -> str:
    day = datetime.now(ZoneInfo("Europe/Berlin")) + timedelta(days=1)
    return day.strftime("%Y-%m-%dT09:30")


def _post(c, path, **data):
    return c.post(path, data={"csrf_token": c.csrf, **data}, follow_redirects=False)


def _queue_rows(c, view: str = "") -> str:
    return c.get("/queue", params={"view": view} if view else {}).text


def test_an_agent_snoozes_a_draft_until_tomorrow_and_wakes_it(client, db, case):
    """GIVEN anna on a waiting draft WHEN she puts its mail aside until tomorrow 09:30 (her
    zone) THEN she is back on the queue with the date said, the draft is gone from All and
    listed under Snoozed with the date, the mail page says until when; WHEN she takes it
    back THEN it is in All again; both audited under user:anna."""
    anna = client("anna")
    page = anna.get(f"/drafts/{case['draft']}").text
    assert f'action="/mails/{case["mail"]}/snooze"' in page and 'id="view-snoozed"' not in page
    r = _post(anna, f"/mails/{case['mail']}/snooze", until=_tomorrow_local(),
              back=f"/drafts/{case['draft']}")
    assert r.status_code == 303 and r.headers["location"] == "/queue"
    queue = anna.get("/queue").text
    assert "is put aside until" in queue and "09:30" in queue
    assert f'id="draft-{case["draft"]}"' not in queue and f'id="draft-{case["other"]}"' in queue
    snoozed = _queue_rows(anna, "snoozed")
    assert f'id="draft-{case["draft"]}"' in snoozed and f'id="draft-{case["other"]}"' not in snoozed
    assert "until " in snoozed and "09:30" in snoozed
    mail_page = anna.get(f"/mails/{case['mail']}").text
    assert 'id="snoozed-until"' in mail_page and "09:30" in mail_page
    r = _post(anna, f"/mails/{case['mail']}/unsnooze", back=f"/mails/{case['mail']}")
    assert r.status_code == 303
    assert f'id="draft-{case["draft"]}"' in anna.get("/queue").text
    events = db.fetchall("SELECT event, actor FROM audit_log WHERE entity_id = %s AND event IN "
                         "('snoozed', 'unsnoozed') ORDER BY id", (str(case["mail"]),))
    assert events == [{"event": "snoozed", "actor": "user:anna"},
                      {"event": "unsnoozed", "actor": "user:anna"}]


def test_a_snooze_whose_date_passed_is_back_and_ended_when_the_queue_is_read(client, db, case):
    anna = client("anna")
    _post(anna, f"/mails/{case['mail']}/snooze", until=_tomorrow_local())
    db.execute("UPDATE mail_snoozes SET until_at = UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE")
    assert f'id="draft-{case["draft"]}"' in anna.get("/queue").text
    ended = db.fetchall("SELECT actor FROM audit_log WHERE event = 'snooze_ended'")
    assert ended == [{"actor": "system:web"}]


@pytest.mark.parametrize("until", ["2020-01-01T10:00", "bald", ""])
def test_a_bad_snooze_date_is_refused_and_nothing_changes(client, db, case, until):
    anna = client("anna")
    r = _post(anna, f"/mails/{case['mail']}/snooze", until=until,
              back=f"/drafts/{case['draft']}")
    assert r.headers["location"] == f"/drafts/{case['draft']}"
    assert "was not put aside" in htmllib.unescape(anna.get(r.headers["location"]).text)
    assert db.fetchone("SELECT COUNT(*) AS n FROM mail_snoozes")["n"] == 0


def test_a_rejected_case_is_reopened_and_answered_by_hand(client, db, case):
    """GIVEN a rejected mail WHEN anna reopens it with a reason THEN it is manual, the page
    says so with the reason, and offers the reply by hand; a reason is required, an open
    mail offers no Reopen and a hand-made POST is refused with nothing changed."""
    anna = client("anna")
    page = anna.get(f"/mails/{case['closed']}").text
    assert f'action="/mails/{case["closed"]}/reopen"' in page
    assert f'action="/mails/{case["closed"]}/reply"' not in page
    r = _post(anna, f"/mails/{case['closed']}/reopen", reason="")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (case["closed"],))["status"] \
        == "rejected"
    r = _post(anna, f"/mails/{case['closed']}/reopen", reason="Kunde ruft an")
    assert r.headers["location"] == f"/mails/{case['closed']}"
    page = htmllib.unescape(anna.get(r.headers["location"]).text)
    assert "is reopened (it was rejected)" in page
    assert "reopened by user:anna: Kunde ruft an" in page
    assert f'action="/mails/{case["closed"]}/reply"' in page
    assert f'action="/mails/{case["closed"]}/reopen"' not in page
    ev = db.fetchone("SELECT actor, from_state, to_state FROM audit_log WHERE event = 'reopened'")
    assert ev == {"actor": "user:anna", "from_state": "rejected", "to_state": "manual"}
    assert f'action="/mails/{case["mail"]}/reopen"' not in anna.get(f"/mails/{case['mail']}").text
    _post(anna, f"/mails/{case['mail']}/reopen", reason="x")
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (case["mail"],))["status"] \
        == "draft_ready"


def test_an_agent_forwards_a_mail_and_it_is_sent_once(client, db, case, settings, relay):
    """GIVEN a waiting draft WHEN anna forwards its mail from the draft page to a colleague
    (twice: a double click) THEN one forward is queued, the send job hands exactly one
    message to the relay, the mail page lists the forward as sent, and the case is still
    waiting in the queue."""
    anna = client("anna")
    page = anna.get(f"/drafts/{case['draft']}").text
    assert f'action="/mails/{case["mail"]}/forward"' in page
    for _ in range(2):
        r = _post(anna, f"/mails/{case['mail']}/forward", to="lager@firma.example",
                  note="Bitte Sendung prüfen", back=f"/drafts/{case['draft']}")
        assert r.status_code == 303
        assert r.headers["location"] == f"/drafts/{case['draft']}#forward"
    said = htmllib.unescape(anna.get(f"/drafts/{case['draft']}").text)
    assert "forwarded to lager@firma.example already; nothing more is sent" in said
    [fwd] = db.fetchall("SELECT id FROM drafts WHERE source = 'forward'")
    job = db.fetchone("SELECT id FROM jobs WHERE draft_id = %s", (fwd["id"],))
    svc = Services(settings)
    try:
        worker = JobRunner(svc, "w1", pipeline=[])
        worker._handlers = {**worker.handlers(), "send_draft": SendService(
            svc, sent_folder=lambda _: SentFolder()).run}
        assert worker.run(job["id"]) == "done"
    finally:
        svc.close()
    assert len(relay.received) == 1
    msg = email.message_from_bytes(relay.received[0].data)
    assert msg["To"] == "lager@firma.example"
    assert msg["Subject"] == "Fwd: Lieferung <b>fehlt</b>"
    mail_page = anna.get(f"/mails/{case['mail']}").text
    assert 'class="forwarded" data-status="sent"' in mail_page
    assert "<script>alert(1)</script>" not in mail_page
    assert f'id="draft-{case["draft"]}"' in anna.get("/queue").text


def test_a_forward_to_a_bad_address_is_refused(client, db, case):
    anna = client("anna")
    r = _post(anna, f"/mails/{case['mail']}/forward", to="a@x.example\r\nBcc: b@y.example")
    page = htmllib.unescape(anna.get(r.headers["location"].split("#")[0]).text)
    assert "was not forwarded" in page and "line break" in page
    assert db.fetchone("SELECT COUNT(*) AS n FROM drafts WHERE source = 'forward'")["n"] == 0


def test_another_mailboxs_staff_get_404_on_every_case_action(client, db, case):
    """GIVEN carl works sales only WHEN he posts snooze, unsnooze, reopen or forward for a
    support mail THEN 404 each time and nothing is written; anna gets 404 for the sales
    mails likewise; an admin may act on both."""
    carl, anna = client("carl"), client("anna")
    for who, mail in ((carl, case["mail"]), (carl, case["closed"]), (anna, case["sales"]),
                      (anna, case["sales_waiting"])):
        for action, data in (("snooze", {"until": _tomorrow_local()}), ("unsnooze", {}),
                             ("reopen", {"reason": "x"}),
                             ("forward", {"to": "leak@evil.example"})):
            r = _post(who, f"/mails/{mail}/{action}", **data)
            assert r.status_code == 404, (mail, action)
    assert db.fetchone("SELECT COUNT(*) AS n FROM mail_snoozes")["n"] == 0
    assert db.fetchone("SELECT COUNT(*) AS n FROM drafts WHERE source = 'forward'")["n"] == 0
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (case["sales"],))["status"] \
        == "sent"
    assert "Sales wartet" not in _queue_rows(anna, "snoozed")
    root = client("root")
    assert _post(root, f"/mails/{case['sales']}/reopen", reason="admin").status_code == 303
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (case["sales"],))["status"] \
        == "manual"


def test_case_actions_need_the_form_token(client, db, case):
    anna = client("anna")
    r = anna.post(f"/mails/{case['closed']}/reopen", data={"reason": "x"},
                  follow_redirects=False)
    assert r.status_code == 403
    assert db.fetchone("SELECT status FROM emails WHERE id = %s", (case["closed"],))["status"] \
        == "rejected"
