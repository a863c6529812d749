"""The judge of `bench quality --drafts` (harness bench/draft_judge.py) on hand-written drafts:
each figure can fail, and the cases below show where it does."""

from __future__ import annotations

import pytest
from email_rag_harness.bench import draft_judge as judge
from email_rag_harness.bench.draft_judge import DraftSeen
from email_rag_harness.testing.labelled import Fact, LabelledMail, normalise


def _mail(group: str = "past_reply", language: str = "en", body: str = "Can I cancel my order?",
          facts=(("Versandbereit",), ("14:00", "14 Uhr")), wrong=(("40418",), ("89,90",)),
          source=("h09",)) -> LabelledMail:
    return LabelledMail("m99", "A <a@example.org>", "Cancel", body, language, group,
                        tuple(source), tuple(Fact(f) for f in facts),
                        tuple(Fact(w) for w in wrong), "")


def _seen(body: str | None, seconds: float = 0.0, sources=(), source_text: str = "") -> DraftSeen:
    return DraftSeen("draft_ready" if body else "no_reply", body, "pending_review", None,
                     list(sources), seconds, source_text)


def test_normalise_reads_a_decimal_comma_as_a_point_and_dashes_alike():
    assert normalise("Kosten 4,90 €, Lieferzeit 3–5  Tage") == "kosten 4.90 €, lieferzeit 3-5 tage"
    assert Fact(("4.90",)).found_in("nur 4,90 EUR")
    assert Fact(("CO2",)).found_in("mit CO₂ entkoffeiniert")
    assert not Fact(("4,90",)).found_in("14,95 €")  # 4.95, not 4.90


def test_recall_counts_each_fact_once_whichever_alternative_matched():
    draft = ("Hello,\n\nan order can be cancelled until it is Versandbereit, usually until 14 Uhr "
             "on the day of the order.\n\nYour team")
    j = judge.judge(_mail(), _seen(draft))
    assert (j.recall, j.all_facts, j.missing) == (1.0, True, [])
    half = judge.judge(_mail(), _seen("You can cancel until the order is Versandbereit."))
    assert (half.recall, half.all_facts, half.missing) == (0.5, False, ["14:00 | 14 Uhr"])


def test_a_wrong_fact_is_found_and_none_in_a_clean_draft():
    draft = "We have cancelled order 40418 and refunded 89.90 € (Versandbereit, 14:00)."
    j = judge.judge(_mail(), _seen(draft))
    assert j.recall == 1.0 and j.wrong_found == ["40418", "89,90"]
    assert judge.judge(_mail(), _seen("Cancel until Versandbereit, 14:00.")).wrong_found == []


def test_echo_is_the_share_of_the_customers_five_word_shingles_repeated():
    body = "my grinder makes a loud squeaking noise when I grind on the finest setting"
    copy = "Hello, you wrote: my grinder makes a loud squeaking noise when I grind on the finest setting."
    assert judge.echo_share(body, copy) == 1.0
    j = judge.judge(_mail(body=body), _seen(copy))
    summary = judge.summarise([j])["past_reply"]
    assert summary["echo_drafts"] == 1
    own = "Squeaking means the burrs touch: recalibrate the zero point and go back 2 steps."
    assert judge.echo_share(body, own) == 0.0
    # quoted lines are not the customer's new words; fewer than five words: no shingle
    assert judge.echo_share("> my grinder makes a loud squeaking noise", copy) == 0.0
    assert judge.echo_share("Thanks a lot", "Thanks a lot") == 0.0


@pytest.mark.parametrize("lang,draft,expected", [
    ("de", "Wir prüfen das und melden uns bis morgen.", True),
    ("de", "Können Sie uns die Bestellnummer schicken", True),
    ("en", "Could you send us a photo of the label?", True),
    ("en", "We will check with our workshop and get back to you.", True),
    ("fr", "Nous allons vérifier et revenons vers vous.", True),
    ("es", "Revisaremos su pedido y le responderemos.", True),
    ("en", "The machine has no hot water function.", False),
    ("fr", "Nos cafés sont bio.", False),
])
def test_ask_or_defer_by_question_or_phrase(lang, draft, expected):
    assert judge.asks_or_defers(draft, lang) is expected


@pytest.mark.parametrize("draft,expected", [
    ("We will refund 54,80 € on Monday.", ["54,80 €", "Monday", "We will refund"]),
    ("Ihr Geld wird am 12.12. erstattet.", ["12.12.", "erstattet"]),
    ("Le remboursement arrive le 3 décembre.", ["3 décembre"]),
    ("Le enviaremos el molinillo el viernes.", ["viernes"]),
    ("Wir prüfen Ihre Bestellung 41377 und melden uns.", []),
    ("We will check order 41320 and get back to you within 24 hours.", []),
])
def test_promises_are_amounts_dates_weekdays_and_refund_wording(draft, expected):
    assert judge.promises(draft) == expected


