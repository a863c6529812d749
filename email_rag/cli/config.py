"""``email-rag config show [--json]``: every effective setting, where it came from (env,
.env, file, default) and its value, secrets masked (docs/settings.md).

Reads the settings only: no database, queue or mail server is contacted.
"""

from __future__ import annotations

import json

from ..core.config_file import config_file, effective, origins
from .output import ExitCode, Outcome, table


def register(sub, common) -> None:
    p = sub.add_parser("config", parents=[common], help="the settings in force")
    action = p.add_subparsers(dest="action", metavar="ACTION")
    action.required = True
    show = action.add_parser("show", parents=[common], help="every effective setting, where "
                             "it came from (env, .env, file, default), secrets masked")
    show.set_defaults(handler=run_show)


def run_show(args, svc) -> Outcome:
    settings = svc.settings
    entries = effective(settings, origins(type(settings)))
    path = config_file()
    counts = {source: sum(1 for e in entries if e.source == source)
              for source in ("env", ".env", "file", "default")}
    rows = [{"setting": e.variable, "source": e.source,
             "value": e.value if isinstance(e.value, str) else json.dumps(e.value)}
            for e in entries]
    message = (f"{len(entries)} settings: {counts['env']} from the environment, "
               f"{counts['.env']} from .env, {counts['file']} from "
               f"{path if path else 'no settings file'}, {counts['default']} defaults. "
               "Precedence: environment > .env > settings file > default; secrets masked.")
    return Outcome(ExitCode.OK, message, {
        "file": str(path) if path else None,
        "precedence": ["env", ".env", "file", "default"],
        "settings": [e.as_dict() for e in entries]},
        table(rows, ["setting", "source", "value"], fit=("value",)))
