"""Every row of the LLM policy, through the real openai client over HTTP against
the scripted server (harness/email_rag_harness/testing/llm_server.py)."""

from __future__ import annotations

import time

import pytest
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from email_rag.classification.values import Category, default_classification
from email_rag.core.errors import (
    LLMError,
    LLMRateLimitedError,
    LLMRequestRejectedError,
    LLMTimeoutError,
)
from email_rag.core.retry import RetryPolicy
from email_rag.llm.policy import PolicyLimits, TaskOutcome
from tests.llm_support import BILLING, STALL, TIMEOUT, Recorder, attempts, classify, client


@pytest.fixture(scope="module")
def server():
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def llm(srv):
    c = client(srv.url)
    yield c
    c.close()


def test_valid_answer_first_time(srv, llm):
    """GIVEN a healthy endpoint WHEN a mail is classified THEN one attempt, outcome ok,
    audited with duration, prompt version and the model that answered."""
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK and r.value.category is Category.BILLING
    assert attempts(r) == [("ok", "none")]
    d = r.events[0].detail
    assert d["prompt_version"] == r.prompt_version and d["prompt"] == "classify"
    assert d["duration_ms"] > 0 and d["answered_by"] == "scripted-test-double"
    assert d["usage"]["input"] > 0
    assert srv.stats()["calls"] == {"classify": 1}


def test_timeout_then_success(srv, llm):
    srv.set_plan({"rules": [{"fault": "timeout_before", "kind": "classify", "calls": [1],
                             "delay": STALL}]})
    started = time.monotonic()
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK and r.attempts == 2
    assert attempts(r) == [("timeout", "retry"), ("ok", "none")]
    assert r.events[0].detail["duration_ms"] >= TIMEOUT * 1000 * 0.9
    assert time.monotonic() - started < STALL  # gave up at the timeout, not after the stall
    assert srv.stats()["produced"] == {"classify": 1}


