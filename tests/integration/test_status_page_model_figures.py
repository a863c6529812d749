"""The status page and `email-rag status` say which model and build answer, how fast it
read and wrote on its last calls (the server's timings recorded with each attempt), and the
last error (issue 44); staff see no error text."""

from __future__ import annotations

import pytest

from email_rag.db.audit import AuditEvent, AuditLog
from email_rag.ops.llm_status import RECENT, model_status
from tests.webutil import browsers, login, shown_text, web_app

MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def attempt(outcome: str = "ok", prompt=(1500, 25_000.0), written=(45, 2_500.0), **extra):
    detail = {"task": "classify", "outcome": outcome, "model": MODEL, "duration_ms": 1.0,
              **extra}
    if outcome == "ok":
        detail |= {"answered_by": MODEL, "runtime": "b11434-unknown", "timings": {
            "prompt_n": prompt[0], "prompt_ms": prompt[1], "predicted_n": written[0],
            "predicted_ms": written[1], "cache_n": 0}}
    return AuditEvent("worker", "email", 1, "llm_attempt", detail=detail)


@pytest.fixture
def calls(db):
    log = AuditLog(db, "spool")
    log.record(*[attempt() for _ in range(RECENT + 5)])  # older ones: outside the window
    log.record(attempt("timeout", error="the LLM did not answer within 240 s"))
    log.record(attempt(prompt=(1543, 800.0), written=(60, 3_500.0)))  # the cache read it
    return log


def test_the_model_figures_come_from_the_last_calls(db, calls):
    m = model_status(db)
    assert (m.calls, m.ok, m.measured) == (RECENT, RECENT - 1, RECENT - 1)
    assert m.model == MODEL and m.runtime == "b11434-unknown"
    read = (18 * 1500 + 1543) / ((18 * 25_000 + 800) / 1000)
    write = (18 * 45 + 60) / ((18 * 2_500 + 3_500) / 1000)
    assert m.read_per_s == round(read, 1) and m.write_per_s == round(write, 1)
    assert m.last_error == "the LLM did not answer within 240 s"


def test_no_call_yet_and_calls_without_timings(db):
    assert model_status(db) is None
    AuditLog(db, "spool").record(AuditEvent("worker", "email", 1, "llm_attempt", detail={
        "task": "draft", "outcome": "ok", "model": "gpt-4o-mini", "answered_by": "gpt-4o"}))
    m = model_status(db)
    assert m.model == "gpt-4o" and m.measured == 0 and m.write_per_s is None
    assert m.last_error is None


def test_the_status_page_shows_model_speed_and_the_last_error_to_admins_only(settings, db,
                                                                          calls):
    with browsers(web_app(settings, db), log_in=False) as new:
        admin, staff = new(), new()
        login(admin, "root")
        login(staff, "anna")
        page = shown_text(admin.get("/status").text)
        assert f"Answered by\n{MODEL}\n· runtime b11434-unknown" in page
        assert "reading 63.3 tokens/s, writing 17.9 tokens/s" in page
        assert "the LLM did not answer within 240 s" in page
        seen = shown_text(staff.get("/status").text)
        assert MODEL in seen and "tokens/s" in seen
        assert "did not answer within 240 s" not in seen
