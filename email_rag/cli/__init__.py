"""The ``email-rag`` command line.

Each command lives in its own module with ``register(subparsers, common)``;
its handler takes ``(args, services)`` and returns an ``Outcome``. A command of
``PROGRAMS`` is a program of its own (``python -m MODULE``) that the product does not
import: ``email-rag NAME ARGS`` runs it with the same arguments and exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from ..core.errors import EmailRagError
from ..core.redact import redact_text
from .output import ExitCode, Outcome, Parser, UsageError, common_parser

if TYPE_CHECKING:
    from ..wiring.services import Services

COMMAND_MODULES = [
    "email_rag.cli.migrate",
    "email_rag.cli.status",
    "email_rag.cli.demo",
    "email_rag.cli.worker",
    "email_rag.cli.scheduler",
    "email_rag.cli.jobs",
    "email_rag.cli.drafts",
    "email_rag.cli.mails",
    "email_rag.cli.sends",
    "email_rag.cli.index",
    "email_rag.cli.users",
    "email_rag.cli.web",
    "email_rag.cli.poll",
    "email_rag.cli.idle",
    "email_rag.cli.mailboxes",
    "email_rag.cli.sample_mailbox",
    "email_rag.cli.bench",
]

# name -> (module run as ``python -m``, help): the chaos harness is not part of the product
PROGRAMS = {
    "chaos": ("email_rag.chaos", "drive the real pipeline under a seeded fault plan; print the "
                                 "defect table (email-rag chaos --help for its options)"),
}


def build_parser() -> argparse.ArgumentParser:
    common = common_parser()
    parser = Parser(
        prog="email-rag", parents=[common],
        description="Support mailbox processing with a resilience layer.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub, common)
    for name, (_, text) in PROGRAMS.items():
        sub.add_parser(name, help=text, add_help=False)
    return parser


def run_program(module: str, args: list[str], replace: bool) -> int:
    """``python -m module args``: in place of this process when it is the command itself
    (signals and exit code go straight through), else as a child."""
    command = [sys.executable, "-m", module, *args]
    if replace:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, command)
    return subprocess.call(command)


def main(argv: list[str] | None = None, services_class: type[Services] | None = None) -> int:
    """Run one command; ``services_class``: what builds the command's services (default
    ``Services``; a test harness passes its own)."""
    parser = build_parser()
    raw = sys.argv[1:] if argv is None else list(argv)
    if raw and raw[0] in PROGRAMS:
        return run_program(PROGRAMS[raw[0]][0], raw[1:], replace=argv is None)
    try:
        args = parser.parse_args(raw)
    except UsageError as e:
        return Outcome(ExitCode.ERROR, f"Usage error: {e}. Nothing was done.\n{e.usage.strip()}",
                       {"error": "usage", "detail": str(e)}).render("--json" in raw)
    as_json = getattr(args, "json", False)
    from ..core.settings import get_settings

    try:
        settings = get_settings()
    except Exception as e:  # noqa: BLE001 - pydantic ValidationError: broken configuration
        return Outcome(ExitCode.ERROR, f"Configuration is invalid: {redact_text(str(e))}\n"
                       "Nothing was done. Fix the EMAIL_RAG_* variables or .env and run again.",
                       {"error": "config"}).render(as_json)
    logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..wiring.services import Services

    services = (services_class or Services)(settings)
    try:
        outcome = args.handler(args, services)
    except EmailRagError as e:
        outcome = Outcome(
            ExitCode.ERROR,
            f"{type(e).__name__}: {redact_text(str(e))}",
            {"error": type(e).__name__, "detail": redact_text(str(e))},
        )
    except KeyboardInterrupt:
        outcome = Outcome(ExitCode.ERROR, "Interrupted. Committed work is safe; run again to resume.")
    finally:
        services.close()
    return outcome.render(as_json)
