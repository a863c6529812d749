"""The model calls of ``bench llm`` for one configuration, run in a subprocess so that the
code under test is whichever ``email_rag`` comes first on ``PYTHONPATH`` (the checked-out
commit of "before", or this tree).

Reads one JSON object on stdin (``url``, ``model``, ``context``, ``mails``: subject, sender,
body) and writes one JSON object on stdout: per mail the classification's and (when the
mail takes a reply) the draft's attempts, each with llama-server's ``timings`` and the
duration. It uses only what both versions have: ``classification_task``, ``draft_task``,
``run_task`` and ``LLMClient``, so the prompts and request bodies are each version's own.
Mail texts stay in this process and the parent; nothing is logged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import email_rag
from email_rag.adapters.llm import LLMClient
from email_rag.classification.task import classification_task
from email_rag.llm.policy import PolicyLimits, TaskResult, run_task
from email_rag.pipeline.draft import draft_task

MAX_CHARS = 8000


def _attempts(result: TaskResult[Any]) -> list[dict[str, Any]]:
    out = []
    for name, detail in result.events:
        if name == "llm_attempt":
            out.append({"duration_ms": detail.get("duration_ms"), "outcome": detail.get("outcome"),
                        "timings": detail.get("timings") or {}})
    return out


def run(job: dict[str, Any]) -> dict[str, Any]:
    llm = LLMClient(job["url"], "not-needed", job["model"], float(job.get("timeout", 900)))
    limits = PolicyLimits()
    context = int(job["context"])

    def event(name: str, detail: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return name, detail

    mails = []
    try:
        for m in job["mails"]:
            classified = run_task(llm, classification_task(m["subject"], m["sender"], m["body"],
                                                           MAX_CHARS, context), limits,
                                  event=event)  # type: ignore[arg-type]
            row: dict[str, Any] = {"classify": _attempts(classified), "draft": None}
            value = classified.value
            if value is not None and value.needs_reply:
                drafted = run_task(llm, draft_task(m["subject"], m["sender"], m["body"],
                                                   str(value.language.value), [], [], MAX_CHARS,
                                                   context), limits,
                                   event=event)  # type: ignore[arg-type]
                row["draft"] = _attempts(drafted)
                row["draft_outcome"] = str(drafted.outcome)
            mails.append(row)
    finally:
        llm.close()
    return {"mails": mails, "code": str(Path(email_rag.__file__).resolve().parents[1])}


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout)
