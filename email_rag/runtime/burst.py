"""``email-rag worker --burst`` as a long command: its run under the checkpoint of
db/run_results.py (command ``worker``, the worker's ``--name`` as scope; items are queue
entries), so a burst worker killed midway is continued by the next burst of that name.

The job runner names the entry in hand before each delivery (``taking``) and writes the
counts after it (``took``); the counts are absolute, so a checkpoint write lost with
MariaDB is caught up by the next one (the runner's own wait for MariaDB decides the job).

Failure table (one burst):

| situation | retry? | state known? | resume? |
|---|---|---|---|
| killed (SIGKILL) between entries | no | yes: the counts up to the last entry | the next burst of the same --name continues ("resuming") |
| killed with an entry in hand | no | the entry: processing (or queued: Redis lost it with the worker) | the next burst counts it remaining; `email-rag cleanup` (processing past stuck_after_seconds) or `email-rag redispatch` (queued) hands it on |
| MariaDB lost at a checkpoint write | no: skipped, logged | the next write has the counts | - |
| the next burst of the name starts before RQ let go of the killed one's name | - | yes | RQ refuses it ("an active worker named ... already") until the killed worker's registration expires (RQ's worker TTL, 420 s); it begins no run |
| no --name (host:pid) | - | yes | never continued: each process is a fresh run |
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING

from ..core.errors import DatabaseUnavailableError
from ..core.run_result import RunResult
from ..core.states import Actor, JobState
from ..db.run_results import Run, RunLog

if TYPE_CHECKING:
    from ..jobs.context import ServiceContext

log = logging.getLogger(__name__)

COMMAND = "worker"
OPEN = (JobState.QUEUED, JobState.PROCESSING)


def counts(results: Counter[str]) -> dict[str, int]:
    """The job runner's outcomes as a run's counts. failed: back in the retry cycle or dead
    (a human decides); skipped: not claimable here, or another worker owns it now."""
    return {"processed": results["done"] + results["handed_off"],
            "failed": results["failed"] + results["dead"],
            "skipped": results["lost"] + results["skipped"]}


class BurstRun:
    """Begun with the first entry (or at the end of an empty burst): after RQ registered
    the worker's name, so a worker RQ refuses never continues the run of a live one."""

    def __init__(self, services: ServiceContext, name: str) -> None:
        self.services = services
        self.name = name
        self.actor = f"{Actor.WORKER}:{name}"
        self.runs = RunLog(services.db)
        self._run: Run | None = None

    @property
    def run(self) -> Run:
        if self._run is None:
            self._run = self.runs.begin(COMMAND, self.name, self.actor, settled=self._settled)
        return self._run

    def _state(self, item: str | None) -> str | None:
        job = self.services.jobs.get(int(item)) if item else None
        return str(job.state) if job else None

    def _settled(self, item: str) -> bool:
        """The entry a killed burst had in hand was finished (by it, or by anyone since)."""
        return self._state(item) not in OPEN

    def taking(self, job_id: int) -> None:
        self._write(self.runs.item, self.run, str(job_id))

    def took(self, results: Counter[str]) -> None:
        self._write(self.runs.progress, self.run, **counts(results))

    def _write(self, write, *args, **kw) -> None:
        try:
            write(*args, **kw)
        except DatabaseUnavailableError as e:
            log.warning("burst checkpoint not written (%s): the next one has the counts",
                        type(e).__name__)

    def finish(self, results: Counter[str]) -> RunResult:
        """The burst's record; the entry a killed earlier burst left in hand, still open,
        is remaining (this burst could not take it: it was not in Redis for it)."""
        left = self._state(self.run.in_hand)
        n = counts(results)
        result = RunResult.decide(
            **n, remaining=int(left in OPEN), item="entry",
            resumed_from=self.run.resumed_from or None,
            skipped_why="not claimable here (done, taken by another worker, or not due).",
            what="The queues were empty: burst finished." + (
                f" Entry {self.run.in_hand} was in hand of the killed earlier run and is "
                f"{left}." if left in OPEN else ""),
            safe="State is safe: every entry's state is in MariaDB.",
            next=("email-rag cleanup" if left == JobState.PROCESSING else "email-rag redispatch"
                  if left == JobState.QUEUED else "email-rag failed list" if results["dead"]
                  else None))
        self.runs.finish(self.run, result, self.actor)
        return result
