"""Speculative decoding is switched on for a CPU only by what was measured on it: the
decision (``email_rag.llm.speculation.decide``) from llama-server's own timings with and
without the draft model, and what the manifest then makes the server start with (the real
server with the draft model: tests/integration/test_local_llm_draft.py)."""

from __future__ import annotations

import json
import stat
from contextlib import contextmanager
from pathlib import Path

from email_rag.llm import speculation
from email_rag.llm.local_server import LocalLLMServer, LocalModel, cpu_fingerprint
from email_rag.llm.speculation import DRAFT_FLAG, SpecFigures, decide, figures


def _figures(draft: bool, tokens: int, ms: float, proposed: int = 0, accepted: int = 0
             ) -> SpecFigures:
    return SpecFigures(draft, True, "", 2, 100, 1000.0, tokens, ms, proposed, accepted, 5.0)


def test_the_draft_is_kept_when_generation_is_clearly_faster():
    """GIVEN 10 tokens/s without and 15 with the draft (80 % accepted) THEN on, and the
    reason names both speeds and the acceptance."""
    d = decide(_figures(False, 100, 10_000), _figures(True, 100, 6_667, 120, 96))
    assert d.on is True
    assert "15.0 tokens/s with the draft vs 10.0 without" in d.why and "80%" in d.why


def test_a_draft_that_gains_less_than_the_bar_or_loses_is_off():
    off = _figures(False, 100, 10_000)
    assert decide(off, _figures(True, 100, 9_500, 100, 40)).on is False  # +5 %
    slower = decide(off, _figures(True, 100, 14_000, 100, 20))
    assert slower.on is False and "below the 10% gain" in slower.why


def test_a_failed_server_with_the_draft_or_missing_timings_means_off_with_the_reason():
    off = _figures(False, 100, 10_000)
    failed = decide(off, SpecFigures(True, False, "llama-server exited with 1 while starting"))
    assert failed.on is False and "exited with 1" in failed.why
    unmeasured = decide(SpecFigures(False, False, "timed out"), _figures(True, 100, 1_000))
    assert unmeasured.on is False and "timed out" in unmeasured.why
    assert decide(_figures(False, 0, 0), _figures(True, 0, 0)).on is False


def test_a_draft_model_loaded_but_never_drafting_is_off_however_fast_the_run_looked():
    """GIVEN the server ran with the draft model loaded but its timings show no proposed
    token (this llama.cpp build without ``--spec-type draft-simple``: a faster figure is
    then load noise) THEN off, saying so."""
    d = decide(_figures(False, 100, 10_000), _figures(True, 100, 5_000, 0, 0))
    assert d.on is False and "proposed no token" in d.why


def test_figures_sum_the_timings_and_refuse_an_answer_without_them():
    replies = [{"timings": {"prompt_n": 40, "prompt_ms": 400, "predicted_n": 50,
                            "predicted_ms": 2500, "draft_n": 40, "draft_n_accepted": 30}},
               {"timings": {"prompt_n": 60, "prompt_ms": 600, "predicted_n": 50,
                            "predicted_ms": 2500, "draft_n": 20, "draft_n_accepted": 15}}]
    f = figures(True, replies, 6.0)
    assert (f.ok, f.calls, f.predicted_n, f.tg_per_s, f.pp_per_s) == (True, 2, 100, 20.0, 100.0)
    assert f.acceptance == 0.75
    assert f.as_record()["acceptance"] == 0.75 and f.as_record()["tg_per_s"] == 20.0
    assert figures(True, [{"choices": []}], 1.0).ok is False


class _FakeServer:
    def __init__(self, draft: bool) -> None:
        self.draft = draft
        self.bodies: list[dict] = []

    def chat(self, body: dict, timeout: float = 300.0) -> dict:
        self.bodies.append(body)
        ms = 2000.0 if self.draft else 4000.0  # twice as fast with the draft
        return {"timings": {"prompt_n": 50, "prompt_ms": 500, "predicted_n": 40,
                            "predicted_ms": ms, **({"draft_n": 40, "draft_n_accepted": 32}
                                                   if self.draft else {})}}


def test_measure_alternates_the_same_requests_between_both_servers_and_decides():
    """GIVEN two servers that answer the same requests, twice as fast with the draft WHEN
    measured THEN both got the same measured requests (no prompt cache), one after the
    other, and the draft is on; without a draft model nothing is started."""
    started: list[_FakeServer] = []
    order: list[bool] = []

    class Recording(_FakeServer):
        def chat(self, body: dict, timeout: float = 300.0) -> dict:
            order.append(self.draft)
            return super().chat(body, timeout)

    @contextmanager
    def start(draft: bool):
        srv = Recording(draft)
        started.append(srv)
        yield srv

    d = speculation.measure(start, "m", has_draft=True, rounds=2)
    assert d.on is True and [s.draft for s in started] == [False, True]
    assert started[0].bodies == started[1].bodies
    assert all(b["cache_prompt"] is False for b in started[0].bodies[1:])
    assert order[2:] == [False, True] * (2 * len(speculation.PROMPTS))
    assert d.as_record()["with_draft"]["acceptance"] == 0.8
    started.clear()
    assert speculation.measure(start, "m", has_draft=False).why == "no draft model installed"
    assert started == []


def test_a_server_with_the_draft_that_does_not_start_leaves_it_off_with_the_reason():
    @contextmanager
    def start(draft: bool):
        if draft:
            raise RuntimeError("llama-server exited with 1 while starting: unknown argument")
        yield _FakeServer(draft)

    d = speculation.measure(start, "m", has_draft=True, rounds=1)
    assert d.on is False and "unknown argument" in d.why
    assert d.off_figures is not None and d.off_figures.ok


def _install(tmp_path: Path, speculative: dict | None, draft_bytes: int = 5) -> Path:
    server = tmp_path / "llama-server"
    server.write_text("#!/bin/sh\n")
    server.chmod(server.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "model.gguf").write_bytes(b"x" * 10)
    (tmp_path / "draft.gguf").write_bytes(b"d" * draft_bytes)
    cpu = {"args": []}
    if speculative is not None:
        cpu["speculative"] = speculative
    path = tmp_path / "local-llm.json"
    path.write_text(json.dumps({
        "server": str(server), "model": str(tmp_path / "model.gguf"), "model_id": "m",
        "model_bytes": 10, "draft_model": str(tmp_path / "draft.gguf"),
        "draft_model_bytes": 5, "cpus": {cpu_fingerprint(): cpu}}))
    return path


def test_the_server_starts_with_the_draft_only_where_it_was_measured_faster(tmp_path):
    on = LocalModel.installed(_install(tmp_path, {"on": True, "why": "faster"}))
    assert on.speculative is True
    cmd = LocalLLMServer(on, port=1).command()
    assert cmd[cmd.index(DRAFT_FLAG) + 1] == str(tmp_path / "draft.gguf")
    assert DRAFT_FLAG not in LocalLLMServer(on, port=1, speculative=False).command()

    off = LocalModel.installed(_install(tmp_path, {"on": False, "why": "slower"}))
    assert off.speculative is False and DRAFT_FLAG not in LocalLLMServer(off, port=1).command()
    unmeasured = LocalModel.installed(_install(tmp_path, None))
    assert unmeasured.speculative is False


def test_an_incomplete_draft_file_runs_the_server_without_it(tmp_path):
    local = LocalModel.installed(_install(tmp_path, {"on": True, "why": "faster"},
                                          draft_bytes=3))
    assert local.draft is None and local.speculative is False
    assert DRAFT_FLAG not in LocalLLMServer(local, port=1, speculative=True).command()
