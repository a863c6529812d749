"""``email-rag bench NAME``: the benchmarks (``bench/``), the same code as ``python -m bench``.

They run on demand against the local services (MariaDB, Redis, a private
Dovecot, the scripted LLM, the local SMTP relay) in a throw-away database and
Redis db of their own; the configured database is not touched.
"""

from __future__ import annotations


def register(sub, common) -> None:
    from bench.__main__ import add_arguments

    p = sub.add_parser("bench", parents=[common],
                       help="run a benchmark: the project next to a bare script, as ratios")
    add_arguments(p)
    p.set_defaults(handler=run)


def run(args, svc):
    from bench.__main__ import execute

    return execute(args)
