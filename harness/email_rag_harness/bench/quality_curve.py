"""The learning curve of ``bench quality``: classification on the held-out split as the team
teaches it (issue 27).

The corpus (quality_corpus MAILS + quality_corpus_extra MAILS_EXTRA, 332 mails) is split
into the held-out mails (``HELD_OUT``, 120: scored, never learned from) and the training
part (212), shuffled once with a fixed seed: its first N mails are the labelled examples
staff would have made by correcting or approving (N = 0, 25, 50, 100; each point's examples
include the previous point's, as staff corrections accumulate). For every held-out mail the
product's own decision runs, as the classifier makes it (email_rag.classification.classifier):

- the mail is embedded with the configured embedder (``mail_vectors``: the mean of its
  sentences' embeddings), one mail at a time, as the worker does;
- ``view_of``: the history model (a logistic regression per field over the N examples and
  the anchors of the values' meanings, ``history_limits`` from the settings) decides each field it is sure of; nothing when the
  mail is unlike every example;
- the rules first (``no_reply_rule``: a thank-you that ends the conversation takes no reply;
  the corpus mails carry no headers, so the loop guard has nothing to see);
- when the history (or a rule) decides category, priority and needs_reply, no LLM call is made;
  otherwise the LLM classifies with the nearest examples in its prompt and the history's
  sure fields replace its answer (``TeamView.merge``);
- the language: the identifier, the LLM's answer only as the tie-breaker when the
  identifier is unsure (``language_decision``).

Per point: accuracy per field; the share of mails each field was decided by the history
(and its accuracy there); the share decided entirely by the history (no LLM call); the
classification time per mail (p50 / p95), split into mails the history decided and mails
that needed the LLM. With the scripted test double (``--llm scripted``) the LLM's answers
mean nothing: the fields the history leaves undecided are counted as "undecided -> LLM"
and not scored (``accuracy`` None; ``lower_bound``: the history's right answers over all
mails), and the language is the identifier's alone.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from email_rag.classification.history import TeamView, history_limits, meaning_anchors, view_of
from email_rag.classification.history_model import Example, HistoryModel
from email_rag.classification.rules import language_decision, no_reply_rule
from email_rag.classification.task import classification_task
from email_rag.core.settings import Settings
from email_rag.db.audit import AuditEvent
from email_rag.db.examples import mail_vectors
from email_rag.llm.policy import PolicyLimits, run_task

from .common import percentile
from .quality_corpus import MAILS
from .quality_corpus_extra import HELD_OUT, MAILS_EXTRA

POINTS = (0, 25, 50, 100)
SEED = 27
FIELDS = ("category", "priority", "needs_reply", "language")
HISTORY_FIELDS = ("category", "priority", "needs_reply")
SENDER = "customer@example.com"
SHOT_CHARS = 600  # of an example's body in the prompt (as db.examples.texts)
Mail = tuple[str, str, str, str, bool, str, str]


def split(seed: int = SEED) -> tuple[list[Mail], list[Mail]]:
    """(training part in the order staff label it, held-out mails interleaved by language
    so that the first n are balanced). The two never share a mail."""
    corpus = list(MAILS) + list(MAILS_EXTRA)
    held_ids = set(HELD_OUT)
    train = [m for m in corpus if m[0] not in held_ids]
    held = [m for m in corpus if m[0] in held_ids]
    if len(held) != len(held_ids) or {m[0] for m in train} & held_ids:
        raise ValueError("the held-out ids do not match the corpus")
    random.Random(seed).shuffle(train)
    by_language: dict[str, list[Mail]] = {}
    for m in held:
        by_language.setdefault(m[1], []).append(m)
    rounds = max(len(v) for v in by_language.values())
    interleaved = [v[i] for i in range(rounds) for v in by_language.values() if i < len(v)]
    return train, interleaved


def _event(name: str, detail: dict[str, Any]) -> AuditEvent:
    return AuditEvent("bench", "email", 0, name, detail=detail)


def _vector(embedder: Any, subject: str, body: str) -> np.ndarray:
    return np.frombuffer(mail_vectors(embedder, [(subject, body)])[0], dtype="<f4")


def measure(
    settings: Settings,
    embedder: Any,
    llm: Any,
    context: int,
    *,
    points: Sequence[int] = POINTS,
    mails: int | None = None,
    llm_scored: bool = True,
) -> dict[str, Any]:
    """The curve: one entry per point (see the module's docstring). ``llm``: the client of
    the endpoint that classifies what the history leaves open; ``llm_scored`` False for the
    scripted double (its answers are not scored); ``mails``: the first n held-out mails."""
    train, held = split()
    held = held[:mails] if mails else held
    if max(points) > len(train):
        raise ValueError(f"at most {len(train)} examples can be learned")
    started = time.monotonic()
    train_vectors = [
        np.frombuffer(v, dtype="<f4")
        for v in mail_vectors(embedder, [(m[5], m[6]) for m in train[: max(points)]])
    ]
    texts = {i: (m[5], m[6][:SHOT_CHARS]) for i, m in enumerate(train)}
    curve = [
        _point(settings, embedder, llm, context, n, train, train_vectors, texts, held, llm_scored)
        for n in points
    ]
    return {
        "points": curve,
        "held_out": len(held),
        "training_part": len(train),
        "seed": SEED,
        "embedder": getattr(embedder, "name", type(embedder).__name__),
        "llm_scored": llm_scored,
        "seconds": round(time.monotonic() - started, 1),
    }


def _point(
    settings: Settings,
    embedder: Any,
    llm: Any,
    context: int,
    n: int,
    train: list[Mail],
    train_vectors: list[np.ndarray],
    texts: dict[int, tuple[str, str]],
    held: list[Mail],
    llm_scored: bool,
) -> dict[str, Any]:
    examples = [
        Example(i, train_vectors[i], m[2], m[3], m[4], "correction")
        for i, m in enumerate(train[:n])
    ]
    model = (HistoryModel(examples, history_limits(settings), anchors=meaning_anchors(embedder))
             if examples else None)
    limits = PolicyLimits.from_settings(settings)
    right: Counter[str] = Counter()
    by_history: Counter[str] = Counter()
    history_right: Counter[str] = Counter()
    times = {"all": [], "history": [], "llm": []}
    llm_calls = 0
    by_rules = 0
    for _mid, lang, cat, prio, needs, subject, body in held:
        want = {"category": cat, "priority": prio, "needs_reply": needs, "language": lang}
        t0 = time.perf_counter()
        view: TeamView | None = None
        if model is not None:
            view = view_of(
                model,
                examples,
                _vector(embedder, subject, body),
                settings,
                lambda ids: {i: texts[i] for i in ids},
            )
        ruled = no_reply_rule(None, body)  # the corpus mails carry no headers: no loop guard
        if view is not None and ruled:
            view = view.ruled("needs_reply", False)
        got: dict[str, Any] = {"needs_reply": False} if ruled else {}
        by_rules += bool(ruled)
        if view is not None:
            for name in HISTORY_FIELDS:
                vote = view.decision.votes[name]
                if vote.decided and vote.source == "history":
                    got[name] = vote.value
                    by_history[name] += 1
                    history_right[name] += vote.value == want[name]
        if view is not None and view.decision.all_decided:
            language, _ = language_decision(f"{subject}\n{body}", None)
            seconds, path = time.perf_counter() - t0, "history"
        else:
            local = time.perf_counter() - t0
            task = classification_task(
                subject,
                SENDER,
                body,
                settings.llm_max_input_chars,
                context,
                view.shots if view else None,
            )
            result = run_task(llm, task, limits, event=_event)
            llm_calls += 1
            value = result.value
            t1 = time.perf_counter()
            if value is not None and llm_scored:
                for name in HISTORY_FIELDS:
                    got.setdefault(name, _plain(getattr(value, name)))
            llm_language = value.language if value is not None and llm_scored else None
            language, _ = language_decision(f"{subject}\n{body}", llm_language)
            seconds, path = local + result.duration + (time.perf_counter() - t1), "llm"
        got["language"] = language.value
        for name in FIELDS:
            right[name] += name in got and got[name] == want[name]
        times["all"].append(seconds)
        times[path].append(seconds)
    total = len(held) or 1
    scored = set(FIELDS) if llm_scored else {"language"}
    return {
        "examples": n,
        "mails": len(held),
        "llm_calls": llm_calls,
        "accuracy": {f: round(right[f] / total, 3) if f in scored else None for f in FIELDS},
        "lower_bound": {f: round(right[f] / total, 3) for f in FIELDS},
        "history_share": {f: round(by_history[f] / total, 3) for f in HISTORY_FIELDS},
        "history_accuracy": {
            f: round(history_right[f] / by_history[f], 3) if by_history[f] else None
            for f in HISTORY_FIELDS
        },
        "needs_reply_by_rules": round(by_rules / total, 3),
        "all_by_history": round(len(times["history"]) / total, 3),
        "needs_llm": round(len(times["llm"]) / total, 3),
        **{f"p{p}_s": _r(percentile(times["all"], p)) for p in (50, 95)},
        "p50_history_s": _r(percentile(times["history"], 50)),
        "p50_llm_s": _r(percentile(times["llm"], 50)),
    }


def _plain(value: Any) -> Any:
    return value if isinstance(value, bool) else str(getattr(value, "value", value))


def _r(x: float | None) -> float | None:
    return round(x, 3) if x is not None else None


def rows(curve: dict[str, Any]) -> list[dict[str, Any]]:
    """The curve as table rows (``bench quality``'s text output)."""
    out = []
    for p in curve["points"]:
        acc, hist = p["accuracy"], p["history_share"]

        def show(f: str, acc: dict[str, Any] = acc, p: dict[str, Any] = p) -> str:
            v = acc[f]
            return f"{v:.2f}" if v is not None else f">= {p['lower_bound'][f]:.2f}"

        out.append(
            {
                "measure": f"learning curve, {p['examples']} examples ({p['mails']} held-out mails)",
                "value": f"category {show('category')}, priority {show('priority')}, needs_reply "
                f"{show('needs_reply')}, language {show('language')}; history decided "
                f"all {p['all_by_history']:.0%} (category {hist['category']:.0%}); p50 "
                f"{p['p50_s']} s (history {p['p50_history_s']} s, LLM {p['p50_llm_s']} s)",
                "target": _target_text(p["examples"]),
            }
        )
    return out


def _target_text(n: int) -> str:
    if n == 50:
        return "language >= 0.97, p50 < 1 s"
    if n == 100:
        return "category >= 0.85, needs_reply >= 0.95"
    return "-"


def point(curve: dict[str, Any], n: int) -> dict[str, Any] | None:
    return next((p for p in curve["points"] if p["examples"] == n), None)
