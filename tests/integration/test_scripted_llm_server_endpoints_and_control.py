"""The scripted OpenAI-compatible server over HTTP: endpoints, control API, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from email_rag_harness.testing.llm_server import MODEL_LABEL, ScriptedLLMServer

from email_rag.core.errors import LLMError
from email_rag.llm.prompts import mail_block
from tests.helpers import ROOT
from tests.llm_support import client


@pytest.fixture
def srv():
    with ScriptedLLMServer(models=("scripted", "other")) as s:
        yield s


def _http(url, data=None, method=None):
    req = urllib.request.Request(url, data=json.dumps(data).encode() if data is not None
                                 else None, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.status, dict(resp.headers), json.loads(resp.read())


def _root(srv):
    return srv.url.removesuffix("/v1")


def test_models_lists_the_configured_ids_and_labels_itself(srv):
    c = client(srv.url)
    assert c.list_models() == ["scripted", "other"]
    c.close()
    status, headers, body = _http(srv.url + "/models")
    assert "scripted test double" in headers["X-Scripted-LLM"]
    assert body["data"][0]["owned_by"] == MODEL_LABEL


def test_draft_requests_get_a_reply_in_the_mails_language(srv):
    c = client(srv.url)
    messages = [{"role": "system", "content": "TASK: draft a reply"},
                {"role": "user", "content": mail_block(
                    "Lieferung 4711 fehlt", "k@example.com",
                    "Hallo, meine Bestellung ist noch nicht da. Bitte helfen Sie mir.")}]
    r = c.chat_text(messages)
    c.close()
    assert r.text.startswith("Guten Tag") and "Lieferung 4711 fehlt" in r.text
    assert r.model == MODEL_LABEL and r.finish_reason == "stop" and r.duration > 0
    assert srv.stats()["calls"] == {"draft": 1}


def test_max_tokens_cuts_the_answer_like_a_real_model(srv):
    c = client(srv.url)
    r = c.chat_text([{"role": "user", "content": "Hello, please answer."}], max_tokens=5)
    c.close()
    assert r.finish_reason == "length" and len(r.text) <= 20


def test_embeddings_deterministic_of_the_requested_dimension(srv):
    c = client(srv.url)
    a = c.embed(["Rechnung doppelt", "Paket fehlt"], model="m", dimensions=16)
    b = c.embed(["Rechnung doppelt"], model="m", dimensions=16)
    c.close()
    assert len(a) == 2 and len(a[0]) == 16 and a[0] == b[0] and a[0] != a[1]
    # base64 encoding, as some clients ask for it
    _, _, body = _http(srv.url + "/embeddings", {"model": "m", "input": "x",
                                                 "encoding_format": "base64"})
    assert isinstance(body["data"][0]["embedding"], str)
    assert srv.stats()["calls"]["embed"] == 3


def test_embed_faults_apply_to_embeddings(srv):
    srv.set_plan({"rules": [{"fault": "http_503", "kind": "embed", "calls": [1]}]})
    c = client(srv.url)
    with pytest.raises(LLMError):
        c.embed(["x"], dimensions=8)
    assert len(c.embed(["x"], dimensions=8)[0]) == 8
    c.close()


def test_control_api_sets_plans_counts_and_resets(srv):
    root = _root(srv)
    status, _, body = _http(root + "/_control/plan", {"rules": [
        {"fault": "http_500", "kind": "classify", "times": 1}]})
    assert (status, body) == (200, {"ok": True, "rules": 1})
    with pytest.raises(urllib.error.HTTPError) as ei:
        _http(root + "/_control/plan", {"rules": [{"fault": "meteor"}]})
    assert ei.value.code == 400
    c = client(srv.url)
    msgs = [{"role": "system", "content": "TASK: classify"}, {"role": "user", "content": "hi"}]
    with pytest.raises(LLMError):
        c.chat_json(msgs, {"type": "object"}, "x")
    c.chat_json(msgs, {"type": "object"}, "x")
    c.close()
    _, _, stats = _http(root + "/_control/stats")
    assert stats["calls"] == {"classify": 2} and stats["answered"] == {"classify": 1}
    assert stats["faults"] == {"status": 1} and stats["faults_by_kind"]["classify"]["status"] == 1
    assert stats["rules"] == [{"index": 0, "seen": 2, "fired": 1}]
    assert [e["fault"] for e in stats["log"]] == ["status", None]
    _, _, reqs = _http(root + "/_control/requests")
    assert reqs[0]["body"]["messages"][1]["content"] == "hi"
    _http(root + "/_control/reset", {})
    assert _http(root + "/_control/stats")[2]["calls"] == {}


def test_latency_and_slow_fault(srv):
    srv.set_plan({"latency_ms": 150, "rules": [{"fault": "slow", "delay": 0.1, "calls": [2]}]})
    c = client(srv.url, timeout=2)
    durations = [c.chat_text([{"role": "user", "content": "x"}]).duration for _ in range(2)]
    c.close()
    assert 0.15 <= durations[0] < 0.6 and 0.25 <= durations[1] < 0.8


def test_stop_ends_stalled_handlers_quickly():
    s = ScriptedLLMServer(plan={"rules": [{"fault": "timeout_before", "delay": 60}]}).start()
    c = client(s.url, timeout=0.2)
    with pytest.raises(LLMError):
        c.chat_text([{"role": "user", "content": "x"}])
    c.close()
    started = time.monotonic()
    s.stop()
    assert time.monotonic() - started < 2


def test_runs_as_a_process_and_prints_its_url_first(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"rules": [{"fault": "invalid_json", "kind": "classify",
                                           "calls": [1]}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "email_rag_harness.testing.llm_server", "--host", "127.0.0.1",
         "--port", "0", "--plan", str(plan), "--latency-ms", "1"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        first = json.loads(proc.stdout.readline())
        assert first["scripted"] is True and first["url"].endswith(f":{first['port']}/v1")
        c = client(first["url"], timeout=5)
        msgs = [{"role": "system", "content": "TASK: classify"},
                {"role": "user", "content": "invoice"}]
        assert c.chat_json(msgs, {"type": "object"}, "x").text.startswith('{"category": ')
        c.close()
        _, _, stats = _http(first["url"].removesuffix("/v1") + "/_control/stats")
        assert stats["faults"] == {"invalid_json": 1}
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_a_held_call_stays_in_flight_until_released(srv):
    """GIVEN hold_next("draft") (the chaos fault kill_llm_call uses it: an instant scripted
    model left it nothing in flight to kill - 26 of its runs in a 20-seed run were skipped)
    WHEN a draft call comes in THEN it is listed in flight and unanswered until release(); an
    embedding call meanwhile is not held; after release the held call is answered."""
    import threading

    other = srv.hold_next("classify", seconds=20)  # an overlapping fault's hold
    srv.hold_next("draft", seconds=20)
    srv.release(other)  # releasing it leaves the draft hold in force
    answered: list[str] = []

    def call() -> None:
        c = client(srv.url)
        answered.append(c.chat_text([{"role": "system", "content": "TASK: draft a reply"},
                                     {"role": "user", "content": "Hallo"}]).text)
        c.close()

    th = threading.Thread(target=call)
    th.start()
    deadline = time.monotonic() + 10
    while not srv.inflight() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [c["kind"] for c in srv.inflight()] == ["draft"]
    status, _, body = _http(srv.url + "/embeddings", {"model": "scripted", "input": ["x"]})
    assert status == 200 and not answered  # other calls are served; the held one waits
    srv.release()
    th.join(10)
    assert answered and answered[0]
    assert srv.inflight() == []


def test_a_prefill_goes_only_to_an_endpoint_that_continues_answers(srv):
    """GIVEN the scripted endpoint, which has no llama.cpp /props WHEN a draft is asked with
    the answer's first words THEN 'auto' does not send them (an OpenAI-style endpoint would
    start a new answer after them); with EMAIL_RAG_LLM_PREFILL=on they go as a trailing
    assistant message and the text returned starts with them once."""
    from email_rag.adapters.llm import LLMClient

    messages = [{"role": "system", "content": "TASK: draft a reply"},
                {"role": "user", "content": mail_block("Rechnung", "kunde@example.com",
                                                       "Guten Tag, bitte prüfen.")}]
    opening = "Vielen Dank für Ihre Nachricht. Unser Team"
    auto = client(srv.url)
    try:
        assert auto.continues_answers is False
        text = auto.chat_text(messages, prefill=opening).text
        assert srv.requests[-1]["body"]["messages"][-1]["role"] == "user"
        assert not text.startswith(opening)
    finally:
        auto.close()
    forced = LLMClient(srv.url, "test-key", "scripted", 5, prefill="on")
    try:
        assert forced.continues_answers is True
        text = forced.chat_text(messages, prefill=opening).text
        assert srv.requests[-1]["body"]["messages"][-1] == {"role": "assistant",
                                                            "content": opening}
        assert text.startswith(opening + " ") and text.count(opening) == 1
    finally:
        forced.close()
