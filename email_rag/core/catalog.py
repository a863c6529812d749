"""Texts marked for the web UI's translation catalog.

A module below the web layer that words something staff read (an outcome, a rule, a
queue label) marks the text with ``N_``: it stays English where it is stored or logged,
and the web UI translates it when it shows it (``email_rag/web/babel.cfg`` lists the
modules whose marked texts are extracted)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache


def N_(message: str) -> str:  # noqa: N802 - the gettext convention for a marked text
    return message


# A stored English text read back as its wording and values, so the web UI can show it in
# the reader's language (a reply rule, a draft's check findings, a "does not exist"): each
# ``%(name)s`` of a wording matches any text.
_FIELD = re.compile(r"%\((\w+)\)s")


@cache
def _pattern(wording: str) -> re.Pattern[str]:
    pieces = _FIELD.split(wording.replace("%%", "%"))  # text, name, text, name, ..., text
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)"
                              for i, p in enumerate(pieces)), re.S)


Parts = tuple[str, dict[str, str]]  # a wording and its values: ``wording % values``


def read_back(text: str, wordings: Iterable[str]) -> Parts | None:
    """``text`` as the first of ``wordings`` it was made from (``wording % values ==
    text``); None when it has none of them (a text of an older version, or another's)."""
    for wording in wordings:
        m = _pattern(wording).fullmatch(text or "")
        if m:
            return wording, m.groupdict()
    return None


def read_back_list(text: str, wordings: Sequence[str], sep: str = "; ") -> list[Parts] | None:
    """``text`` as several texts of ``wordings`` joined by ``sep`` (a value may hold ``sep``
    itself: the shortest reading that accounts for all of the text wins); None when some
    piece has no wording."""
    if not text:
        return []
    ends = [i for i in range(len(text)) if text.startswith(sep, i)] + [len(text)]
    for end in ends:
        first = read_back(text[:end], wordings)
        if first is None:
            continue
        rest = read_back_list(text[end + len(sep):], wordings, sep) if end < len(text) else []
        if rest is not None:
            return [first, *rest]
    return None
