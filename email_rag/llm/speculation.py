"""Speculative decoding on THIS CPU: measured with and without the draft model, kept only
where it wins.

llama-server can let a small draft model (Qwen2.5-Coder-0.5B-Instruct, the main model's
tokenizer) propose the next few tokens and have the main model check them in one batch
(``--spec-draft-model``). Whether that is faster depends on the CPU: the draft model costs
time of its own, and a batch of N tokens costs the main model more than one token where the
cores are compute-bound. So the install's probe measures it (``measure``): the same short
generations (a reply, an adaptation into another language) once without and once with the
draft model, in one run on the same machine (both servers loaded, the requests alternating
between them, ``ROUNDS`` times, so a change of load hits both alike), from llama-server's
own ``timings`` of each answer (``predicted_n``/``predicted_ms``; with the draft
``draft_n``/``draft_n_accepted``), and ``decide`` keeps it on only when the draft was used
and generation got at least ``MIN_GAIN`` faster. The
decision and both measurements are recorded per CPU in the manifest (``as_record``); every
start of the server follows it (``local_server.LocalModel.speculative``).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| no draft model installed | no | yes | off ("no draft model installed") |
| the server with the draft does not start (e.g. a build without the flag) | no | yes: the start error recorded | off, with the reason; the server runs without it |
| a measured request fails or sends no timings | no | yes | off ("not measured: ...") |
| the server loaded the draft but drafted nothing (``draft_n`` 0) | no | yes | off ("the draft model proposed no token") |
| the draft is slower or gains less than ``MIN_GAIN`` | no | yes: both figures recorded | off |
| the draft gains at least ``MIN_GAIN`` | - | yes: both figures recorded | on for this CPU |
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import Protocol

from ..core.jsonvalue import JsonObject

# The flags of this llama.cpp build (11434): ``--spec-draft-model`` (alias ``--model-draft``,
# ``-md``) loads the draft model, but this build drafts with it only when ``--spec-type
# draft-simple`` says so (its default type is "none": the model loaded and unused, measured
# here); ``--draft-max``/``--draft-min`` were removed for ``--spec-draft-n-max``/``-n-min``
# (the old names stop the server); ``-ngld`` only matters with a GPU.
DRAFT_FLAG = "--spec-draft-model"
# At most 4 tokens per step, and only while the draft is at least 75 % sure of its own next
# token: with 8 unconditional tokens the main model accepted 29 % of them here and
# generation ran 3x slower (the 2 cores verify a batch of 9 at a real cost).
SPEC_ARGS: tuple[str, ...] = ("--spec-type", "draft-simple", "--spec-draft-n-max", "4",
                              "--spec-draft-n-min", "0", "--spec-draft-p-min", "0.75")
MIN_GAIN = 0.10  # on only when generation is at least 10 % faster with the draft
# What the pipeline generates: a reply, and (the retrieve-then-adapt path) an approved reply
# adapted into the mail's language. Temperature 0: the same tokens with and without the draft.
PROMPTS: tuple[tuple[str, str], ...] = (
    ("You write replies of a customer support team. Write only the reply body.",
     "A customer writes that the parcel of order 4711 is three days late. Write a short, "
     "polite reply: we checked with the carrier, it arrives within two working days."),
    ("You translate replies of a customer support team. Keep names, numbers and line breaks; "
     "write only the translation.",
     "Translate into German:\nThank you for your message. We have checked your invoice of "
     "March: the amount of 49.00 EUR was charged twice by mistake. The second payment will "
     "be refunded to your card within 5 working days.\nKind regards"),
)
MAX_TOKENS = 96
ROUNDS = 2


class Generating(Protocol):
    """A started llama-server (``local_server.LocalLLMServer``)."""

    def chat(self, body: JsonObject, timeout: float = 300.0) -> JsonObject: ...


@dataclass(frozen=True)
class SpecFigures:
    """Generation measured with one configuration: sums of llama-server's ``timings``."""

    draft: bool  # with the draft model
    ok: bool
    why: str = ""  # what failed (not ok)
    calls: int = 0
    prompt_n: int = 0
    prompt_ms: float = 0.0
    predicted_n: int = 0
    predicted_ms: float = 0.0
    draft_n: int = 0
    draft_n_accepted: int = 0
    wall_s: float = 0.0

    @property
    def tg_per_s(self) -> float:
        """Generated tokens per second (0 when nothing was generated)."""
        return self.predicted_n / (self.predicted_ms / 1000) if self.predicted_ms > 0 else 0.0

    @property
    def pp_per_s(self) -> float:
        return self.prompt_n / (self.prompt_ms / 1000) if self.prompt_ms > 0 else 0.0

    @property
    def acceptance(self) -> float | None:
        """Share of the draft's proposed tokens the main model accepted."""
        return self.draft_n_accepted / self.draft_n if self.draft_n else None

    def as_record(self) -> JsonObject:
        out: JsonObject = {"ok": self.ok, "calls": self.calls,
                           "tg_per_s": round(self.tg_per_s, 2),
                           "pp_per_s": round(self.pp_per_s, 2),
                           "predicted_n": self.predicted_n, "wall_s": round(self.wall_s, 2)}
        if self.draft:
            acc = self.acceptance
            out.update(draft_n=self.draft_n, draft_n_accepted=self.draft_n_accepted,
                       acceptance=None if acc is None else round(acc, 3))
        if not self.ok:
            out["why"] = self.why[:300]
        return out


