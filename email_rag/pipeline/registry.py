"""The steps of a process_email job, in order (see states.Step)."""

from __future__ import annotations

from ..states import Step
from . import index, retrieve
from .contract import StepSpec


def default_pipeline() -> list[StepSpec]:
    specs: list[StepSpec] = [
        StepSpec(Step.INDEX, index.run, needs_vectors=True),
        StepSpec(Step.RETRIEVE, retrieve.run, needs_vectors=True),
    ]
    return specs
