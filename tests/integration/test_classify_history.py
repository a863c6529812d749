"""The team's history decides the classification (issue 27), through the real path:
APPEND to a private Dovecot user -> the real poller -> the job runner with the real
pipeline (scripted LLM over HTTP counting its calls, hashing embedder) -> staff actions
(desk correction, approval, no-reply confirmation) -> the next mail."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from email_rag_harness.testing.llm_rules import classify as scripted_answer

from email_rag.db import examples
from email_rag.review import desk, no_reply
from email_rag.sending import review
from tests.integration.realpath import RealPath, head, llm  # noqa: F401 (fixture)

BILLING = [("Rechnung 4711 doppelt abgebucht", "Guten Tag, die Rechnung 4711 wurde zweimal "
            "von meinem Konto abgebucht. Bitte erstatten Sie den doppelten Betrag."),
           ("Rechnung 5120 zweimal bezahlt", "Hallo, ich habe die Rechnung 5120 versehentlich "
            "zweimal bezahlt. Bitte erstatten Sie mir eine Zahlung."),
           ("Doppelte Abbuchung Rechnung 6001", "Guten Tag, für die Rechnung 6001 wurde der "
            "Betrag doppelt abgebucht. Bitte um Erstattung."),
           ("Rechnung 7002 falscher Betrag", "Hallo, auf der Rechnung 7002 ist der Betrag "
            "falsch, bitte korrigieren Sie die Rechnung und erstatten Sie die Differenz."),
           ("Erstattung Rechnung 8003", "Guten Tag, wann wird die Erstattung für die Rechnung "
            "8003 überwiesen? Der Betrag wurde doppelt abgebucht.")]
ORDER = [("Bestellung 1001 nicht angekommen", "Guten Tag, meine Bestellung 1001 ist nach zwei "
          "Wochen nicht angekommen. Wo ist das Paket?"),
         ("Paket zur Bestellung 1002 fehlt", "Hallo, das Paket zur Bestellung 1002 ist nicht "
          "angekommen, die Sendungsverfolgung zeigt nichts."),
         ("Lieferung Bestellung 1003", "Guten Tag, die Lieferung meiner Bestellung 1003 ist "
          "seit einer Woche überfällig. Wann kommt das Paket?"),
         ("Bestellung 1004 wo bleibt das Paket", "Hallo, wo bleibt das Paket meiner Bestellung "
          "1004? Es ist nicht angekommen."),
         ("Versand Bestellung 1005", "Guten Tag, wurde meine Bestellung 1005 schon versandt? "
          "Das Paket ist noch nicht angekommen.")]
NEWS = [("Newsletter Dezember", "Unser Newsletter im Dezember: neue Produkte und Angebote. "
         "Zum Abmelden klicken Sie auf abmelden."),
        ("Newsletter Januar", "Unser Newsletter im Januar: neue Produkte und Angebote. Zum "
         "Abmelden klicken Sie auf abmelden.")]
# Neither the scripted model nor the first examples call this "account"; the team does.
VOUCHER = ("Gutscheincode WINTER10 nicht abgezogen", "Hallo, ich habe beim Kauf den "
           "Gutscheincode WINTER10 eingegeben, aber der Rabatt wurde nicht abgezogen.")


def mail(n: str, subject: str, body: str) -> bytes:
    return head(n, subject=subject) + body.encode()


class Team(RealPath):
    def one(self, n: str, subject: str, body: str) -> dict:
        [row] = self.run(mail(n, subject, body))
        return row

    def draft_id(self, email_id: int) -> int:
        return self.drafts(email_id)[-1]["id"]

    def classify_calls(self) -> int:
        return len(self.llm_inputs("classify"))

    def seed(self) -> None:
        """Ten approved drafts (billing, order) and two confirmed newsletters: the
        team's first labelled examples, made by the staff actions that make them."""
        for i, (subject, body) in enumerate(BILLING + ORDER):
            row = self.one(f"seed{i}", subject, body)
            assert row["status"] == "draft_ready", row["status_reason"]
            review.approve(self.svc, self.draft_id(row["id"]), "anna")
        for i, (subject, body) in enumerate(NEWS):
            row = self.one(f"news{i}", subject, body)
            assert row["status"] == "no_reply_suggested", row["status_reason"]
            no_reply.decide(self.svc, row["id"], "anna", reply=False)


@pytest.fixture
def team(settings, mailbox, llm):  # noqa: F811 (fixture)
    t = Team(settings, mailbox, llm)
    yield t
    t.close()


def stored(db, email_id):
    return db.fetchone("SELECT * FROM labelled_examples WHERE email_id = ?", (email_id,))