def test_timeout_twice_goes_to_manual_not_raised(srv, llm):
    srv.set_plan({"rules": [{"fault": "timeout_before", "kind": "classify", "calls": [1, 2],
                             "delay": STALL}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.MANUAL and r.value is None and r.attempts == 2
    assert attempts(r) == [("timeout", "retry"), ("timeout", "manual")]
    assert [e.event for e in r.events][-1] == "llm_manual"
    assert "timed out 2 times" in r.reason
    assert srv.stats()["calls"] == {"classify": 2}  # no third call


def test_timeout_after_the_server_did_the_work(srv, llm):
    """GIVEN the endpoint produces the answer and then stalls WHEN classifying THEN the
    lost answer is simply produced again (an LLM call has no side effect for us)."""
    srv.set_plan({"rules": [{"fault": "timeout_after", "kind": "classify", "calls": [1],
                             "delay": STALL}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK and attempts(r) == [("timeout", "retry"), ("ok", "none")]
    stats = srv.stats()
    assert stats["produced"] == {"classify": 2} and stats["answered"] == {"classify": 1}
    assert stats["faults"] == {"timeout_after": 1}


def test_timeout_after_work_twice_is_manual_too(srv, llm):
    srv.set_plan({"rules": [{"fault": "timeout_after", "kind": "classify", "delay": STALL}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.MANUAL
    assert srv.stats()["produced"] == {"classify": 2} and srv.stats()["answered"] == {}


def _system_prompts(srv):
    return [next(m["content"] for m in req["body"]["messages"] if m["role"] == "system")
            for req in srv.requests if req["kind"] == "classify"]


def test_invalid_json_then_valid_with_the_adjusted_prompt(srv, llm):
    srv.set_plan({"rules": [{"fault": "invalid_json", "kind": "classify", "calls": [1]}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK and r.value.category is Category.BILLING
    assert attempts(r) == [("invalid_json", "retry_adjusted_prompt"), ("ok", "none")]
    assert [e.detail["prompt"] for e in r.events] == ["classify", "classify_retry"]
    first, second = _system_prompts(srv)
    assert "could not be used" not in first
    assert "could not be used" in second and "invalid JSON" in second  # names what was wrong


def test_invalid_json_twice_gives_defaults_flagged(srv, llm):
    srv.set_plan({"rules": [{"fault": "invalid_json", "kind": "classify"}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.DEFAULTED
    assert r.value == default_classification(*BILLING)
    assert attempts(r) == [("invalid_json", "retry_adjusted_prompt"),
                           ("invalid_json", "defaults")]
    assert r.events[-1].event == "llm_fallback_defaults"
    assert srv.stats()["calls"] == {"classify": 2}


def test_schema_violation_then_valid(srv, llm):
    srv.set_plan({"rules": [{"fault": "schema_violation", "kind": "classify", "calls": [1]}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK
    assert attempts(r) == [("schema_violation", "retry_adjusted_prompt"), ("ok", "none")]
    second = _system_prompts(srv)[1]
    assert "field 'category'" in second and "approved" in second
    assert "field 'status'" in second  # the extra field is named too


def test_schema_violation_twice_gives_defaults(srv, llm):
    srv.set_plan({"rules": [{"fault": "schema_violation", "kind": "classify"}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.DEFAULTED and r.value.needs_reply is True


def test_429_with_retry_after_is_waited_out_then_success(srv, llm):
    srv.set_plan({"rules": [{"fault": "http_429", "retry_after": 0.2, "calls": [1]}]})
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # really waits; records how long it was asked to
        waits.append(seconds)
        time.sleep(seconds)

    r = classify(llm, sleep=sleep)
    assert r.outcome is TaskOutcome.OK
    assert attempts(r) == [("rate_limited", "wait_retry_after"), ("ok", "none")]
    assert r.events[0].detail["retry_after"] == pytest.approx(0.2)
    assert waits == [pytest.approx(0.2)]  # exactly the Retry-After, not a default backoff
    log = srv.stats()["log"]
    gap = log[1]["at"] - log[0]["at"]  # measured by the server: request 1 to request 2
    assert gap >= 0.2, gap  # (no upper bound: a busy machine may add to any wait)


def test_429_with_retry_after_as_http_date(srv, llm):
    from email.utils import formatdate

    srv.set_plan({"rules": [{"fault": "http_429", "retry_after": formatdate(usegmt=True),
                             "calls": [1]}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK and r.events[0].detail["retry_after"] <= 1.0


def test_429_beyond_max_retry_after_goes_to_the_job_cycle_at_once(srv, llm):
    srv.set_plan({"rules": [{"fault": "http_429", "retry_after": 5}]})
    audit = Recorder()
    waits: list[float] = []
    with pytest.raises(LLMRateLimitedError) as ei:
        classify(llm, audit=audit, limits=PolicyLimits(max_retry_after=1.0), sleep=waits.append)
    assert waits == []  # did not sleep 5 s (nor any time) in-process
    assert ei.value.retry_after == 5
    assert attempts(audit.events) == [("rate_limited", "job_retry")]  # recorded before raising
    decision = RetryPolicy(delays=[0.01], max_attempts=3).decide(1, ei.value)
    assert decision.retry and decision.delay >= 5  # the job retry honours Retry-After


def test_429_too_many_times_raises_with_retry_after(srv, llm):
    srv.set_plan({"rules": [{"fault": "http_429", "retry_after": 0.05}]})
    audit = Recorder()
    with pytest.raises(LLMRateLimitedError) as ei:
        classify(llm, audit=audit, limits=PolicyLimits(rate_limit_retries=2))
    assert ei.value.retry_after == pytest.approx(0.05)
    assert attempts(audit.events) == [("rate_limited", "wait_retry_after")] * 2 + [
        ("rate_limited", "job_retry")]
    assert srv.stats()["calls"] == {"classify": 3}


def test_429_without_retry_after_waits_a_bounded_default(srv, llm):
    srv.set_plan({"rules": [{"fault": "http_429", "calls": [1]}]})
    waits = []
    r = classify(llm, sleep=waits.append)
    assert r.outcome is TaskOutcome.OK and waits == [1.0]


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_raises_llm_error_for_the_job_cycle(srv, llm, status):
    srv.set_plan({"rules": [{"fault": "status", "status": status}]})
    audit = Recorder()
    with pytest.raises(LLMError) as ei:
        classify(llm, audit=audit)
    assert type(ei.value) is LLMError and f"HTTP {status}" in str(ei.value)
    assert attempts(audit.events) == [("error", "job_retry")]
    assert srv.stats()["calls"] == {"classify": 1}  # not retried in-process
    assert RetryPolicy(delays=[30.0]).decide(1, ei.value).retry
    if status == 500:  # the llama-cpp-python hint for json_schema mode
        assert "EMAIL_RAG_LLM_RESPONSE_FORMAT=json_object" in str(ei.value)


def test_connection_drop_raises_llm_error(srv, llm):
    srv.set_plan({"rules": [{"fault": "drop"}]})
    with pytest.raises(LLMError) as ei:
        classify(llm, audit=Recorder())
    assert type(ei.value) is LLMError and "connection" in str(ei.value)


def test_malformed_body_raises_llm_error(srv, llm):
    """GIVEN a 200 whose body is not JSON (a proxy page) THEN a transient LLMError."""
    srv.set_plan({"rules": [{"fault": "malformed"}]})
    with pytest.raises(LLMError) as ei:
        classify(llm, audit=Recorder())
    assert type(ei.value) is LLMError and "not JSON" in str(ei.value)


def test_endpoint_down_raises_llm_error():
    down = ScriptedLLMServer()
    url = down.url
    down.stop()  # the port is closed now
    c = client(url)
    with pytest.raises(LLMError) as ei:
        classify(c, audit=Recorder())
    assert not isinstance(ei.value, LLMTimeoutError) and "cannot reach" in str(ei.value)
    c.close()


def test_401_wrong_key_is_permanent_and_says_so():
    with ScriptedLLMServer(api_key="right-key") as s:
        c = client(s.url, key="wrong-key")
        audit = Recorder()
        with pytest.raises(LLMRequestRejectedError) as ei:
            classify(c, audit=audit)
        c.close()
        assert s.stats()["calls"] == {"classify": 1}
    msg = str(ei.value)
    assert "HTTP 401" in msg and "EMAIL_RAG_LLM_API_KEY" in msg and "wrong-key" not in msg
    assert attempts(audit.events) == [("rejected", "permanent")]
    assert not RetryPolicy().decide(1, ei.value).retry


def test_404_unknown_model_is_permanent_and_names_the_model():
    with ScriptedLLMServer(models=("scripted",), strict_models=True) as s:
        c = client(s.url, model="gpt-nonexistent")
        with pytest.raises(LLMRequestRejectedError) as ei:
            classify(c, audit=Recorder())
        c.close()
    assert "HTTP 404" in str(ei.value) and "'gpt-nonexistent'" in str(ei.value)
    assert "EMAIL_RAG_LLM_MODEL" in str(ei.value)


@pytest.mark.parametrize("status, words", [(400, "response_format"), (403, "may not use"),
                                           (422, "could not process")])
def test_other_4xx_are_permanent(srv, llm, status, words):
    srv.set_plan({"rules": [{"fault": "status", "status": status}]})
    with pytest.raises(LLMRequestRejectedError) as ei:
        classify(llm, audit=Recorder())
    assert words in str(ei.value) and srv.stats()["calls"] == {"classify": 1}


def test_mixed_faults_each_handled_by_its_row(srv, llm):
    """timeout, then 429, then invalid JSON, then a valid answer: each fault uses its own
    allowance (the adjusted prompt stays in use after it was introduced)."""
    srv.set_plan({"rules": [
        {"fault": "timeout_before", "calls": [1], "delay": STALL},
        {"fault": "http_429", "retry_after": 0.05, "calls": [2]},
        {"fault": "invalid_json", "calls": [3]},
    ]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK
    assert attempts(r) == [("timeout", "retry"), ("rate_limited", "wait_retry_after"),
                           ("invalid_json", "retry_adjusted_prompt"), ("ok", "none")]


@pytest.mark.parametrize("mode", ["json_object", "none"])
def test_other_response_format_modes(srv, mode):
    """json_object sends the schema inside response_format (llama-cpp-python); 'none' sends
    no response_format and copes with a fenced answer."""
    c = client(srv.url, response_format=mode)
    r = classify(c)
    c.close()
    assert r.outcome is TaskOutcome.OK and r.value.category is Category.BILLING
    sent = srv.requests[-1]["body"].get("response_format")
    if mode == "json_object":
        assert sent["type"] == "json_object" and "category" in sent["schema"]["properties"]
    else:
        assert sent is None


def test_json_schema_mode_sends_the_strict_schema(srv, llm):
    classify(llm)
    sent = srv.requests[-1]["body"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["name"] == "email_classification"


# --- answers cut off at max_tokens, prompts larger than the context ---
def test_cut_off_json_is_retried_with_a_bigger_budget_then_valid(srv, llm):
    """GIVEN the first answer cut off (finish_reason length) WHEN classifying THEN the cut
    answer is not used: the retry asks for twice the max_tokens and its answer counts."""
    srv.set_plan({"rules": [{"fault": "length", "kind": "classify", "times": 1}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.OK and r.value.category is Category.BILLING
    assert attempts(r) == [("length", "retry_more_tokens"), ("ok", "none")]
    sent = [q["body"]["max_tokens"] for q in srv.requests if q["kind"] == "classify"]
    assert sent == [300, 600]


def test_cut_off_twice_gives_flagged_defaults_never_the_cut_answer(srv, llm):
    srv.set_plan({"rules": [{"fault": "length", "kind": "classify"}]})
    r = classify(llm)
    assert r.outcome is TaskOutcome.DEFAULTED and r.value.needs_reply is True
    assert [a[0] for a in attempts(r)] == ["length", "length"]


def test_context_overflow_is_not_reported_as_a_response_format_problem(srv, llm):
    """GIVEN a server answering 400 'exceeds the available context size' WHEN classifying
    THEN the policy retries once with less context, then the mail goes to manual with a
    reason about the context, not about response_format or the API key."""
    srv.set_plan({"rules": [{"fault": "context_overflow", "kind": "classify"}]})
    long_mail = (BILLING[0], BILLING[1] + " Noch mehr Text." * 600)
    r = classify(llm, long_mail)
    assert r.outcome is TaskOutcome.MANUAL
    assert attempts(r) == [("context_overflow", "retry_less_context"),
                           ("context_overflow", "manual")]
    assert "context" in r.reason and "response_format" not in r.reason
    first = next(e for e in r.events if e.event == "llm_attempt")
    assert "context" in first.detail["error"] and "response_format" not in first.detail["error"]


def test_context_overflow_once_then_the_shorter_prompt_is_answered(srv, llm):
    srv.set_plan({"rules": [{"fault": "context_overflow", "kind": "classify", "times": 1}]})
    long_mail = (BILLING[0], BILLING[1] + " Noch mehr Text." * 600)
    r = classify(llm, long_mail)
    assert r.outcome is TaskOutcome.OK
    sizes = [len(q["body"]["messages"][1]["content"]) for q in srv.requests
             if q["kind"] == "classify"]
    assert sizes[1] < sizes[0]  # the second prompt carried less of the mail
