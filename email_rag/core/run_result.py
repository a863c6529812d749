"""The result of a command that works on more than one item (seed 004, issue 43).

One typed record, ``RunResult``, for every long command (poll, reindex, failed retry,
privacy export/forget/retention, history import, worker --burst): a caller reads
``status`` and the counts instead of parsing text, and an admin reads the same record
in words (``text()``): the end state in capitals, "117 / 184 items completed", what
happened, whether the state is safe, what to run next.

End states (``EndState``; docs/states.md defines each by its exact condition):

| status | condition | exit code |
|---|---|---|
| ``completed`` | failed 0, remaining 0, verification passed (or the command has none) | 0 |
| ``nothing_to_do`` | no item needed work (attempted 0, remaining 0; skipped ones may exist) | 0 |
| ``completed_with_failures`` | every item was tried, some failed (failed > 0, remaining 0) | 2 |
| ``partial`` | items remain (remaining > 0) because a dependency failed midway; run again | 2 |
| ``interrupted`` | stopped by a signal or a lost service midway; checkpoint kept, resume available | 2 |
| ``verification_failed`` | the work reported done, but the re-count afterwards disagrees | 3 |
| ``failed`` | nothing could be done (a dependency down, the request refused) | 1 |

Exit code 1 is also every usage error (cli/output.py). "ResumeAvailable" of the seed is
not a state of its own: it is ``resume_available`` (``resumeAvailable`` in JSON), true
with partial and interrupted, and ``next`` says the command that continues.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class EndState(StrEnum):
    COMPLETED = "completed"  # failed 0, remaining 0, verified (or no verification)
    NOTHING_TO_DO = "nothing_to_do"  # no item needed work
    COMPLETED_WITH_FAILURES = "completed_with_failures"  # all tried, failed > 0, remaining 0
    PARTIAL = "partial"  # remaining > 0 after a dependency failed midway; run again
    INTERRUPTED = "interrupted"  # stopped by a signal / lost service; checkpoint kept
    VERIFICATION_FAILED = "verification_failed"  # the re-count disagrees with the work
    FAILED = "failed"  # nothing could be done


# the one exit-code table (cli/output.py ExitCode has the same numbers)
EXIT_CODES: dict[EndState, int] = {
    EndState.COMPLETED: 0,
    EndState.NOTHING_TO_DO: 0,
    EndState.COMPLETED_WITH_FAILURES: 2,
    EndState.PARTIAL: 2,
    EndState.INTERRUPTED: 2,
    EndState.VERIFICATION_FAILED: 3,
    EndState.FAILED: 1,
}
RESUMABLE = frozenset({EndState.PARTIAL, EndState.INTERRUPTED})


@dataclass(frozen=True)
class RunResult:
    """What a long command did, in counts of items (mails, entries, stores ...).

    ``processed``: done and confirmed; ``failed``: tried and failed (a retry is the
    caller's decision); ``skipped``: deliberately not touched (``skipped_why`` says why);
    ``remaining``: not reached, still to do; ``attempted`` = processed + failed.
    ``verified``: the re-count after the work agreed (True), disagreed (False), or the
    command has no verification (None). ``resumed_from``: items done by an earlier,
    unfinished run of the same command (from the checkpoint table), when this run
    continued it. ``what``: what happened, one or two sentences without mail content;
    ``safe``: whether the state is safe; ``next``: the command to run next, if any.
    """

    status: EndState
    processed: int = 0
    failed: int = 0
    skipped: int = 0
    remaining: int = 0
    verified: bool | None = None
    next: str | None = None
    what: str = ""
    safe: str = ""
    skipped_why: str = ""
    item: str = "item"  # what an item is, for the human line: mail, entry, store
    resumed_from: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.status, EndState):
            raise ValueError(f"status must be an EndState, not {self.status!r}")
        for name in ("processed", "failed", "skipped", "remaining"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")

    @classmethod
    def decide(cls, processed: int = 0, failed: int = 0, remaining: int = 0,
               verified: bool | None = None, interrupted: bool = False,
               **rest: Any) -> RunResult:
        """The end state that the counts say, by the table above (first match wins:
        interrupted, verification failed, partial, failed, with failures, nothing, done)."""
        if interrupted:
            status = EndState.INTERRUPTED
        elif verified is False:
            status = EndState.VERIFICATION_FAILED
        elif remaining and (processed or failed):
            status = EndState.PARTIAL
        elif remaining:
            status = EndState.FAILED
        elif failed:
            status = EndState.COMPLETED_WITH_FAILURES
        elif not processed:
            status = EndState.NOTHING_TO_DO
        else:
            status = EndState.COMPLETED
        return cls(status=status, processed=processed, failed=failed, remaining=remaining,
                   verified=verified, **rest)

    @property
    def attempted(self) -> int:
        return self.processed + self.failed

    @property
    def total(self) -> int:
        return self.processed + self.failed + self.skipped + self.remaining

    @property
    def resume_available(self) -> bool:
        return self.status in RESUMABLE

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def as_json(self) -> dict[str, Any]:
        """The machine keys (camelCase like the seed's example) added to ``--json``."""
        return {"status": self.status.value, "attempted": self.attempted,
                "processed": self.processed, "failed": self.failed, "skipped": self.skipped,
                "remaining": self.remaining, "verified": self.verified,
                "resumeAvailable": self.resume_available, "next": self.next,
                "resumedFrom": self.resumed_from}

    def text(self) -> str:
        """The record in words: end state in capitals, progress, what, safety, next."""
        head = self.status.value.replace("_", " ").upper()
        lines = [head]
        if self.resumed_from:
            lines.append(f"Resuming: {self.resumed_from} {self.item}(s) were done earlier by "
                         "an unfinished run of this command.")
        counts = f"{self.processed} / {self.total} {self.item}(s) completed"
        extra = [f"{n} {w}" for n, w in ((self.failed, "failed"), (self.skipped, "skipped"),
                                         (self.remaining, "remaining")) if n]
        lines.append(counts + (f" ({', '.join(extra)})" if extra else "") + ".")
        if self.skipped and self.skipped_why:
            lines.append(f"Skipped: {self.skipped_why}")
        if self.verified is not None:
            lines.append("Verified: the re-count agrees." if self.verified
                         else "Verification failed: the re-count disagrees.")
        lines += [s for s in (self.what, self.safe) if s]
        if self.resume_available:
            lines.append("The operation can be resumed.")
        if self.next:
            lines.append(f"Next: {self.next}")
        return "\n".join(lines)
