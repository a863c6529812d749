"""Keep secrets out of logs, audit entries and error messages."""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEYS = re.compile(r"pass(word)?|secret|token|api[_-]?key|authorization|cookie", re.I)
_URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s:]+(:[^/@\s]*)?@", re.I)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I)
MASK = "***"


def redact_text(text: str) -> str:
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    return _BEARER.sub(lambda m: f"{m.group(1)}{MASK}", text)


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-looking keys masked and URLs stripped of credentials."""
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and _SECRET_KEYS.search(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
