"""CLI conventions shared by every command.

Exit codes: 0 ok, 1 error (a usage error too: never argparse's 2), 2 partial
(some items failed, the others succeeded), 3 verification failed. ``--json`` prints one JSON object with a stable shape:
``{"ok": bool, "exit_code": int, "message": str, "data": {...}}``. Human
output says what happened, how far it got, whether the state is safe and
what to do next.

A command that works on more than one item returns ``Outcome.of(RunResult)``
(core/run_result.py): its exit code is the end state's, ``--json`` adds the record's
keys (status, attempted, processed, failed, skipped, remaining, verified,
resumeAvailable, next, resumedFrom) beside the four above, and the human output
prints the record after the detail.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from ..core.run_result import RunResult


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    PARTIAL = 2
    VERIFY_FAILED = 3


@dataclass
class Outcome:
    exit_code: ExitCode = ExitCode.OK
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # human detail printed after the message (tables, listings)
    result: RunResult | None = None  # the run's record (long commands): decides exit_code

    @classmethod
    def of(cls, result: RunResult, message: str = "", data: dict[str, Any] | None = None,
           text: str = "") -> Outcome:
        """The outcome of a long command: exit code by the record's end state."""
        return cls(ExitCode(result.exit_code), message, data or {}, text, result)

    def render(self, as_json: bool, out: Any = None) -> int:
        out = out or sys.stdout
        if as_json:
            payload = {"ok": self.exit_code == ExitCode.OK, "exit_code": int(self.exit_code),
                       "message": self.message, "data": self.data,
                       **(self.result.as_json() if self.result else {})}
            out.write(json.dumps(payload, default=str, indent=2) + "\n")
        else:
            if self.text:
                out.write(self.text.rstrip("\n") + "\n")
            if self.result is not None:
                out.write(self.result.text() + "\n")
            if self.message:
                out.write(self.message.rstrip("\n") + "\n")
        return int(self.exit_code)


def stop_on_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM / SIGINT set ``stop`` (a long command finishes the item in hand and reports
    ``interrupted``); a second SIGINT raises KeyboardInterrupt. Returns the function that
    puts the previous handlers back (a no-op outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, frame):  # noqa: ARG001
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for s, h in previous.items():
            signal.signal(s, h)
    return restore


class UsageError(Exception):
    """The command line could not be parsed (unknown command, missing or bad argument)."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is exit code 1 like every other error (argparse
    exits 2, which here means "some items failed") and is printed as the ``--json`` object
    when ``--json`` was given: ``main`` catches ``UsageError``. Subcommand parsers are of
    this class too (argparse creates them with the parent's class)."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message, self.format_usage())


def common_parser() -> argparse.ArgumentParser:
    """Flags every command accepts (placed after the command name)."""
    p = Parser(add_help=False)
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="machine-readable output with a stable shape")
    return p


MIN_FIT_WIDTH = 12  # a column cut to fit the terminal keeps at least this many characters


def table(rows: list[dict[str, Any]], columns: list[str], fit: tuple[str, ...] = (),
          width: int | None = None) -> str:
    """Rows as aligned text columns. ``fit``: columns that are cut (ending in "…") when a
    line would be wider than ``width`` (default: the terminal's, ``COLUMNS`` or 80 when
    not a terminal), the last named first, each to no less than ``MIN_FIT_WIDTH`` (or its
    header): a terminal too narrow even then gets lines a little wider; lines carry no
    trailing blanks and a cut column's cells no line breaks."""
    if not rows:
        return "(none)"
    cells = [[" ".join(("" if r.get(c) is None else str(r.get(c))).split()) if c in fit
              else ("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    if fit:
        width = width or shutil.get_terminal_size().columns
        for name in reversed(fit):
            if name not in columns:
                continue
            i = columns.index(name)
            over = sum(widths) + 2 * (len(columns) - 1) - width
            if over <= 0:
                break
            widths[i] = max(len(name), MIN_FIT_WIDTH, widths[i] - over)
            cells = [[_cut(v, widths[i]) if j == i else v for j, v in enumerate(row)]
                     for row in cells]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)


def _cut(value: str, width: int) -> str:
    return value if len(value) <= width else value[:width - 1] + "…"
