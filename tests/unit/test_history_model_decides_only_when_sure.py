"""The history model (email_rag/llm/examples.py): labelled examples decide a field only
when the model is sure; a new example counts at the next fit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from email_rag.classification.history_model import (
    HISTORY_WEIGHT,
    Anchor,
    Example,
    FieldVote,
    HistoryDecision,
    HistoryModel,
    Shot,
    Thresholds,
    anchor_texts,
    balanced_weights,
    describe_sources,
    nearest,
    shots_block,
    weights,
)

DIM = 32
RNG = np.random.default_rng(11)
CENTRES = {c: RNG.normal(size=DIM) for c in ("billing", "order", "technical")}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _near(category: str, spread: float = 0.2) -> np.ndarray:
    return _unit(CENTRES[category] + RNG.normal(scale=spread, size=DIM))


def _examples(n_per: int, start: int = 0) -> list[Example]:
    out = []
    for i, cat in enumerate(sorted(CENTRES) * n_per):
        out.append(Example(start + i, _near(cat), cat, "high" if cat == "technical" else "normal",
                           cat != "order", "correction"))
    return out


def test_too_few_examples_decide_nothing():
    model = HistoryModel(_examples(3))  # 9 < min_examples
    decision = model.decide(_near("billing"))
    assert not any(decision.decided(f) for f in ("category", "priority", "needs_reply"))
    assert decision.votes["category"].value is None


def test_clear_examples_decide_every_field_and_say_how_sure():
    model = HistoryModel(_examples(10))
    decision = model.decide(_near("technical"))
    assert decision.all_decided
    assert decision.votes["category"].value == "technical"
    assert decision.votes["priority"].value == "high"
    assert decision.votes["needs_reply"].value is True
    assert decision.votes["category"].probability >= Thresholds().category


def test_a_field_with_one_value_only_is_left_to_the_llm():
    examples = [Example(e.email_id, e.vector, e.category, "normal", e.needs_reply, e.source)
                for e in _examples(10)]
    decision = HistoryModel(examples).decide(_near("order"))
    assert not decision.decided("priority") and decision.decided("category")


def test_an_ambiguous_mail_is_not_decided():
    model = HistoryModel(_examples(10))
    between = _unit(sum(CENTRES.values()))
    assert not model.decide(between).decided("category")


def test_corrections_move_the_next_decision_without_a_training_command():
    """Staff relabel mails like one kind as 'account': the refit model follows."""
    examples = _examples(10)
    query = _near("billing", spread=0.05)
    assert HistoryModel(examples).decide(query).votes["category"].value == "billing"
    relabelled = [Example(100 + i, _near("billing", 0.1), "account", "normal", True, "correction")
                  for i in range(12)]
    after = HistoryModel(examples + relabelled, version=len(examples) + 12).decide(query)
    assert after.votes["category"].value == "account"


def test_nearest_gives_the_most_alike_first():
    examples = _examples(5)
    query = examples[4].vector
    found = nearest(query, examples, 3)
    assert found[0][0].email_id == examples[4].email_id and found[0][1] > 0.999
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert nearest(query, [], 3) == [] and nearest(query, examples, 0) == []


def _history(n: int, category: str, start: int = 500) -> list[Example]:
    """Solved cases of the imported history: only needs_reply known (our reply)."""
    return [Example(start + i, _near(category), None, None, True, "history") for i in range(n)]


def test_history_labels_alone_decide_nothing():
    model = HistoryModel(_history(300, "order"))
    decision = model.decide(_near("order"))
    assert not any(decision.decided(f) for f in ("category", "priority", "needs_reply"))
    assert decision.examples_known == 300


def test_many_history_labels_never_outweigh_fewer_staff_labels():
    """Staff said mails like 'order' need no reply (10 confirmations); 300 solved history
    cases of the same kind say a reply was sent. The staff label still wins: the history
    weighs at most a quarter of the confirmed labels together."""
    staff = _examples(10)  # needs_reply: False for 'order', True for the rest
    query = _near("order", spread=0.05)
    assert HistoryModel(staff).decide(query).votes["needs_reply"].value is False
    mixed = HistoryModel(staff + _history(300, "order")).decide(query)
    assert mixed.votes["needs_reply"].value is False
    assert mixed.votes["category"].value == "order"  # unknown categories are left out
    # without the cap, the same history labels at full weight would flip the decision
    as_staff = [Example(e.email_id, e.vector, "order", "normal", True, "correction")
                for e in _history(300, "order")]
    assert HistoryModel(staff + as_staff).decide(query).votes["needs_reply"].value is True


def test_weights_of_unconfirmed_labels():
    staff, hist = _examples(2), _history(60, "billing")  # 6 confirmed, 60 unconfirmed
    w = weights(staff + hist)
    assert w[:6] == [1.0] * 6 and set(w[6:]) == {HISTORY_WEIGHT * 0.1}  # 6 / 60
    assert abs(sum(w[6:]) - HISTORY_WEIGHT * sum(w[:6])) < 1e-9
    assert set(weights(_examples(10) + _history(4, "order"))[30:]) == {HISTORY_WEIGHT}
    assert weights(_history(3, "order")) == [0.0] * 3


def test_a_history_shot_says_which_labels_are_not_known():
    block = shots_block([Shot("Rechnung", "doppelt", None, None, True, 0.9, confirmed=False),
                         Shot("Passwort", "vergessen", "account", "low", True, 0.8)])
    assert "category=None" not in block
    assert "needs_reply=true (the team replied to it); category and priority not known" in block
    assert "Labels staff confirmed: category=account, priority=low" in block


def _skewed(seed: int, rare: int = 3, common: int = 40) -> tuple[list[Example], np.ndarray]:
    """Forty 'normal' examples of two kinds and three 'urgent' ones of a third kind (e.g. a
    service down), loosely alike; and a new mail of the urgent kind."""
    rng = np.random.default_rng(seed)
    centres = {c: rng.normal(size=DIM) for c in ("billing", "order", "technical")}

    def near(c: str) -> np.ndarray:
        return _unit(centres[c] + rng.normal(scale=0.8, size=DIM))

    out = [Example(i, near(("billing", "order")[i % 2]), ("billing", "order")[i % 2],
                   "normal", True, "correction") for i in range(common)]
    out += [Example(1000 + i, near("technical"), "technical", "urgent", True, "correction")
            for i in range(rare)]
    return out, near("technical")


def test_a_rare_value_the_examples_show_clearly_is_decided():
    """GIVEN forty 'normal' examples and three 'urgent' ones of one kind WHEN a mail of that
    kind comes in THEN the history decides 'urgent' (each value weighs as much as the
    others in total, so a rare label the team gave consistently is learnt)."""
    for seed in range(10):
        examples, mail = _skewed(seed)
        vote = HistoryModel(examples).decide(mail).votes["priority"]
        assert (vote.value, vote.decided) == ("urgent", True), (seed, vote)


def test_balanced_weights_give_every_value_the_same_total():
    w = balanced_weights(["normal"] * 6 + ["urgent"] * 2, [1.0] * 8)
    assert abs(sum(w[:6]) - sum(w[6:])) < 1e-9 and abs(sum(w) - 8) < 1e-9
    # an unconfirmed example keeps its lower weight within its value
    w = balanced_weights([True, True, False], [1.0, 0.25, 1.0])
    assert w[1] == w[0] * 0.25 and abs(w[0] + w[1] - w[2]) < 1e-9


def test_a_rule_decides_a_field_and_says_so():
    """GIVEN the history is sure of category and priority only WHEN a rule (the loop guard)
    says the mail takes no reply THEN every field is decided, needs_reply by the rule."""
    decision = HistoryModel(_examples(10)).decide(_near("order"))
    unsure = HistoryDecision({**decision.votes,
                              "needs_reply": FieldVote(True, 0.55, False)},
                             decision.examples_known)
    assert not unsure.all_decided
    ruled = unsure.ruled("needs_reply", False)
    assert ruled.all_decided and ruled.votes["needs_reply"] == FieldVote(False, 1.0, True,
                                                                         "rules")
    assert ruled.votes["category"] == decision.votes["category"]
    assert decision.votes["category"].source == "history"


def test_the_anchors_are_the_phrases_of_the_meanings_the_llm_is_given():
    texts = anchor_texts()
    billing = [(t, w) for f, v, t, w in texts if (f, v) == ("category", "billing")]
    assert ("refunds", 1 / len(billing)) in billing and "invoices" in dict(billing)
    assert abs(sum(w for _, w in billing) - 1) < 1e-9  # a value's phrases weigh one example
    assert not [t for f, v, t, _ in texts if v == "other"]  # "none of the above" is no meaning
    assert {f for f, *_ in texts} == {"category", "priority"}


def _anchor(value: str, vector: np.ndarray) -> Anchor:
    return Anchor("category", value, vector, 1.0)


def test_an_anchor_decides_a_mail_the_examples_leave_open():
    """GIVEN examples of three categories and a mail amid them WHEN the meaning of 'billing'
    (an anchor) lies where the mail is THEN the history decides billing; without the anchor
    it does not."""
    examples = _examples(10)
    between = _unit(sum(CENTRES.values()))
    assert not HistoryModel(examples).decide(between).decided("category")
    anchored = HistoryModel(examples, anchors=[_anchor("billing", between)])
    vote = anchored.decide(between).votes["category"]
    assert (vote.value, vote.decided) == ("billing", True)


def test_anchors_alone_decide_nothing_and_never_bring_a_value_no_example_shows():
    """An anchor is no example: it counts for no minimum, and a value staff never gave (spam
    here) is not learnt from its meaning alone."""
    spam = _unit(RNG.normal(size=DIM))
    few = HistoryModel(_examples(3), anchors=[_anchor("billing", _near("billing"))] * 20)
    assert not few.decide(_near("billing")).decided("category")
    model = HistoryModel(_examples(10), anchors=[_anchor("spam", spam)] * 5)
    assert model.decide(spam).votes["category"].value != "spam"
    assert model.examples_known == 30


def _mixed_billing() -> list[Example]:
    """Ten examples per category; billing's priorities mixed, technical's all high, order's
    all without reply (``_examples``)."""
    return [replace(e, priority="low") if e.category == "billing" and e.email_id % 2 else e
            for e in _examples(10)]


def test_a_decided_category_decides_what_all_its_examples_agree_on():
    """GIVEN the priority and needs_reply models are unsure (thresholds out of reach) WHEN the
    history decides the category THEN a field on which all the team's examples of that
    category agree follows it, as sure as the category and saying so; a field they differ
    on stays with the LLM."""
    model = HistoryModel(_mixed_billing(), Thresholds(priority=0.999, needs_reply=0.999))
    tech = model.decide(_near("technical"))
    sure = tech.votes["category"].probability
    assert tech.decided("category")
    assert tech.votes["priority"] == FieldVote("high", sure, True, "history", "category")
    assert tech.votes["needs_reply"] == FieldVote(True, sure, True, "history", "category")
    bill = model.decide(_near("billing"))
    assert not bill.decided("priority") and bill.votes["needs_reply"].decided


def test_a_category_needs_three_agreeing_examples_and_a_decided_category():
    few = [e for e in _mixed_billing() if e.category != "technical" or e.email_id < 6]  # 2
    model = HistoryModel(few, Thresholds(priority=0.999, needs_reply=0.999))
    tech = model.decide(_near("technical"))
    assert tech.decided("category") and not tech.decided("priority")
    unsure = HistoryModel(_mixed_billing(), Thresholds(category=0.999, priority=0.999,
                                                       needs_reply=0.999))
    assert not unsure.decide(_near("technical")).decided("priority")


def test_the_source_line_says_a_field_followed_the_category():
    line = describe_sources({"category": "technical", "priority": "high"}, {
        "category": {"source": "history", "confidence": 0.9, "examples": 30},
        "priority": {"source": "history", "confidence": 0.9, "examples": 30,
                     "via": "category"}})
    assert line == ("category technical — from 30 team examples, 90 % sure · priority high — "
                    "as all team examples of its category, 90 % sure")


def test_the_stored_source_and_the_audit_say_the_field_followed_the_category():
    from email_rag.classification.history import TeamView

    model = HistoryModel(_mixed_billing(), Thresholds(priority=0.999, needs_reply=0.999))
    view = TeamView(model.decide(_near("technical")), [], 0.9)
    assert view.source("priority")["via"] == "category"
    assert "via" not in view.source("category")
    assert view.summary()["priority"]["via"] == "category"
