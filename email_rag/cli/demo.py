"""``email-rag demo``: the main job end to end with the local defaults.

Today: migrate the schema and report the status of every dependency. Later
stages of the pipeline extend this command.
"""

from __future__ import annotations

from . import migrate, status
from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("demo", parents=[common], help="run the main job end to end locally")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    migrated = migrate.run(args, svc)
    if migrated.exit_code != ExitCode.OK:
        return migrated
    checked = status.run(args, svc)
    return Outcome(checked.exit_code, f"{migrated.message}\n{checked.message}",
                   {"migrate": migrated.data, "status": checked.data}, checked.text)
