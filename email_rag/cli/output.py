"""CLI conventions shared by every command.

Exit codes: 0 ok, 1 error (a usage error too: never argparse's 2), 2 partial
(some items failed, the others succeeded), 3 verification failed. ``--json`` prints one JSON object with a stable shape:
``{"ok": bool, "exit_code": int, "message": str, "data": {...}}``. Human
output says what happened, how far it got, whether the state is safe and
what to do next.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


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

    def render(self, as_json: bool, out: Any = None) -> int:
        out = out or sys.stdout
        if as_json:
            payload = {"ok": self.exit_code == ExitCode.OK, "exit_code": int(self.exit_code),
                       "message": self.message, "data": self.data}
            out.write(json.dumps(payload, default=str, indent=2) + "\n")
        else:
            if self.text:
                out.write(self.text.rstrip("\n") + "\n")
            if self.message:
                out.write(self.message.rstrip("\n") + "\n")
        return int(self.exit_code)


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


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return "(none)"
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)