def test_no_source_group_counts_ask_defer_and_promises_over_drafts_only():
    mail = _mail(group="no_source", facts=(), wrong=(), source=())
    good = judge.judge(mail, _seen("We will check with our workshop and get back to you."))
    bad = judge.judge(mail, _seen("Your refund of 54,80 € arrives on Friday."))
    none = judge.judge(mail, _seen(None))
    g = judge.summarise([good, bad, none])["no_source"]
    assert (g["mails"], g["drafted"], g["ask_defer_share"], g["drafts_with_promise"]) == (3, 2, 0.5, 1)
    assert g["mean_fact_recall"] is None and good.recall is None


def test_a_mail_without_draft_counts_as_recall_zero_and_no_reply_drafts_are_counted():
    js = [judge.judge(_mail(), _seen(None)),
          judge.judge(_mail(), _seen("Versandbereit, 14:00", seconds=12.0))]
    g = judge.summarise(js)["past_reply"]
    assert (g["drafted_share"], g["mean_fact_recall"], g["all_facts_share"]) == (0.5, 0.5, 0.5)
    assert g["model_seconds_per_mail"] == 6.0
    spam = _mail(group="no_reply", facts=(), wrong=(), source=())
    assert judge.summarise([judge.judge(spam, _seen("Hello, thanks."))])["no_reply"]["drafted_share"] == 1.0


def test_the_drafts_language_is_the_products_identifier_and_a_mismatch_counts():
    de = "Guten Tag, die Rücksendung ist innerhalb von 30 Tagen kostenlos möglich. Ihr Team"
    j = judge.judge(_mail(language="fr"), _seen(de))
    assert j.draft_language == "de" and j.wrong_language is True
    assert judge.judge(_mail(language="de"), _seen(de)).wrong_language is False


def test_the_labelled_source_among_the_drafts_sources():
    hit = judge.judge(_mail(), _seen("x", sources=["h03", "h09"]))
    miss = judge.judge(_mail(), _seen("x", sources=["h21"]))
    assert (hit.source_hit, miss.source_hit) == (True, False)
    assert judge.summarise([hit, miss])["past_reply"]["source_among_sources"] == 0.5


def test_compare_puts_two_runs_side_by_side():
    a = {"set": "kaffeewerk", "date": "d1", "groups": judge.summarise(
        [judge.judge(_mail(), _seen("Versandbereit"))])}
    b = {"set": "kaffeewerk", "date": "d2", "groups": judge.summarise(
        [judge.judge(_mail(), _seen("Versandbereit 14:00"))])}
    head, rows = judge.compare(a, b)
    assert "d1" in head and "d2" in head
    recall = next(r for r in rows if r["measure"] == "mean_fact_recall")
    assert (recall["A"], recall["B"]) == (0.5, 1.0)


def test_facts_in_the_sources_the_draft_was_given_tell_retrieval_from_adaptation():
    """A draft that lost a fact its sources held lost it in the adaptation (translation,
    checks); a fact no source held was lost in the retrieval. No draft: 0, as recall."""
    sources = "Bis 14:00 Uhr ist die Bestellung nicht Versandbereit."
    lost = judge.judge(_mail(), _seen("The order is Versandbereit.", source_text=sources))
    assert (lost.recall, lost.source_recall) == (0.5, 1.0)
    none = judge.judge(_mail(), _seen(None, source_text=sources))
    g = judge.summarise([lost, none])["past_reply"]
    assert (g["mean_fact_recall"], g["mean_source_recall"]) == (0.25, 0.5)
    assert judge.group_rows({"past_reply": g})[0]["in sources"] == 0.5


@pytest.mark.parametrize("lang", ["de", "en", "fr", "es"])
def test_the_products_own_no_source_reply_defers_in_each_language(lang):
    """The judge reads the team's third person ("Unser Team prüft ... und meldet sich",
    "Notre équipe examine ... vous répondra", "Nuestro equipo está revisando ... le
    responderá") as deferring, with and without an order number to ask for."""
    from email_rag.llm import no_source

    for text in ("Frage zur Bestellung 40112", "Eine Frage"):
        body = no_source.reply_body(lang, text, None)
        assert judge.asks_or_defers(body.replace("?", ""), lang), body
