"""The steps of a process_email job, in order (see states.Step)."""

from __future__ import annotations

from .contract import StepSpec


def default_pipeline() -> list[StepSpec]:
    specs: list[StepSpec] = []
    return specs
