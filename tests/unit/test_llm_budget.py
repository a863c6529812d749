"""Token budget: prompts are trimmed to the context, in a fixed order, and the cut is recorded."""

from __future__ import annotations

from email_rag.classification.task import classification_task
from email_rag.llm.budget import Fitted, prompt_tokens


def build(refs: int, thread: int, body: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "TASK"},
            {"role": "user", "content": ("ref " * 300) * refs + ("thread " * 300) * thread
             + "b" * body}]


def test_a_prompt_that_fits_is_sent_whole():
    f = Fitted(build, 2, 1, 400, budget=8192)
    assert f.trimmed == {} and f.refs == 2


def test_a_small_context_drops_references_then_thread_then_cuts_the_body():
    """GIVEN five references, three thread parts and a long body WHEN the budget is small
    THEN references go first, then thread parts, then the body's end; the cut is recorded."""
    f = Fitted(build, 5, 3, 40000, budget=2048)
    assert prompt_tokens(f.messages()) <= 2048
    assert f.trimmed["references_dropped"] == 5 and f.trimmed["thread_dropped"] == 3
    assert 0 < f.trimmed["body_chars_kept"] < 40000


def test_shrink_drops_one_more_part_and_says_what():
    f = Fitted(build, 2, 0, 10, budget=8192)
    assert f.shrink() == "one reference case" and f.refs == 1
    assert f.shrink() == "one reference case"
    assert f.shrink() is None  # a short body: nothing left to drop


def test_classification_cuts_a_huge_mail_to_the_context():
    task = classification_task("Long", "a@b.c", "word " * 20000, context=2048)
    assert prompt_tokens(task.messages(None)) <= 2048 and task.trimmed["body_chars_kept"] > 0


def test_fitted_records_nothing_when_nothing_was_cut():
    f = Fitted(lambda r, t, b: [{"role": "user", "content": "x" * b}], 0, 0, 100, budget=1000)
    assert f.trimmed == {}
