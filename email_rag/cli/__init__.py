"""The ``email-rag`` command line.

Each command lives in its own module with ``register(subparsers, common)``;
its handler takes ``(args, services)`` and returns an ``Outcome``. A command of
``PROGRAMS`` is a program of its own (``python -m MODULE``) that the product does not
import: ``email-rag NAME ARGS`` runs it with the same arguments and exit code.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
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
    "email_rag.cli.privacy",
    "email_rag.cli.setup",
    "email_rag.cli.config",
    "email_rag.cli.llm",
    "email_rag.cli.knowledge",
]

# name -> (module run as ``python -m``, help): programs of the test harness, a distribution of
# its own (harness/pyproject.toml, package email_rag_harness) that the product never imports
PROGRAMS = {
    "chaos": ("email_rag_harness.chaos", "drive the real pipeline under a seeded fault plan; print "
                                         "the defect table (email-rag chaos --help)"),
    "demo": ("email_rag_harness.demo", "run the whole pipeline on sample mail (email-rag demo "
                                       "--help)"),
    "bench": ("email_rag_harness.bench", "run a benchmark: the project next to a bare script, as "
                                         "ratios (email-rag bench --help)"),
    "sample-mailbox": ("email_rag_harness.sample_mailbox", "start a private IMAP server with "
                       "sample mails, for trying poll (email-rag sample-mailbox --help)"),
}
# client libraries whose DEBUG output traces the protocol: whole mails, prompts, tokens
PROTOCOL_TRACERS = ("imapclient", "openai", "httpcore", "httpx", "urllib3", "arango")
HARNESS = "harness"  # the folder of the harness's distribution in a source checkout
# the processes that write the send journal, the OAuth journal or the audit spool: they
# refuse to start when those are not on the persistent volume (runtime/persistence.py)
JOURNAL_WRITERS = frozenset({"worker", "scheduler", "idle", "poll"})


def build_parser(commands: list[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    common = common_parser()
    parser = Parser(
        prog="email-rag", parents=[common],
        description="Support mailbox processing with a resilience layer.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in commands:
        importlib.import_module(name).register(sub, common)
    if commands is COMMAND_MODULES:
        for name, (_, text) in PROGRAMS.items():
            sub.add_parser(name, help=f"{text} [test harness]", add_help=False)
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


def program_installed(module: str) -> bool:
    """Whether ``module``'s distribution is installed (looked up, not imported)."""
    return importlib.util.find_spec(module.partition(".")[0]) is not None


def main(argv: list[str] | None = None, services_class: type[Services] | None = None,
         commands: list[str] = COMMAND_MODULES) -> int:
    """Run one command; ``services_class``: what builds the command's services (default
    ``Services``; a test harness passes its own); ``commands``: the modules whose commands
    this parser knows (a harness program passes its own; PROGRAMS are then not handed over)."""
    raw = sys.argv[1:] if argv is None else list(argv)
    lead = 0  # the flag every command takes (--json) may come before the command's name
    while lead < len(raw) and raw[lead] == "--json":
        lead += 1
    if lead < len(raw) and raw[lead] in PROGRAMS and commands is COMMAND_MODULES:
        name, module = raw[lead], PROGRAMS[raw[lead]][0]
        if not program_installed(module):
            return Outcome(ExitCode.ERROR, f"email-rag {name} is part of the test harness, "
                           "which is not installed. Nothing was done. Install the harness from "
                           f"the source checkout: pip install ./{HARNESS} (scripts/bootstrap.sh "
                           "does it).", {"error": "harness_not_installed", "command": name,
                                         "module": module}).render("--json" in raw)
        return run_program(module, raw[lead + 1:] + raw[:lead], replace=argv is None)
    parser = build_parser(commands)
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
                       "Nothing was done. Fix the EMAIL_RAG_* variables, .env or the settings "
                       "file (EMAIL_RAG_CONFIG_FILE, email-rag.toml) and run again.",
                       {"error": "config"}).render(as_json)
    logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # never below INFO, whatever the product's level
    for name in PROTOCOL_TRACERS:
        logging.getLogger(name).setLevel(max(logging.INFO, logging.getLogger().level))
    from ..wiring.services import Services

    services = (services_class or Services)(settings)
    try:
        if args.command in JOURNAL_WRITERS:
            from ..runtime.persistence import check

            check(settings)  # the journals on the image's volume, or no start
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
