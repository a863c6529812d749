"""Token budget: prompts are trimmed to the context, in a fixed order, and the cut is recorded."""

from __future__ import annotations

from email_rag.classification.task import classification_task
from email_rag.llm.budget import Fitted, prompt_tokens
from email_rag.pipeline.draft import draft_request, draft_task

SOURCES = [{"subject": f"case {i}", "snippet": "x " * 500, "reply": "y " * 500, "score": 0.9}
           for i in range(5)]
THREAD = [{"subject": f"earlier {i}", "snippet": "z " * 500} for i in range(3)]


def test_a_draft_prompt_that_fits_is_sent_whole():
    task = draft_task("Hi", "a@b.c", "Where is my order?", "en", SOURCES[:1], [], context=8192)
    assert task.trimmed == {} and "case 0" in task.messages(None)[1]["content"]


def test_a_small_context_drops_references_then_thread_then_cuts_the_body():
    """GIVEN five reference cases, three thread mails and a long body WHEN the server has a
    2,048-token context THEN references go first, then thread mails, then the body's end, the
    system prompt stays whole, and what was cut is recorded."""
    body = "The parcel never came. " * 400
    task = draft_task("Parcel", "a@b.c", body, "en", SOURCES, THREAD, context=2048)
    sent = task.messages("an error")
    assert prompt_tokens(sent) <= 2048 - 900  # room for the longest answer (max_tokens_cap)
    assert "TASK: draft" in sent[0]["content"] and "UNTRUSTED" in sent[0]["content"]
    assert task.trimmed["references_dropped"] == 5 and task.trimmed["thread_dropped"] == 3
    assert 0 < task.trimmed["body_chars_kept"] < len(body)
    assert "[... cut:" in sent[1]["content"]


def test_shrink_drops_one_more_part_and_says_what():
    task = draft_task("Parcel", "a@b.c", "short", "en", SOURCES[:2], [], context=8192)
    assert task.shrink() == "one reference case" and task.trimmed["references_dropped"] == 1
    assert task.shrink() == "one reference case"
    assert task.shrink() is None  # a short body: nothing left to drop


def test_the_draft_request_says_which_references_the_prompt_kept():
    """GIVEN three references, the least similar last WHEN the prompt shrinks by one THEN
    the request's kept sources are the first two (what the draft stores as its sources)."""
    request = draft_request("Parcel", "a@b.c", "short", "en", SOURCES[:3], [], context=8192)
    assert request.kept_sources == SOURCES[:3]
    assert request.task.shrink() == "one reference case"
    assert request.kept_sources == SOURCES[:2] and request.fitted.refs == 2


def test_classification_cuts_a_huge_mail_to_the_context():
    task = classification_task("Long", "a@b.c", "word " * 20000, context=2048)
    assert prompt_tokens(task.messages(None)) <= 2048 and task.trimmed["body_chars_kept"] > 0


def test_fitted_records_nothing_when_nothing_was_cut():
    f = Fitted(lambda r, t, b: [{"role": "user", "content": "x" * b}], 0, 0, 100, budget=1000)
    assert f.trimmed == {}
