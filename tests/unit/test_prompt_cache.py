"""Prompt-cache reuse: every call to llama.cpp's server asks ``cache_prompt`` and names the
slot its kind of call keeps (``id_slot``), and the classification prompt starts with a
long prefix that is byte-identical for every mail, the mail itself last (the server's
``timings.cache_n`` of each call, recorded in its ``llm_attempt`` audit event, measures
what was reused)."""

from __future__ import annotations

import json

from email_rag.adapters.llm import ChatRequest, LLMClient
from email_rag.classification import values as cl
from email_rag.classification.history_model import Shot
from email_rag.classification.task import classification_task

LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2}


class _Sent(LLMClient):
    """The client with the HTTP exchange replaced: keeps the bodies it would send."""

    def __init__(self, props: dict) -> None:
        super().__init__("http://127.0.0.1:9/v1", "k", "m", 1.0)
        self._props = props
        self.bodies: list[dict] = []

    def _post(self, path: str, body: dict, mode: str) -> dict:
        self.bodies.append(body)
        content = json.dumps({"category": "billing", "priority": "normal", "language": "en",
                              "summary": "s", "needs_reply": True}) if mode != "none" else "Hi"
        return {"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                "timings": {"prompt_n": 12, "cache_n": 900, "predicted_n": 30, "draft_n": 20,
                            "draft_n_accepted": 15}}


def test_a_request_body_carries_cache_prompt_and_the_slot_only_when_set():
    msgs = [{"role": "user", "content": "hi"}]
    assert "cache_prompt" not in ChatRequest("m", msgs, 0.0).body()
    body = ChatRequest("m", msgs, 0.0, 10, None, True, 1).body()
    assert body["cache_prompt"] is True and body["id_slot"] == 1


def test_llama_cpp_calls_ask_the_cache_and_keep_classification_and_drafts_in_their_slots():
    """GIVEN llama.cpp's server with two slots WHEN a classification and a draft are asked
    THEN both ask cache_prompt, the JSON call runs in slot 0 and the text call in slot 1, and
    the server's cached-token count comes back with the answer."""
    c = _Sent(LLAMA_PROPS)
    answer = c.chat_json([{"role": "user", "content": "x"}], cl.json_schema(), "c")
    c.chat_text([{"role": "user", "content": "y"}])
    assert [(b["cache_prompt"], b["id_slot"]) for b in c.bodies] == [(True, 0), (True, 1)]
    assert answer.timings["cache_n"] == 900 and answer.timings["draft_n_accepted"] == 15
    one = _Sent({**LLAMA_PROPS, "total_slots": 1})
    one.chat_text([{"role": "user", "content": "y"}])
    assert one.bodies[0]["id_slot"] == 0


def test_several_calls_at_once_leave_the_slot_to_the_server_and_other_endpoints_get_neither():
    class Limit:
        limit = 3

    c = _Sent(LLAMA_PROPS)
    c.slots = Limit()
    assert c.prompt_cache("json") == (True, None)
    openai_like = _Sent({})
    openai_like.chat_json([{"role": "user", "content": "x"}], cl.json_schema(), "c")
    assert "cache_prompt" not in openai_like.bodies[0] and "id_slot" not in openai_like.bodies[0]


def _prompt(subject: str, body: str, shots: list[Shot] | None = None) -> str:
    msgs = classification_task(subject, "a@example.com", body, shots=shots).messages(None)
    return "\n".join(m["content"] for m in msgs)


def test_the_classification_prompt_is_the_same_for_every_mail_up_to_the_mail():
    """GIVEN two different mails WHEN their classification prompts are built THEN they share
    a byte-identical prefix (the whole system message: rules, task, every allowed value) and
    differ only from the user message on, whose end is the mail block."""
    a = classification_task("Invoice twice", "a@example.com", "I was charged twice."
                            ).messages(None)
    b = classification_task("Login broken", "b@example.org", "Kann mich nicht anmelden."
                            ).messages(None)
    assert a[0] == b[0] and a[0]["role"] == "system" and len(a[0]["content"]) > 1500
    assert a[1]["content"].rstrip().endswith(">") and "</mail-" in a[1]["content"][-30:]
    assert "charged twice" not in a[0]["content"]


def test_the_team_examples_come_after_the_stable_prefix_and_before_the_mail():
    shot = Shot(subject="Old invoice", body="Charged twice last month", category="billing",
                priority="normal", needs_reply=True, similarity=0.9)
    text = _prompt("Invoice twice", "I was charged twice.", [shot])
    plain = _prompt("Invoice twice", "I was charged twice.")
    system = classification_task("x", "y", "z").messages(None)[0]["content"]
    assert text.startswith(system) and plain.startswith(system)
    assert len(system) < text.index("Old invoice") < text.rindex("\n<mail-")


def test_a_classification_the_history_leaves_open_is_one_short_grammar_constrained_call():
    """GIVEN llama.cpp's server WHEN a mail is classified by the LLM THEN exactly one call is
    made, with a JSON schema (the server's grammar) whose category, priority and language are
    enums and whose only free text, the summary, is bounded, and a small max_tokens. (No call
    at all where the history decides: tests/integration/test_classify_history.py.)"""
    from email_rag.db.audit import AuditEvent
    from email_rag.llm.policy import PolicyLimits, run_task

    c = _Sent(LLAMA_PROPS)
    task = classification_task("Invoice twice", "a@example.com", "I was charged twice.")
    result = run_task(c, task, PolicyLimits(),
                      event=lambda name, detail: AuditEvent("test", "email", "1", name,
                                                             detail=detail))
    assert result.value is not None and result.attempts == 1 and len(c.bodies) == 1
    body = c.bodies[0]
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema" and body["max_tokens"] <= 300
    props = schema["properties"]
    assert all("enum" in props[f] for f in ("category", "priority", "language"))
    assert props["summary"]["maxLength"] == cl.SUMMARY_MAX
    attempt = next(e for e in result.events if e.event == "llm_attempt")
    assert attempt.detail["timings"]["cache_n"] == 900  # cached prompt tokens, recorded
