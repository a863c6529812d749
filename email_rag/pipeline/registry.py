"""The steps of a process_email job, in order (see states.Step)."""

from __future__ import annotations

from ..states import Step
from .contract import StepSpec


def default_pipeline() -> list[StepSpec]:
    from . import classify, draft

    return [
        StepSpec(Step.CLASSIFY, classify.run),
        StepSpec(Step.DRAFT, draft.run),
    ]
