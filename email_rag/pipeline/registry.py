"""The steps of a process_email job, in order (see states.Step).

Index and retrieve need the vector store: in local Qdrant mode they run on the
vector queue (one owning process); the worker hands the job over and back.
"""

from __future__ import annotations

from ..states import Step
from .contract import StepSpec


def default_pipeline() -> list[StepSpec]:
    from . import classify, draft, index, parse, retrieve

    return [
        StepSpec(Step.PARSE, parse.run),
        StepSpec(Step.CLASSIFY, classify.run),
        StepSpec(Step.INDEX, index.run, needs_vectors=True),
        StepSpec(Step.RETRIEVE, retrieve.run, needs_vectors=True),
        StepSpec(Step.DRAFT, draft.run),
    ]
