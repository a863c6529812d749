"""The draft page over HTTP (issue 18): two agents on one draft (optimistic concurrency,
the other agent's action named, this agent's text kept), edits saved as the agent types
and "being edited by X", the whole thread with our sent replies, the sender's earlier
mails, sources as cards, classification corrected (audited, feeding Regenerate), and
"Re:" once."""

from __future__ import annotations

import html as htmllib
import json
import re

from email_rag.llm.adapt import adapt_task
from tests.factories import make_draft, make_email, make_job, make_mailbox

PEOPLE = {"anna": "staff", "bob": "staff"}


def seen_of(page: str) -> str:
    return re.search(r'name="seen" value="([^"]+)"', page).group(1)


def text(page: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", page))


def test_second_agent_gets_a_conflict_naming_the_first_and_keeps_her_text(client, db):
    """GIVEN anna and bob both open a draft WHEN bob approves and then anna approves her own
    edit THEN nothing of anna's is sent (one send attempt, bob's text), anna is told bob
    approved it, and her text is still on the page."""
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    anna, bob = client("anna"), client("bob")
    anna_seen = seen_of(anna.get(f"/drafts/{draft}").text)
    bob_seen = seen_of(bob.get(f"/drafts/{draft}").text)
    r = bob.post(f"/drafts/{draft}/approve", data={"csrf_token": bob.csrf, "seen": bob_seen,
                                                   "body": "Text von Bob"})
    assert r.status_code == 200
    r = anna.post(f"/drafts/{draft}/approve", data={"csrf_token": anna.csrf, "seen": anna_seen,
                                                    "body": "Annas sorgfaeltiger Text"},
                  follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/drafts/{draft}"
    page = text(anna.get(r.headers["location"]).text)
    assert "bob approved it" in page and "Nothing was changed by you" in page
    assert "Your text (not sent)" in page and "Annas sorgfaeltiger Text" in page
    row = db.fetchone("SELECT approved_by, body_final FROM drafts WHERE id = %s", (draft,))
    assert row == {"approved_by": "user:bob", "body_final": "Text von Bob"}
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1


def test_a_repeated_approve_tells_the_agent_her_own_reply_went_out_once(client, db):
    """GIVEN anna approved a draft WHEN her approve is submitted again from the same page
    (a second click, a resubmitted form) THEN she is told she approved it herself and that
    there is one send attempt, never "nothing of yours was sent"; still one attempt."""
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    anna = client("anna")
    seen = seen_of(anna.get(f"/drafts/{draft}").text)
    form = {"csrf_token": anna.csrf, "seen": seen, "body": "Annas Antwort"}
    anna.post(f"/drafts/{draft}/approve", data=form)
    r = anna.post(f"/drafts/{draft}/approve", data=form, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/drafts/{draft}"
    page = text(anna.get(r.headers["location"]).text)
    assert "nothing of yours was sent" not in page and "Nothing was changed by you" not in page
    assert "You approved" in page and "one send attempt" in page, page[:2000]
    assert db.fetchone("SELECT COUNT(*) AS n FROM send_attempts")["n"] == 1


def test_reject_after_another_agents_approval_is_a_conflict(client, db):
    draft = make_draft(db, make_email(db, make_mailbox(db)))
    anna, bob = client("anna"), client("bob")
    anna_seen = seen_of(anna.get(f"/drafts/{draft}").text)
    bob.post(f"/drafts/{draft}/approve", data={"csrf_token": bob.csrf,
                                               "seen": seen_of(bob.get(f"/drafts/{draft}").text),
                                               "body": "ok"})
    r = anna.post(f"/drafts/{draft}/reject", data={"csrf_token": anna.csrf, "seen": anna_seen,
                                                   "reason": "spam"})
    assert "bob approved it" in text(r.text)
    assert db.fetchone("SELECT status FROM drafts WHERE id = %s", (draft,))["status"] == "approved"


def test_edits_are_saved_restored_and_shown_as_being_edited(client, db):
    """GIVEN anna types (autosave) WHEN she reloads THEN her text is back; bob's page says
    anna is editing it; her autosave learns when bob acted."""
    draft = make_draft(db, make_email(db, make_mailbox(db)), body="Original")
    anna, bob = client("anna"), client("bob")
    r = anna.post(f"/drafts/{draft}/autosave", data={"csrf_token": anna.csrf,
                                                    "body": "Hallo Frau Muster,\r\nneu"})
    assert r.json() == {"saved": True, "editing": [], "changed": None}
    page = anna.get(f"/drafts/{draft}").text
    assert "Hallo Frau Muster,\nneu</textarea>" in page and "is restored" in page
    assert "Being edited by <b>anna</b>" in bob.get(f"/drafts/{draft}").text
    bob.post(f"/drafts/{draft}/autosave", data={"csrf_token": bob.csrf, "body": "Bob"})
    bob.post(f"/drafts/{draft}/reject", data={"csrf_token": bob.csrf, "reason": "doppelt"})
    answer = anna.post(f"/drafts/{draft}/autosave", data={"csrf_token": anna.csrf,
                                                         "body": "noch mehr"}).json()
    assert answer["changed"].startswith("bob rejected it")
    assert anna.post(f"/drafts/{draft}/autosave", data={"body": "x"}).status_code == 403


def test_an_autosave_longer_than_the_limit_says_not_saved_and_keeps_the_last_text(client, db):
    """GIVEN anna's saved text WHEN her editor sends 100,001 characters THEN the answer says
    not saved (and why), her last saved text stays as it was (nothing cut), and a text of
    exactly 100,000 characters is saved whole."""
    draft = make_draft(db, make_email(db, make_mailbox(db)), body="Original")
    anna = client("anna")
    anna.post(f"/drafts/{draft}/autosave", data={"csrf_token": anna.csrf, "body": "Erst"})
    answer = anna.post(f"/drafts/{draft}/autosave", data={"csrf_token": anna.csrf,
                                                         "body": "x" * 100_001}).json()
    assert answer["saved"] is False and "100,000" in answer["error"], answer
    stored = db.fetchall("SELECT body FROM draft_edits WHERE draft_id = %s", (draft,))
    assert [r["body"] for r in stored] == ["Erst"]
    answer = anna.post(f"/drafts/{draft}/autosave", data={"csrf_token": anna.csrf,
                                                         "body": "y" * 100_000}).json()
    assert answer["saved"] is True
    stored = db.fetchone("SELECT CHAR_LENGTH(body) AS n FROM draft_edits WHERE draft_id = %s",
                         (draft,))
    assert stored["n"] == 100_000


def test_whole_thread_with_our_replies_and_the_senders_history(client, db):
    """GIVEN a thread: the customer's first mail, our sent reply, her follow-up (pending),
    and an older mail of hers in another thread WHEN staff open the follow-up THEN the
    conversation lists first mail, our reply, this mail in order, and the other mail is
    under the sender's earlier mails with a link staff may open."""
    mb = make_mailbox(db)
    first = make_email(db, mb, subject="Lieferung fehlt", thread_key="t1",
                       body="Wo bleibt meine Lieferung?", received_at="2026-11-28 09:00:00")
    ours = make_draft(db, first, body="Ihre Lieferung kommt morgen.")
    db.execute("UPDATE drafts SET status = 'sent', body_final = body_draft, approved_by ="
               " 'user:bob', approved_at = '2026-11-28 10:00:00' WHERE id = %s", (ours,))
    db.execute("INSERT INTO send_attempts (draft_id, message_id, status, recipients, sent_at)"
               " VALUES (%s, '<x@y>', 'sent', 'alice@customer.example', '2026-11-28 10:00:05')",
               (ours,))
    follow = make_email(db, mb, subject="Re: Lieferung fehlt", thread_key="t1",
                        body="Immer noch nichts da.", received_at="2026-11-30 09:00:00")
    draft = make_draft(db, follow)
    old = make_email(db, mb, subject="Rechnung falsch", thread_key="t0",
                     received_at="2026-10-01 09:00:00")
    old_draft = make_draft(db, old)
    page = client().get(f"/drafts/{draft}").text
    conv = text(page[page.index('class="conversation"'):page.index("Earlier mails")])
    assert conv.index("Wo bleibt meine Lieferung") < conv.index("Ihre Lieferung kommt morgen") \
        < conv.index("this mail")
    assert "our reply" in conv and "bob" in conv
    hist = page[page.index("Earlier mails"):page.index("Sources the draft used")]
    assert "Rechnung falsch" in hist and f'href="/drafts/{old_draft}"' in hist
    assert "Re: Lieferung fehlt" in text(page) and "Re: Re:" not in text(page)


def test_sources_are_readable_cards(client, db):
    sources = {"sources": [{"email_id": 7, "subject": "Drucker leer", "score": 0.83,
                            "snippet": "Toner leer?", "reply": {"text": "Toner tauschen."},
                            "category": "technical", "internal": {"k": 1}}]}
    draft = make_draft(db, make_email(db, make_mailbox(db)), sources=json.dumps(sources))
    page = client().get(f"/drafts/{draft}").text
    cards = page[page.index('class="sources"'):]
    assert "Drucker leer" in cards and "similarity 0.83" in cards
    assert "Customer wrote" in cards and "Toner leer?" in cards
    assert "We answered" in cards and "Toner tauschen." in cards
    assert "{" not in text(cards.split("</ol>")[0])  # no dict dump


def test_a_passage_lifted_by_a_past_reply_says_so_and_links_that_mail(client, db):
    """The similarity shown for a passage the team's past reply vouched for is not the
    embedder's alone: the card says which mail's reply raised it, with a link; a forged
    origin gives no link."""
    sources = {"basis": "sources", "sources": [
        {"kind": "article", "title": "Geschenke", "score": 0.43, "ref": "S1",
         "text": "Verpackung 3,50 EUR.", "link": "/admin/knowledge/5#p1",
         "origin": "knowledge:5:1", "vouched_by": "mail:12"},
        {"kind": "article", "title": "Versand", "score": 0.41, "ref": "S2", "text": "2 Tage.",
         "link": "/admin/knowledge/6#p1", "origin": "knowledge:6:1",
         "vouched_by": "mail:12/../../admin"}]}
    draft = make_draft(db, make_email(db, make_mailbox(db)), sources=json.dumps(sources))
    cards = client().get(f"/drafts/{draft}").text
    cards = cards[cards.index('class="sources"'):]
    first, second = cards.split('id="source-S2"')
    assert 'href="/mails/12"' in first and "confirmed by a past reply" in first
    assert "confirmed by a past reply" not in second and "admin\"" not in second


def test_classification_correction_is_audited_and_feeds_regenerate(client, db):
    """GIVEN a German follow-up classified as Spanish WHEN staff correct it to German and
    regenerate with an instruction THEN the mail row and the audit log have the correction,
    the instruction is stored for the draft step, and the draft prompt carries both."""
    mail = make_email(db, make_mailbox(db), language="es", category="other", priority="low")
    draft = make_draft(db, mail)
    make_job(db, mail, state="done")
    c = client()
    r = c.post(f"/drafts/{draft}/classification", data={
        "csrf_token": c.csrf, "category_new": "order", "language_new": "de",
        "priority_new": "high"})
    assert "language es → de" in text(r.text)
    row = db.fetchone("SELECT category, language, priority FROM emails WHERE id = %s", (mail,))
    assert row == {"category": "order", "language": "de", "priority": "high"}
    event = db.fetchone("SELECT * FROM audit_log WHERE event = 'classification_corrected'")
    assert event["actor"] == "user:anna" and json.loads(event["detail"])["changes"]["language"] \
        == ["es", "de"]
    bad = c.post(f"/drafts/{draft}/classification", data={
        "csrf_token": c.csrf, "category_new": "order", "language_new": "xx",
        "priority_new": "high"})
    assert bad.status_code == 400
    c.post(f"/drafts/{draft}/regenerate", data={"csrf_token": c.csrf, "note": "förmlicher"})
    assert db.fetchone("SELECT draft_instruction FROM emails WHERE id = %s", (mail,)) == \
        {"draft_instruction": "förmlicher"}
    task = adapt_task(["Rücksendungen sind kostenlos."], "de", ("German", "German"), "formal",
                      instruction="förmlicher")
    system = task.messages(None)[0]["content"]
    assert "förmlicher" in system and "German" in system