@dataclass(frozen=True)
class SpecDecision:
    """Whether llama-server runs with the draft model on this CPU, and why."""

    on: bool
    why: str
    off_figures: SpecFigures | None = None
    on_figures: SpecFigures | None = None
    load: float = field(default=0.0, compare=False)  # 1-min load average at the measure

    def as_record(self) -> JsonObject:
        return {"on": self.on, "why": self.why,
                "without_draft": self.off_figures.as_record() if self.off_figures else None,
                "with_draft": self.on_figures.as_record() if self.on_figures else None,
                "args": list(SPEC_ARGS), "load": round(self.load, 2),
                "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def decide(off: SpecFigures, on: SpecFigures, min_gain: float = MIN_GAIN) -> SpecDecision:
    """On only when both configurations answered and the draft made generation at least
    ``min_gain`` faster (tokens per second of llama-server's own timings)."""
    if not on.ok:
        return SpecDecision(False, f"the server with the draft model failed: {on.why}"[:300],
                            off, on)
    if not off.ok:
        return SpecDecision(False, f"not measured without the draft model: {off.why}"[:300],
                            off, on)
    if off.tg_per_s <= 0 or on.tg_per_s <= 0:
        return SpecDecision(False, "not measured: no generated tokens in the timings", off, on)
    if on.draft_n == 0:
        return SpecDecision(False, "the draft model proposed no token (speculative decoding "
                            "not active with these flags in this build)", off, on)
    gain = on.tg_per_s / off.tg_per_s - 1
    acc = on.acceptance
    said = (f"{on.tg_per_s:.1f} tokens/s with the draft vs {off.tg_per_s:.1f} without "
            f"({gain:+.0%}; draft acceptance "
            f"{'n/a' if acc is None else format(acc, '.0%')})")
    if gain >= min_gain:
        return SpecDecision(True, said, off, on)
    return SpecDecision(False, f"{said}: below the {min_gain:.0%} gain that pays for it", off,
                        on)


def figures(draft: bool, replies: list[JsonObject], wall_s: float) -> SpecFigures:
    """The sums of the ``timings`` of ``replies`` (a reply without them: not ok)."""
    sums = {"prompt_n": 0.0, "prompt_ms": 0.0, "predicted_n": 0.0, "predicted_ms": 0.0,
            "draft_n": 0.0, "draft_n_accepted": 0.0}
    for reply in replies:
        timings = reply.get("timings")
        if not isinstance(timings, dict) or "predicted_n" not in timings:
            return SpecFigures(draft, False, "the answer carried no timings (not llama.cpp?)")
        for key in sums:
            value = timings.get(key, 0)
            sums[key] += float(value) if isinstance(value, int | float) else 0.0
    return SpecFigures(draft, True, "", len(replies), int(sums["prompt_n"]), sums["prompt_ms"],
                       int(sums["predicted_n"]), sums["predicted_ms"], int(sums["draft_n"]),
                       int(sums["draft_n_accepted"]), wall_s)


def request(system: str, user: str) -> JsonObject:
    """One measured request (temperature 0, no prompt cache: each is read in full)."""
    return {"temperature": 0, "max_tokens": MAX_TOKENS, "cache_prompt": False,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}]}


Start = Callable[[bool], AbstractContextManager[Generating]]


def measure(start: Start, model: str, has_draft: bool, rounds: int = ROUNDS) -> SpecDecision:
    """Both configurations on this machine at once: the two servers loaded side by side and
    each request of ``PROMPTS`` sent to one and then the other, ``rounds`` times; then
    ``decide``. A server that fails leaves its figures not ok, with the reason."""
    if not has_draft:
        return SpecDecision(False, "no draft model installed")
    replies: dict[bool, list[JsonObject]] = {False: [], True: []}
    walls = {False: 0.0, True: 0.0}
    failed: dict[bool, str] = {}
    with ExitStack() as stack:
        servers: dict[bool, Generating] = {}
        for draft in (False, True):
            try:
                server = stack.enter_context(start(draft))
                server.chat({"model": model, "max_tokens": 4, "temperature": 0,
                             "messages": [{"role": "user", "content": "Say OK."}]})  # warm
                servers[draft] = server
            except Exception as e:  # noqa: BLE001 - a failure means off, with its reason
                failed[draft] = f"{type(e).__name__}: {e}"[:300]
        for _ in range(rounds):
            for system, user in PROMPTS:
                for draft, server in servers.items():
                    if draft in failed:
                        continue
                    began = time.monotonic()
                    try:
                        replies[draft].append(server.chat({"model": model,
                                                           **request(system, user)}))
                    except Exception as e:  # noqa: BLE001 - as above
                        failed[draft] = f"{type(e).__name__}: {e}"[:300]
                    walls[draft] += time.monotonic() - began
    off, on = (SpecFigures(d, False, failed[d]) if d in failed else
               figures(d, replies[d], walls[d]) for d in (False, True))
    decision = decide(off, on)
    return SpecDecision(decision.on, decision.why, off, on, os.getloadavg()[0])