def test_language_comes_from_the_identifier_not_the_llm(team):
    """GIVEN an Italian mail the (scripted) model labels in another language WHEN the
    worker classifies it THEN the stored language is Italian, from the identifier."""
    subject, body = ("Ordine 4411 non arrivato", "Buongiorno, il mio ordine 4411 non è ancora "
                     "arrivato dopo due settimane. Potete controllare dove si trova il pacco?")
    assert scripted_answer(subject, body)["language"] != "it"  # the model's answer differs
    row = team.one("it1", subject, body)
    sources = json.loads(row["classification_sources"])
    assert row["language"] == "it"
    assert sources["language"]["source"] == "identifier"
    assert sources["language"]["confidence"] >= 0.75
    assert sources["category"]["source"] == "llm"  # no examples yet: the model, as before


def test_staff_actions_store_labelled_examples_in_their_transaction(team):
    """GIVEN processed mails WHEN staff approve, correct and confirm no reply THEN each
    action leaves one labelled example with the mail's labels and its embedding."""
    row = team.one("a1", *BILLING[0])
    review.approve(team.svc, team.draft_id(row["id"]), "anna")
    ex = stored(team.db, row["id"])
    assert (ex["source"], ex["category"], ex["needs_reply"]) == ("approval", "billing", 1)
    assert ex["embedder"] == examples.vector_name(team.svc.embedder)
    assert len(ex["vector"]) == 4 * len(team.svc.embedder.embed(["x"])[0])

    voucher = team.one("v1", *VOUCHER)
    assert voucher["category"] == "other"
    desk.correct_classification(team.svc, team.draft_id(voucher["id"]), "anna", "billing",
                                voucher["language"], "normal")
    ex = stored(team.db, voucher["id"])
    assert (ex["source"], ex["category"]) == ("correction", "billing")

    news = team.one("n1", *NEWS[0])
    no_reply.decide(team.svc, news["id"], "anna", reply=False)
    ex = stored(team.db, news["id"])
    assert (ex["source"], ex["needs_reply"], ex["category"]) == ("no_reply", 0, "notification")


def test_staff_actions_embed_their_example_after_their_transaction_never_inside_it(
        team, monkeypatch):
    """GIVEN processed mails WHEN staff approve, correct a classification and confirm no
    reply THEN the embedder makes each action's example vector, and is never called while a
    transaction is open (the action's rows stay locked only for its writes)."""
    approved, corrected, news = (team.one("t1", *BILLING[0]), team.one("t2", *VOUCHER),
                                 team.one("t3", *NEWS[0]))
    db, working = team.svc.db, team.svc.embedder
    open_now: list[int] = []
    calls: list[bool] = []  # per embedder call: was a transaction open?
    real = db.transaction

    @contextmanager
    def watched():
        open_now.append(1)
        try:
            with real() as cur:
                yield cur
        finally:
            open_now.pop()

    class Watching:
        name = working.name

        def embed(self, texts):
            calls.append(bool(open_now))
            return working.embed(texts)

    monkeypatch.setattr(db, "transaction", watched)
    team.svc.__dict__["embedder"] = Watching()
    try:
        review.approve(team.svc, team.draft_id(approved["id"]), "anna")
        desk.correct_classification(team.svc, team.draft_id(corrected["id"]), "anna",
                                    "billing", corrected["language"], "normal")
        no_reply.decide(team.svc, news["id"], "anna", reply=False)
    finally:
        team.svc.__dict__["embedder"] = working
    assert calls == [False, False, False]
    for mail in (approved, corrected, news):
        assert stored(team.db, mail["id"])["embedder"] == examples.vector_name(working)


def test_an_embedder_failure_never_blocks_the_action_and_the_vector_comes_later(team):
    """GIVEN the embedder fails at the moment staff approve WHEN they approve THEN the
    approval and the example (without vector) are stored; the next classification embeds
    the example and uses it."""
    row = team.one("e1", *BILLING[1])

    class Broken:
        name = "broken"

        def embed(self, texts):
            raise OSError("embedding endpoint down")

    working = team.svc.embedder
    team.svc.__dict__["embedder"] = Broken()
    try:
        result = review.approve(team.svc, team.draft_id(row["id"]), "anna")
    finally:
        team.svc.__dict__["embedder"] = working
    assert result.action == "approved"
    ex = stored(team.db, row["id"])
    assert ex["source"] == "approval" and ex["vector"] is None and ex["embedder"] is None
    team.one("e2", *ORDER[0])  # the next mail's classification fills the gap
    ex = stored(team.db, row["id"])
    assert ex["embedder"] == examples.vector_name(working) and ex["vector"] is not None


