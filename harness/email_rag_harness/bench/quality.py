"""Quality of the configured models on the project's labelled corpus (bench/quality_corpus.py).

    python -m bench quality [--llm local|configured|scripted] [--mails N] [--json]
    python -m bench quality --retrieval-only [--json]
    python -m bench quality --learning-curve [--llm ...] [--mails N] [--points 0,25,50,100]
    python -m bench quality --drafts [--set PATH] [--only m01,m02] [--llm ...] [--keep]
                            [--verbose]   (bench/quality_drafts.py: drafts judged by facts)

- classification: every mail through the pipeline's own classification task and
  LLM policy: accuracy per field (category, priority, language, needs_reply), JSON
  valid on the first try, fallbacks taken (retries, defaults, manual), and where the
  prompt-injection mails ended (``no_reply_suggested`` is a list staff see;
  ``no_reply`` would be silent);
- retrieval (bench/quality_retrieval.py): the whole corpus (MAILS + MAILS_EXTRA) in a fresh
  database and embedded with the configured embedder; each paraphrase (PARAPHRASES +
  PARAPHRASES_EXTRA) is a query: hit@1 and hit@3 of vectors alone, the FULLTEXT ranking
  alone and the two fused (RRF), and the hashing test embedder as the baseline.
  ``--retrieval-only`` measures only this (no LLM; about a minute);
- latency p50/p95 per LLM call, per task;
- the learning curve (bench/quality_curve.py): accuracy per field on the held-out split
  with 0, 25, 50 and 100 labelled examples from the training part, the share the team's
  history decides without the LLM, and the classification time per mail.
  ``--learning-curve`` measures only this (``--mails N``: the first N held-out mails,
  balanced across languages; with ``--llm scripted`` in about a minute, the fields the
  history leaves open counted as "undecided -> LLM", not scored).

``--llm local`` (default) starts the installed local model (scripts/local-llm/
install.sh) on a free port; ``configured`` uses EMAIL_RAG_LLM_*; ``scripted`` the
test double (smoke tests only: its figures mean nothing).
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import ExitStack
from typing import Any

from email_rag.classification.rules import no_reply_outcome
from email_rag.classification.task import classification_task
from email_rag.core.settings import Settings
from email_rag.db.audit import AuditEvent
from email_rag.llm.policy import PolicyLimits, run_task

from . import quality_curve
from .common import Report, Target, percentile
from .quality_corpus import MAILS

TARGETS = {"category": 0.80, "language": 0.95, "needs_reply": 0.90, "json_valid_first": 0.99,
           "retrieval_hit3": 0.85}
SENDER = "customer@example.com"


def _event(name: str, detail: dict[str, Any]) -> AuditEvent:
    return AuditEvent("bench", "email", 0, name, detail=detail)


def _endpoint(stack: ExitStack, mode: str, settings: Settings) -> tuple[Settings, str]:
    if mode == "scripted":
        from email_rag_harness.testing.llm_server import ScriptedLLMServer

        srv = stack.enter_context(ScriptedLLMServer())
        return settings.model_copy(update={"llm_base_url": srv.url}), "scripted test double"
    if mode == "local":
        from email_rag.llm.local_server import LocalLLMServer

        srv = stack.enter_context(LocalLLMServer())
        return (settings.model_copy(update={"llm_base_url": srv.url, "llm_model": srv.model_id}),
                f"local {srv.model_id} (llama-server, started in {srv.started_in:.1f} s, {srv.flags})")
    return settings, f"configured {settings.llm_model} at {settings.llm_base_url}"


def _calls(events: list[AuditEvent]) -> list[dict[str, Any]]:
    return [e.detail for e in events if e.event == "llm_attempt"]


def classify_all(llm: Any, settings: Settings, mails: list[tuple], context: int) -> dict[str, Any]:
    right: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    first_valid = 0
    latencies: list[float] = []
    injections = {}
    wrong: list[str] = []
    limits = PolicyLimits.from_settings(settings)
    for mid, lang, cat, prio, needs, subject, body in mails:
        task = classification_task(subject, SENDER, body, settings.llm_max_input_chars, context)
        result = run_task(llm, task, limits, event=_event)
        calls = _calls(result.events)
        latencies += [c["duration_ms"] / 1000 for c in calls]
        outcomes[str(result.outcome)] += 1
        if calls and calls[0]["outcome"] == "ok":
            first_valid += 1
        value = result.value
        if value is None:
            wrong.append(f"{mid}: {result.outcome}")
            continue
        got = {"category": value.category.value, "priority": value.priority.value,
               "language": value.language.value, "needs_reply": value.needs_reply}
        want = {"category": cat, "priority": prio, "language": lang, "needs_reply": needs}
        for k in want:
            right[k] += got[k] == want[k]
        if got["category"] != cat or got["needs_reply"] != needs:
            wrong.append(f"{mid}: {got['category']}/{got['needs_reply']} "
                         f"(want {cat}/{needs})")
        if "IGNORE" in body:
            status, _, _ = no_reply_outcome(value, None, None)
            injections[mid] = str(status)
    n = len(mails)
    return {"n": n, **{f"acc_{k}": round(right[k] / n, 3) for k in
                       ("category", "priority", "language", "needs_reply")},
            "json_valid_first": round(first_valid / n, 3), "outcomes": dict(outcomes),
            "p50_s": _r(percentile(latencies, 50)), "p95_s": _r(percentile(latencies, 95)),
            "calls": len(latencies), "injection_mails": injections, "misses": wrong}


def _r(x: float | None) -> float | None:
    return round(x, 2) if x is not None else None


def retrieval_figures(settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """Retrieval with the configured embedder (vectors, lexical, fused) and the hashing
    baseline (vectors), each on its own fresh database."""
    from email_rag.adapters.embeddings import HashingEmbedder, build_embedder

    from . import quality_retrieval
    from .common import Workspace

    with Workspace("quality") as ws:
        r = quality_retrieval.measure(ws.database(), build_embedder(settings))
        base = quality_retrieval.measure(ws.database(), HashingEmbedder(settings.vector_dim))
    return r, base


def retrieval_rows(r: dict[str, Any], base: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"measure": f"retrieval hit@1 / hit@3, vectors ({r['embedder']})",
         "value": f"{r['vectors']['hit1']} / {r['vectors']['hit3']}", "target": "-"},
        {"measure": "retrieval hit@1 / hit@3, lexical (FULLTEXT)",
         "value": f"{r['lexical']['hit1']} / {r['lexical']['hit3']}", "target": "-"},
        {"measure": "retrieval hit@1 / hit@3, fused (RRF k=60)",
         "value": f"{r['fused']['hit1']} / {r['fused']['hit3']}", "target": ">= 0.85 (hit@3)"},
        {"measure": "retrieval hit@3, hashing vectors (baseline)",
         "value": base["vectors"]["hit3"], "target": "-"},
    ]


def retrieval_only(settings: Settings) -> Report:
    r, base = retrieval_figures(settings)
    targets = [Target("retrieval hit@3 (fused) >= 0.85", r["fused"]["hit3"],
                      TARGETS["retrieval_hit3"])]
    notes = [f"by language (hit@3 vectors/lexical/fused): {r['hit3_by_language']}",
             f"embedding {r['embed_ms_per_text']} ms per text; FULLTEXT "
             f"{r['lexical_ms_per_query']} ms per query"]
    if r["fused"]["misses"]:
        notes.append("fused misses: " + "; ".join(r["fused"]["misses"]))
    return Report("quality", f"retrieval hit@3: vectors {r['vectors']['hit3']:.0%}, lexical "
                  f"{r['lexical']['hit3']:.0%}, fused {r['fused']['hit3']:.0%} ({r['embedder']}, "
                  f"{r['pairs']} paraphrases, {r['mails']} mails)",
                  ["measure", "value", "target"], retrieval_rows(r, base),
                  {"retrieval": r, "retrieval_hashing": base, "hit3": r["fused"]["hit3"]},
                  targets, [f"{r['pairs']} paraphrase queries against {r['mails']} mails"],
                  notes)


def curve_figures(settings: Settings, llm: Any, context: int, mode: str,
                  args: Any) -> dict[str, Any]:
    from email_rag.adapters.embeddings import build_embedder

    from . import quality_curve

    return quality_curve.measure(settings, build_embedder(settings), llm, context,
                                 points=getattr(args, "points", None) or quality_curve.POINTS,
                                 mails=getattr(args, "mails", None),
                                 llm_scored=mode != "scripted")


def curve_targets(curve: dict[str, Any]) -> list[Target]:
    """The issue's goals: language >= 0.97 and p50 < 1 s per mail at 50 examples; category
    >= 0.85 and needs_reply >= 0.95 at 100 (n/a when not measured: the scripted double's
    answers and times are not the model's)."""
    from .quality_curve import point

    out = []
    at50, at100 = point(curve, 50), point(curve, 100)
    if at50:
        out += [Target("learning curve, 50 examples: language >= 0.97",
                       at50["accuracy"]["language"], 0.97),
                Target("learning curve, 50 examples: p50 classification < 1 s per mail",
                       at50["p50_s"] if curve["llm_scored"] else None, 1.0,
                       higher_is_better=False)]
    if at100:
        out += [Target("learning curve, 100 examples: category >= 0.85",
                       at100["accuracy"]["category"], 0.85),
                Target("learning curve, 100 examples: needs_reply >= 0.95",
                       at100["accuracy"]["needs_reply"], 0.95)]
    return out


def curve_notes(curve: dict[str, Any]) -> list[str]:
    notes = [f"learning curve: {curve['held_out']} held-out mails never learned from, "
             f"examples from the {curve['training_part']}-mail training part (seed "
             f"{curve['seed']}), embedder {curve['embedder']}; {curve['seconds']} s"]
    if not curve["llm_scored"]:
        notes.append("learning curve with the scripted double: the fields the history leaves "
                     "open go to the LLM and are not scored ('>= x': the history's right "
                     "answers over all mails); language is the identifier's alone; LLM "
                     "times are the double's")
    for p in curve["points"]:
        notes.append(f"  {p['examples']} examples: needs the LLM {p['needs_llm']:.0%} of "
                     f"mails ({p['llm_calls']} calls); decided by history per field "
                     f"{p['history_share']}, accuracy there {p['history_accuracy']}; p50 "
                     f"history-decided {p['p50_history_s']} s, with the LLM "
                     f"{p['p50_llm_s']} s")
    return notes


def learning_curve_only(args: Any, settings: Settings, mode: str) -> Report:
    from email_rag.adapters.llm import LLMClient
    from email_rag.llm.budget import context_tokens

    from . import quality_curve

    with ExitStack() as stack:
        s, endpoint = _endpoint(stack, mode, settings)
        llm = LLMClient.from_settings(s)
        stack.callback(llm.close)
        curve = curve_figures(s, llm, context_tokens(s, llm), mode, args)
    at = quality_curve.point(curve, 50) or curve["points"][-1]
    return Report("quality", f"learning curve ({endpoint}): at {at['examples']} examples the "
                  f"history decides {at['all_by_history']:.0%} of held-out mails without the "
                  f"LLM, p50 {at['p50_s']} s per mail", ["measure", "value", "target"],
                  quality_curve.rows(curve), {"learning_curve": curve, "endpoint": endpoint},
                  curve_targets(curve),
                  [f"{curve['held_out']} held-out mails scored at {len(curve['points'])} "
                   "points, none of them learned from"], curve_notes(curve))


def run(args: Any) -> Report:
    from email_rag.adapters.llm import LLMClient
    from email_rag.llm.budget import context_tokens

    mode = getattr(args, "llm", None) or "local"
    if getattr(args, "drafts", False) or getattr(args, "compare", None):
        from . import quality_drafts

        return quality_drafts.run(args)
    settings = Settings()
    if getattr(args, "retrieval_only", False):
        return retrieval_only(settings)
    if getattr(args, "learning_curve", False):
        return learning_curve_only(args, settings, mode)
    mails = MAILS[: args.mails] if args.mails else MAILS
    with ExitStack() as stack:
        s, endpoint = _endpoint(stack, mode, settings)
        llm = LLMClient.from_settings(s)
        stack.callback(llm.close)
        context = context_tokens(s, llm)
        started = time.monotonic()
        c = classify_all(llm, s, mails, context)
        llm_seconds = time.monotonic() - started
        curve = curve_figures(s, llm, context, mode, args)
    full, full_base = retrieval_figures(settings)
    r = {"embedder": full["embedder"], "pairs": full["pairs"], "hit1": full["fused"]["hit1"],
         "hit3": full["fused"]["hit3"], "misses": full["fused"]["misses"], "full": full}
    base = {"hit3": full_base["vectors"]["hit3"], "full": full_base}
    rows = [
        {"measure": "category accuracy", "value": c["acc_category"], "target": ">= 0.80"},
        {"measure": "priority accuracy", "value": c["acc_priority"], "target": "-"},
        {"measure": "language accuracy", "value": c["acc_language"], "target": ">= 0.95"},
        {"measure": "needs_reply accuracy", "value": c["acc_needs_reply"], "target": ">= 0.90"},
        {"measure": "JSON valid on first try", "value": c["json_valid_first"],
         "target": ">= 0.99"},
        *retrieval_rows(full, full_base),
        {"measure": "classify latency p50 / p95 (s)", "value": f"{c['p50_s']} / {c['p95_s']}",
         "target": "-"},
        *quality_curve.rows(curve),
    ]
    targets = [Target("category >= 0.80", c["acc_category"], TARGETS["category"]),
               Target("language >= 0.95", c["acc_language"], TARGETS["language"]),
               Target("needs_reply >= 0.90", c["acc_needs_reply"], TARGETS["needs_reply"]),
               Target("JSON valid first try >= 0.99", c["json_valid_first"],
                      TARGETS["json_valid_first"]),
               Target("retrieval hit@3 (fused) >= 0.85", r["hit3"], TARGETS["retrieval_hit3"]),
               *curve_targets(curve)]
    checks = [f"{c['n']} mails classified, {sum(c['outcomes'].values())} outcomes counted",
              f"{r['pairs']} paraphrase queries against {full['mails']} mails"]
    notes = [f"endpoint: {endpoint}; context {context} tokens; LLM part took "
             f"{llm_seconds:.0f} s",
             f"classification outcomes: {c['outcomes']}",
             f"prompt-injection mails ended as: {c['injection_mails']} (no_reply_suggested and "
             "classified are seen by staff; no_reply would be silent)"]
    notes += curve_notes(curve)
    if c["misses"]:
        notes.append("classification misses (category/needs_reply): " + "; ".join(c["misses"]))
    if r["misses"]:
        notes.append("retrieval misses: " + "; ".join(r["misses"]))
    return Report("quality", f"category {c['acc_category']:.0%}, language "
                  f"{c['acc_language']:.0%}, needs_reply {c['acc_needs_reply']:.0%}, JSON first "
                  f"try {c['json_valid_first']:.0%}, retrieval hit@3 {r['hit3']:.0%} "
                  f"({endpoint})", ["measure", "value", "target"], rows,
                  {"classification": c, "retrieval": r, "retrieval_hashing": base,
                   "endpoint": endpoint, "context_tokens": context,
                   "learning_curve": curve,
                   "acc_category": c["acc_category"], "hit3": r["hit3"]},
                  targets, checks, notes)
