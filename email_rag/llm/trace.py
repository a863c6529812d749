"""The facts of a line that must survive an adaptation and the line-by-line trace of a draft.

``fact_keys(text)``: the checkable facts of a text, normalised so that a translation that
keeps them keeps the keys: numbers and amounts (``4,90`` == ``4.90``), product and part
codes (letters with digits), e-mail addresses, URLs and phone numbers. A translated line
that lost one of its source line's keys changed a fact (``lost``).

``Traced``: one line of a draft's body and the source it came from (``ref`` "S1", ...;
None: written by the product itself - the greeting, the thanks, the no-source reply).
Pure logic: no I/O, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL = re.compile(r"(?:https?://|www\.)[^\s<>()\"']+", re.IGNORECASE)
PHONE = re.compile(r"(?<![\w+])\+?\d[\d /()-]{6,}\d(?!\w)")
CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")
# two lower-case letters in a row: a word or a unit ("3er-Pack", "200ml"), never a part number
_WORD_PART = re.compile(r"[a-zäöüß]{2}")
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")


def _number(text: str) -> str:
    """4,90 -> 4.90; 1.200 and 1,200 -> 1200 (a thousands separator); 30 -> 30."""
    if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", text):
        return re.sub(r"[.,]", "", text)
    return text.replace(",", ".")


def fact_keys(text: str) -> set[str]:
    """The checkable facts of ``text`` (see the module docstring)."""
    text = text or ""
    keys: set[str] = set()
    rest = text
    for pattern, kind in ((EMAIL, "email"), (URL, "url")):
        for m in pattern.finditer(rest):
            keys.add(f"{kind}:{m.group(0).rstrip('.,;:!?').lower()}")
        rest = pattern.sub(" ", rest)
    for m in PHONE.finditer(rest):
        digits = re.sub(r"\D", "", m.group(0))
        if len(digits) >= 7:
            keys.add(f"phone:{digits}")
            rest = rest.replace(m.group(0), " ")
    for m in CODE.finditer(rest):
        if _WORD_PART.search(m.group(0)):  # "64-mm-Flachmahlscheiben": a word, not a code
            keys.update(f"number:{_number(n)}" for n in re.findall(r"\d+(?:[.,]\d+)*",
                                                                  m.group(0)))
            rest = rest.replace(m.group(0), " ")
            continue
        keys.add(f"code:{m.group(0).upper()}")
        rest = rest.replace(m.group(0), " ")
    for m in NUMBER.finditer(rest):
        keys.add(f"number:{_number(m.group(0))}")
    return keys


def lost(source: str, adapted: str) -> list[str]:
    """The facts of ``source`` missing from ``adapted`` (readable: "4,90", "ES-200")."""
    have = fact_keys(adapted)
    return sorted(k.split(":", 1)[1] for k in fact_keys(source) - have)


@dataclass(frozen=True)
class Traced:
    """A line of the draft's body and where it came from."""

    text: str
    ref: str | None  # "S1" ... (a source given to the draft); None: written by the product

    def as_dict(self) -> dict[str, str | None]:
        return {"text": self.text, "ref": self.ref}
