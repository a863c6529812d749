"""Placeholders of the team's texts (saved replies, a knowledge article a draft carries) and
the values that fill them from a mail.

| placeholder | filled from | when there is no value |
|---|---|---|
| ``{customer_name}`` | the sender's display name (bidi and control characters removed; not an address) | stays ``{customer_name}`` |
| ``{order_number}`` | a number the customer labels as an order in the subject or text ("Bestellung 4711", "order #55210", "Bestellnummer: AB-12345"), when exactly one is found | stays ``{order_number}`` |
| ``{agent_name}`` | the user's name | stays ``{agent_name}`` |

A placeholder without a value is never replaced by nothing; filling is one pass (a value
that looks like a placeholder is not expanded). Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
PLACEHOLDERS = ("customer_name", "order_number", "agent_name")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")

# an order number as the customer labels it: a label word, an optional "no."/"#"/":", and
# a token with at least three digits
_ORDER = re.compile(
    r"(?<![\w-])(?:order|bestellung|bestellnummer|bestell-?nr\.?|auftrag|auftragsnummer|"
    r"auftrags-?nr\.?|commande|pedido|ordine|bestelling)"
    r"(?:\s*(?:no\.?|nr\.?|number|nummer|n°|num\.?|id))?\s*[:#]?\s*"
    r"(?P<ref>[A-Z0-9](?:[A-Z0-9/-]{0,30}[A-Z0-9])?)(?![\w-])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Rendered:
    """A text with its placeholders filled; ``missing``: those left for the agent."""

    text: str
    missing: tuple[str, ...]


def clean_value(value: str | None, limit: int = 100) -> str | None:
    """A value fit to stand in a reply: no bidi controls, control characters or braces,
    whitespace collapsed; None when nothing is left."""
    if not value:
        return None
    kept = "".join(
        " " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c
        for c in value
        if c not in BIDI_CONTROLS and c not in "{}" and unicodedata.category(c) != "Cf"
    )
    kept = " ".join(kept.split()).strip(" \"'")
    return kept[:limit] or None


def customer_name(from_name: str | None, from_addr: str | None = None) -> str | None:
    """The sender's display name, when it is a name (not an address)."""
    name = clean_value(from_name)
    if name is None or "@" in name or (from_addr and name.lower() == from_addr.lower()):
        return None
    return name


def order_number(*texts: str | None) -> str | None:
    """The one order number the customer labels as such in these texts; None when there
    is none or there are several different ones (an agent must choose)."""
    found: list[str] = []
    for text in texts:
        for m in _ORDER.finditer(text or ""):
            ref = m.group("ref")
            if sum(c.isdigit() for c in ref) >= 3 and ref.upper() not in found:
                found.append(ref.upper())
    return found[0] if len(found) == 1 else None


def render(template: str, values: dict[str, str | None]) -> Rendered:
    """The template with every placeholder that has a value replaced (one pass); the
    others stay as they are, listed in ``missing``."""
    missing: list[str] = []

    def fill(m: re.Match[str]) -> str:
        value = values.get(m.group(1))
        if value:
            return value
        if m.group(1) not in missing:
            missing.append(m.group(1))
        return m.group(0)

    return Rendered(_PLACEHOLDER.sub(fill, template), tuple(missing))


def unfilled(text: str) -> list[str]:
    """The placeholders still in a reply (it must not go out like this)."""
    return sorted({m.group(0) for m in _PLACEHOLDER.finditer(text or "")})


