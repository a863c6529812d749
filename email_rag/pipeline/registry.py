"""The steps of a process_email job, in order (see states.Step).

Index and retrieve need the vector store: in local Qdrant mode they run on the
vector queue (one owning process); the worker hands the job over and back.

Checkpoint groups (``commit_before``): classify's LLM call only reads, so it shares
parse's transaction; index upserts into the vector store from the classification,
so parse + classify are committed before it; retrieve only reads and draft's LLM
call may be repeated (the draft row is written in the checkpoint itself), so they
share index's transaction, with the entry's finish.

Parse reads the raw mail (``needs_raw``): the runner reads it with the mail, in the
run's one read statement, and hands it to that step only. Classify's read of the
examples' state and index's of the mail's sent replies (``read_ahead``) are made in
the same read transaction.
"""

from __future__ import annotations

from ..core.states import Step
from .contract import StepSpec


def default_pipeline() -> list[StepSpec]:
    from . import classify, draft, index, parse, retrieve

    return [
        StepSpec(Step.PARSE, parse.run, needs_raw=True),
        StepSpec(Step.CLASSIFY, classify.run, commit_before=False,
                 read_ahead=classify.examples_state),
        StepSpec(Step.INDEX, index.run, needs_vectors=True,
                 read_ahead=index.replies_read_ahead),
        StepSpec(Step.RETRIEVE, retrieve.run, needs_vectors=True, commit_before=False),
        StepSpec(Step.DRAFT, draft.run, commit_before=False),
    ]
