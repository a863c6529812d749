"""The checkpoint of long commands: ``run_results`` (migration 0450).

A long command (``failed retry --all``, ``reindex`` ...) calls ``RunLog.begin`` before its
first item, ``progress`` after each confirmed item and ``finish`` with its ``RunResult``.
Each status change is one conditional statement plus its audit event in one transaction;
a command whose items commit in transactions of their own hands ``progress`` that
transaction, so the count commits with the item (reindex).
A run killed midway keeps status ``running`` with the counts of its last confirmed item;
the next run of the same command and scope continues it: the old row becomes
``interrupted`` (``continued_by`` the new one) and the new run reports how many items
were done earlier (``resumed_from``). The items themselves are found again by each
command from the business state (dead entries, partially_indexed mails): the checkpoint
counts, it does not decide what is done, so nothing is done twice and nothing skipped.

Failure table (situation | retry? | state known? | resume?):
  the command is killed (SIGKILL) after an item | no | yes: counts up to the last
      confirmed item; the item itself is committed by its own store | the next run
      continues and says "resuming: N done earlier"
  killed while an item was in hand (``current_item`` set) | no | not from the counts:
      the item may or may not have committed | the next run asks the command's
      ``settled(item)`` (the business state: is the entry still dead?) and counts it as
      done earlier when it was; otherwise it is found and done again (idempotent), or,
      where the next run cannot take it (a burst worker: the entry stays processing for
      the stuck-job reset), ``Run.in_hand`` names it and the run counts it remaining
  two runs of one command and scope start at once | - | yes: the open row is locked, one
      continues it, the other starts fresh | both finish their own items
  MariaDB down at begin/progress/finish | the caller's | begin: nothing started;
      progress/finish: the row keeps the last counts | the next run continues
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..core.rows import FromRow
from ..core.run_result import RESUMABLE, EndState, RunResult
from .audit import AuditEvent, write_events
from .connection import Cursor, Database
from .queries import sql

RUNNING = "running"


@dataclass(frozen=True)
class RunRow(FromRow):
    """One run of a long command as stored."""

    id: int
    command: str
    scope: str
    status: str
    processed: int = 0
    failed: int = 0
    skipped: int = 0
    remaining: int = 0
    resumed_from: int = 0
    continued_by: int | None = None
    current_item: str | None = None
    cursor_key: str | None = None
    started_at: datetime | None = None  # read by ``latest`` only

    def result(self, item: str = "item", next: str | None = None) -> RunResult | None:
        """The record of a finished run as stored (None while it runs); the words and
        ``verified`` are the finishing process's, not stored."""
        if self.status == RUNNING:
            return None
        return RunResult(EndState(self.status), processed=self.processed, failed=self.failed,
                         skipped=self.skipped, remaining=self.remaining, item=item,
                         resumed_from=self.resumed_from or None,
                         next=next if self.status in RESUMABLE else None)


@dataclass(frozen=True)
class Run:
    """A started run: its row id and what earlier unfinished runs had done."""

    id: int
    command: str
    scope: str
    resumed_from: int  # items done by the earlier unfinished runs it continues (0: fresh)
    continued: int | None  # the row id of the run it continues
    cursor: str | None = None  # the last confirmed item of an ordered walk: start after it
    in_hand: str | None = None  # the item a killed run had in hand and did not settle


class RunLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    def begin(self, command: str, scope: str, actor: str, remaining: int = 0,
              settled: Callable[[str], bool] | None = None) -> Run:
        """Start a run; continue the latest unfinished run of ``command`` over ``scope``.
        ``settled(item)``: whether an item a killed run had in hand was done (asked of the
        business state); without it such an item is not counted as done earlier."""
        key = {"command": command, "scope": scope}
        peek = self.db.fetchone(sql("run_results_open"), key)  # settled() reads outside
        item = peek["current_item"] if peek else None
        settled_item = item if item and settled is not None and settled(str(item)) else None
        with self.db.transaction() as cur:
            row = cur.fetchone(sql("run_results_open"), key)
            earlier = RunRow.from_row(row) if row else None
            done_before = earlier.resumed_from + earlier.processed if earlier else 0
            if earlier and settled_item and earlier.current_item == settled_item:
                done_before += 1
            cursor = earlier.cursor_key if earlier else None
            in_hand = (earlier.current_item if earlier and earlier.current_item
                       and earlier.current_item != settled_item else None)
            cur.execute(sql("run_results_insert"), {
                "command": command, "scope": scope, "remaining": remaining,
                "resumed_from": done_before, "cursor": cursor, "actor": actor})
            run_id = cur.lastrowid
            events = [AuditEvent(actor, "run", run_id, "run_started", None, RUNNING,
                                 detail={"command": command, "scope": scope})]
            if earlier is not None:
                cur.execute(sql("run_results_continue"), {"id": earlier.id,
                                                          "continued_by": run_id})
                events.append(AuditEvent(actor, "run", earlier.id, "run_continued",
                                         earlier.status, "interrupted"
                                         if earlier.status == RUNNING else earlier.status,
                                         detail={"continued_by": run_id,
                                                 "done_before": done_before}))
            write_events(cur, events)
        return Run(run_id, command, scope, done_before, earlier.id if earlier else None, cursor,
                   in_hand)

    def item(self, run: Run, item: str) -> None:
        """The item in hand, before it is tried (a kill now leaves it named)."""
        self.db.execute(sql("run_results_item"), {"id": run.id, "item": item})

    def progress(self, run: Run, processed: int, failed: int = 0, skipped: int = 0,
                 remaining: int = 0, cursor: str | None = None, cur: Cursor | None = None
                 ) -> None:
        """The counts after a confirmed item (no audit event: the item's own store
        audits the item); ``cursor``: that item, for a command that walks in order;
        ``cur``: the item's own transaction, so the checkpoint commits with the item."""
        params = {"id": run.id, "processed": processed, "failed": failed,
                  "skipped": skipped, "remaining": remaining, "cursor": cursor}
        if cur is not None:
            cur.execute(sql("run_results_progress"), params)
        else:
            self.db.execute(sql("run_results_progress"), params)

    def finish(self, run: Run, result: RunResult, actor: str) -> None:
        with self.db.transaction() as cur:
            cur.execute(sql("run_results_finish"), {
                "id": run.id, "status": result.status.value, "processed": result.processed,
                "failed": result.failed, "skipped": result.skipped,
                "remaining": result.remaining})
            write_events(cur, [AuditEvent(actor, "run", run.id, "run_finished", RUNNING,
                                          result.status.value,
                                          detail={"command": run.command,
                                                  "processed": result.processed,
                                                  "failed": result.failed,
                                                  "skipped": result.skipped,
                                                  "remaining": result.remaining})])

    def latest(self, command: str, scope: str) -> RunRow | None:
        """The newest run of ``command`` over ``scope`` that no later run continued."""
        row = self.db.fetchone(sql("run_results_latest"), {"command": command, "scope": scope})
        return RunRow.from_row(row) if row else None

    def get(self, run_id: int) -> RunRow | None:
        row = self.db.fetchone(sql("run_results_get"), {"id": run_id})
        return RunRow.from_row(row) if row else None
