"""``email-rag scheduler``: the APScheduler process with the periodic jobs."""

from __future__ import annotations

from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("scheduler", parents=[common],
                       help="run periodic jobs (poll, re-dispatch, cleanup, reindex)")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    from ..core.timing import check
    from ..runtime.scheduler import run_forever

    check(svc.settings)  # refuse time limits that would kill or reset healthy jobs
    if not svc.settings.qdrant_url:
        from ..adapters.vectors import forbid_local_open

        forbid_local_open()  # the scheduler never opens the local Qdrant folder
    run_forever(svc)
    return Outcome(ExitCode.OK, "Scheduler stopped.")
