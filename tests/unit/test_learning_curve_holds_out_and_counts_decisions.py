"""``bench quality``'s learning curve (harness/email_rag_harness/bench/quality_curve.py): the
held-out split is never learned from, and the curve counts what the history decides and
what it leaves to the LLM (hashing embedder and the scripted double: figures that mean
nothing, the counting is what is proven)."""

from __future__ import annotations

from collections import Counter

import pytest
from email_rag_harness.bench import quality_curve
from email_rag_harness.bench.quality_corpus_extra import HELD_OUT
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from email_rag.adapters.embeddings import HashingEmbedder
from email_rag.adapters.llm import LLMClient
from email_rag.core.settings import Settings


def test_the_held_out_mails_are_never_in_the_training_part():
    train, held = quality_curve.split()
    assert len(held) == len(set(HELD_OUT)) == 120 and len(train) == 212
    assert not {m[0] for m in train} & {m[0] for m in held}
    assert Counter(m[1] for m in held[:8]) == {"en": 2, "de": 2, "fr": 2, "es": 2}
    assert quality_curve.split()[0] == train  # the same order on every run (seeded)


@pytest.fixture
def llm():
    with ScriptedLLMServer() as srv:
        client = LLMClient(srv.url, "", "scripted", timeout=10)
        yield client
        client.close()


@pytest.mark.slow  # the language identifier's models load (~30 s on 2 shared cores)
def test_the_curve_counts_history_decisions_and_leaves_the_rest_to_the_llm(llm):
    settings = Settings(history_min_examples=10)
    curve = quality_curve.measure(settings, HashingEmbedder(), llm, 8192, points=(0, 50),
                                  mails=12, llm_scored=False)
    cold, taught = curve["points"]
    assert (cold["examples"], cold["mails"], cold["llm_calls"]) == (0, 12, 12)
    assert cold["all_by_history"] == 0 and cold["history_share"]["category"] == 0
    assert cold["accuracy"]["category"] is None  # the double's answers are not scored
    assert cold["lower_bound"]["category"] == 0  # nothing decided without the LLM
    assert taught["examples"] == 50
    assert taught["llm_calls"] == round(12 * taught["needs_llm"])
    decided = round(12 * taught["history_share"]["category"])
    assert taught["lower_bound"]["category"] * 12 == pytest.approx(
        decided * (taught["history_accuracy"]["category"] or 0), abs=0.01)
    assert 0 <= taught["lower_bound"]["language"] <= 1
