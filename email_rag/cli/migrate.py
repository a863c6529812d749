"""``email-rag migrate``: create the database if needed and apply pending migrations."""

from __future__ import annotations

from ..db.migrate import ensure_database, migrate
from ..db.schema import verify
from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("migrate", parents=[common], help="apply pending SQL migrations")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    ensure_database(svc.db, svc.settings.db_name)
    result = migrate(svc.db)
    data = {"applied": result.applied, "already_applied": result.already,
            "current_version": result.current, "database": svc.settings.db_name}
    problems = verify(svc.db)
    data["schema_problems"] = problems
    if problems:
        return Outcome(ExitCode.VERIFY_FAILED,
                       "Migrations ran but the schema is not what the code expects: "
                       + "; ".join(problems) + ". Do not start workers; check email_rag/db/migrations/.", data)
    if result.applied:
        msg = (f"Applied {len(result.applied)} migration(s) {result.applied} to "
               f"{svc.settings.db_name}; schema is at version {result.current}.")
    else:
        msg = f"Schema of {svc.settings.db_name} is up to date (version {result.current})."
    return Outcome(ExitCode.OK, msg, data)