def test_a_whole_text_vector_stored_before_is_replaced_by_the_sentence_mean(team):
    """GIVEN an example stored with a vector of the whole text under the embedder's bare name
    (as before 2026-12-04) WHEN the next mail is classified THEN the example is embedded
    again as the mean of its sentences, under the sentences name, and used."""
    row = team.one("w1", *BILLING[1])
    review.approve(team.svc, team.draft_id(row["id"]), "anna")
    embedder = team.svc.embedder
    whole = examples.pack(embedder.embed([examples.example_text(*BILLING[1])])[0])
    team.db.execute("UPDATE labelled_examples SET embedder = ?, vector = ? WHERE email_id = ?",
                    (embedder.name, whole, row["id"]))
    team.one("w2", *ORDER[0])
    ex = stored(team.db, row["id"])
    assert ex["embedder"] == examples.vector_name(embedder)
    assert bytes(ex["vector"]) == examples.mail_vectors(embedder, [BILLING[1]])[0] != whole


def test_a_staff_correction_changes_the_next_similar_mails_category(team):
    """GIVEN a team's examples and a kind of mail the model gets wrong WHEN staff correct
    one such mail on the draft page THEN the next similar mail gets the team's category,
    with no retraining command in between."""
    team.seed()
    before = team.one("v-before", VOUCHER[0], VOUCHER[1] + " Bitte prüfen.")
    assert before["category"] != "account"
    desk.correct_classification(team.svc, team.draft_id(before["id"]), "anna", "account",
                                before["language"], "normal")
    after = team.one("v-after", VOUCHER[0], VOUCHER[1] + " Bitte prüfen Sie das.")
    sources = json.loads(after["classification_sources"])
    assert after["category"] == "account", sources
    assert sources["category"]["source"] == "history"
    assert sources["category"]["examples"] == 13


def test_a_confident_history_decision_makes_no_llm_call(team):
    """GIVEN the team's examples WHEN a mail very like the approved billing mails comes in
    THEN the history decides all three fields: no classification call to the model, the
    audit says source=history with the probabilities, the draft page says so."""
    team.seed()
    calls = team.classify_calls()
    row = team.one("b-new", "Rechnung 9004 doppelt abgebucht", "Guten Tag, die Rechnung 9004 "
                   "wurde zweimal abgebucht. Bitte erstatten Sie den doppelten Betrag.")
    assert team.classify_calls() == calls  # not one classification call
    assert (row["category"], row["priority"], row["needs_reply"]) == ("billing", "normal", 1)
    assert row["classification_prompt_version"] == "history"
    sources = json.loads(row["classification_sources"])
    assert {sources[f]["source"] for f in ("category", "priority", "needs_reply")} == {"history"}
    assert sources["language"] == {"source": "identifier",
                                   "confidence": sources["language"]["confidence"]}
    skipped = [json.loads(r["detail"]) for r in team.db.fetchall(
        "SELECT detail FROM audit_log WHERE entity_id = ? AND event = 'llm_skipped'",
        (str(row["id"]),))]
    assert skipped and skipped[0]["source"] == "history"
    assert skipped[0]["history"]["category"]["probability"] >= \
        team.svc.settings.history_category_threshold
    assert row["status"] == "draft_ready"  # the draft step still ran
    line = examples.mail_labels(team.db, row["id"])
    from email_rag.classification.history_model import describe_sources

    text = describe_sources(line, line["classification_sources"])
    assert "category billing — from 12 team examples" in text


def test_an_undecided_mail_goes_to_the_llm_with_the_nearest_examples(team):
    """GIVEN the team's examples WHEN a mail unlike them comes in THEN the model is asked,
    with the most similar labelled examples in a delimited block of its prompt, and the
    fields the history did not decide are the model's."""
    team.seed()
    calls = team.classify_calls()
    row = team.one("odd", "Delete my profile", "Could you remove everything you store about "
                   "me and close my profile?")
    assert team.classify_calls() == calls + 1, (row["status"], row["classification_sources"])
    prompt = team.llm_inputs("classify")[-1]
    assert "<examples-" in prompt and "Labels staff confirmed: category=" in prompt
    assert prompt.index("<examples-") < prompt.index("<mail-")
    sources = json.loads(row["classification_sources"])
    assert "llm" in {sources[f]["source"] for f in ("category", "priority", "needs_reply")}


def test_the_examples_state_refused_by_the_server_leaves_the_llm_to_decide(team):
    """GIVEN the examples' table cannot be read (the server refuses the examples' state: here
    the table is gone) WHEN a mail's job runs THEN the examples' state read with the mail
    fails nothing: the classify step goes on without the team's history (the LLM decides)
    and the mail gets its draft."""
    team.db.execute("RENAME TABLE labelled_examples TO labelled_examples_away")
    try:
        row = team.one("gone1", *BILLING[0])
    finally:
        team.db.execute("RENAME TABLE labelled_examples_away TO labelled_examples")
    assert row["status"] == "draft_ready", row["status_reason"]
    assert team.classify_calls() == 1
