"""Keep secrets out of logs, audit entries and error messages."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_SECRET_KEYS = re.compile(r"pass(word)?|secret|token|api[_-]?key|authorization|cookie", re.I)
_URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s:]*(:[^/@\s]*)?@", re.I)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._~+/=-]+", re.I)
MASK = "***"


def redact_text(text: str) -> str:
    if "@" in text:  # credentials in a URL: scheme://user[:password]@host
        text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    return _BEARER.sub(lambda m: f"{m.group(1)}{MASK}", text)


@lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:  # keys come from the code's fixed vocabulary
    return _SECRET_KEYS.search(key) is not None


_AS_IS = frozenset({int, float, bool})  # nothing to redact in them (redact returns them)


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-looking keys masked and URLs stripped of credentials."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and _secret_key(k)
                else v if v is None or type(v) in _AS_IS else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


# --- erasure: what of an erased mail's audit detail stays readable ----------------------

ERASED = "[erased]"
# Keys whose values the code writes from fixed vocabularies (step and job names, states,
# store names, categories, model and prompt versions, mailbox names): never the person's.
# Every other text in the detail of an erased mail's event may quote the mail (a reason, an
# error, a file name, a Message-ID) and is replaced by ERASED; numbers, booleans and nulls
# (ids, counts, sizes, attempts) stay.
KEPT_DETAIL_KEYS = frozenset({
    "step", "kind", "queue", "worker", "task", "source", "sources", "purpose", "via", "how",
    "matched_by", "store", "stores", "missing", "state", "status", "dedup", "category",
    "priority", "language", "needs_reply", "defaulted", "prompt_version", "model", "mailbox",
    "folder", "next", "resume", "scope", "cause", "outcome", "verified_by", "retry_in_s",
    "runtime",
})


_STAFF = re.compile(r"user:[^\s@]{1,64}")


def erase_personal(value: Any, key: str | None = None) -> Any:
    """A copy of an audit detail with every text that may be personal replaced by
    ``ERASED``: kept are the values under ``KEPT_DETAIL_KEYS``, staff names
    (``user:NAME``), numbers, booleans and nulls. Idempotent."""
    if key in KEPT_DETAIL_KEYS:
        return value
    if isinstance(value, dict):
        return {k: erase_personal(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [erase_personal(v, key) for v in value]
    if isinstance(value, str):
        return value if _STAFF.fullmatch(value) or value == ERASED else ERASED
    return value
