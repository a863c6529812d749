"""Who acted, written one way in every audit event.

| who | actor |
|---|---|
| a person: logged in on the web, ``--by NAME`` on the command line, a no-reply decision | ``user:NAME`` |
| a command-line call without ``--by`` | ``cli:LOGIN`` (the operating-system login) |
| a worker running queue entries | ``worker:jobs`` (``Actor.WORKER``) |
| the pipeline acting on its own | ``system:poller``, ``system:scheduler``, ``system:internal`` (``Actor``) |

An audit search by a bare name matches every kind (``anna``: ``user:anna``, ``cli:anna``;
``poller``: ``system:poller``) and rows written with the bare name before this rule
(web.sql ``web_audit_search``).
"""

from __future__ import annotations

import getpass
from typing import Any

from .errors import BadInputError


def person(name: str) -> str:
    """A person's actor: ``user:NAME`` (an actor given already, ``user:``/``cli:``..., as is)."""
    name = " ".join((name or "").split())[:100]
    if not name:
        raise BadInputError("say who acts (--by NAME): the action is audited")
    return name if ":" in name else f"user:{name}"


def command_line(by: str | None) -> str:
    """Who acts from the command line: ``--by NAME`` is that person, as on the web;
    without it, the login (``cli:LOGIN``)."""
    return person(by) if by else f"cli:{getpass.getuser()}"


def shown(actor: Any, default: str = "") -> str:
    """An actor as a person reads it: ``user:anna`` -> ``anna``."""
    text = str(actor or default)
    return text.split(":", 1)[1] if text.startswith("user:") else text
