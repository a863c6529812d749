"""``email-rag bench NAME``: the benchmarks (``bench/``), the same code as ``python -m bench``.

They run on demand against the local services (MariaDB, Redis, a private
Dovecot, the scripted LLM, the local SMTP relay) in a throw-away database and
Redis db of their own; the configured database is not touched. The benchmarks
are not part of the installed package: the command runs them from a source
checkout and says so where ``bench`` cannot be imported.
"""

from __future__ import annotations

import argparse

from .output import ExitCode, Outcome


def register(sub, common) -> None:
    help_text = "run a benchmark: the project next to a bare script, as ratios"
    try:
        from bench.__main__ import add_arguments
    except ModuleNotFoundError as e:
        if e.name != "bench":
            raise
        p = sub.add_parser("bench", parents=[common], help=help_text + " (source checkout only)")
        p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(handler=not_installed)
        return
    p = sub.add_parser("bench", parents=[common], help=help_text)
    add_arguments(p)
    p.set_defaults(handler=run)


def run(args, svc):
    from bench.__main__ import execute

    return execute(args)


def not_installed(args, svc) -> Outcome:
    return Outcome(ExitCode.ERROR,
                   "The benchmarks (bench/) are not part of the installed package. Nothing was "
                   "done. Run them from a source checkout: python -m bench NAME "
                   "(or email-rag bench NAME with the checkout on PYTHONPATH).",
                   {"error": "bench_not_installed"})
