"""What a job handler returns to the job runner.

``None``: the job runner finishes the entry; ``FINISHED``: the handler did, in its
own last transaction; a ``Handoff``: the entry moves to another queue (the
vector queue, or back to the default one).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Handoff:
    queue: str
    reason: str
    recorded: bool = False  # the entry's move to ``queue`` is committed already (in the
    # last checkpoint's transaction): the job runner only enqueues it in Redis


class Finished:
    """The handler finished the entry itself, in its last checkpoint's transaction."""


FINISHED = Finished()
