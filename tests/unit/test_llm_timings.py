"""What an LLM answer says about the server's speed (email_rag/adapters/llm.py): the
status page's model figures are made of it (email_rag/ops/llm_status.py)."""

from __future__ import annotations


def test_an_answer_carries_the_servers_timings_and_build_and_ignores_malformed_ones():
    """llama.cpp's `timings` and `system_fingerprint` of a chat answer become the result's
    timings and runtime (what the llm_attempt event records); another endpoint sends none,
    and a malformed value is left out, never an error."""
    from email_rag.adapters.llm import LLMClient

    client = LLMClient("http://127.0.0.1:9/v1", "k", "m", 5)
    try:
        answer = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                  "model": "m", "system_fingerprint": "b11434-unknown",
                  "timings": {"prompt_n": 31, "prompt_ms": 1975.6, "predicted_n": 8,
                              "predicted_ms": 2732.5, "cache_n": 0, "predicted_per_second": 2.9,
                              "extra": "x"}}
        r = client._answer(answer, 4.7, 0.0)
        assert r.runtime == "b11434-unknown"
        assert r.timings == {"prompt_n": 31, "prompt_ms": 1975.6, "predicted_n": 8,
                             "predicted_ms": 2732.5, "cache_n": 0}
        odd = client._answer({**answer, "timings": {"prompt_n": "many", "predicted_ms": True,
                                                    "predicted_n": 3}}, 1.0, 0.0)
        assert odd.timings == {"predicted_n": 3}
        plain = client._answer({k: v for k, v in answer.items()
                                if k not in ("timings", "system_fingerprint")}, 1.0, 0.0)
        assert plain.timings == {} and plain.runtime == ""
    finally:
        client.close()
