"""The real llama-server with the draft model, and the prompt cache across mails.

GIVEN the installed llama-server, model and draft model (scripts/local-llm/install.sh) WHEN
the server is started with the draft model THEN it loads both and answers, and its timings
show the draft's proposals and how many the main model accepted; WHEN two mails are
classified one after the other through the project's client THEN the second call reads the
shared prefix from the slot's cache (``timings.cache_n``).
"""

from __future__ import annotations

import json

import pytest

from email_rag.adapters.llm import LLMClient
from email_rag.classification.task import classification_task
from email_rag.llm.local_server import LocalLLMServer, LocalModel, cache_dir

pytestmark = [pytest.mark.slow, pytest.mark.real_model]


@pytest.fixture(scope="module")
def local() -> LocalModel:
    path = cache_dir() / "local-llm.json"
    local = LocalModel.installed(path)  # fails with the install command when it is missing
    if local.draft is None:
        pytest.skip(f"no draft model in {path} (an install before the draft model): run "
                    "bash scripts/local-llm/install.sh")
    assert json.loads(path.read_text()).get("draft_model_bytes")
    return local


def test_the_server_with_the_draft_model_answers_and_reports_the_acceptance(tmp_path, local):
    with LocalLLMServer(local, speculative=True, parallel=1, context=2048,
                        log=tmp_path / "server.log") as srv:
        assert "--spec-draft-model" in srv.command()
        reply = srv.chat({"model": srv.model_id, "temperature": 0, "max_tokens": 40,
                          "messages": [{"role": "user", "content":
                                        "Translate into German: Thank you for your message. "
                                        "We will refund the second payment."}]})
    text = reply["choices"][0]["message"]["content"]
    timings = reply["timings"]
    assert text.strip() and timings["predicted_n"] > 0
    assert timings["draft_n"] > 0 and 0 <= timings["draft_n_accepted"] <= timings["draft_n"]


def test_consecutive_classifications_read_the_shared_prefix_from_the_cache(tmp_path, local):
    with LocalLLMServer(local, speculative=False, parallel=2, context=8192,
                        log=tmp_path / "server.log") as srv:
        llm = LLMClient(srv.url, "not-needed", srv.model_id, 600)
        try:
            first, second = (llm.chat_json(classification_task(s, "a@example.com", b)
                                           .messages(None), {"type": "object"}, "c",
                                           max_tokens=8)
                             for s, b in (("Invoice twice", "I was charged twice in March."),
                                          ("Login", "Ich kann mich nicht mehr anmelden.")))
        finally:
            llm.close()
    # the system message (rules, task, every allowed value: ~2,900 characters) came from the
    # cache; only the user message was read
    assert second.timings["cache_n"] >= 300, second.timings
    assert second.timings["prompt_n"] < first.timings["prompt_n"]
