"""The queue search's words as one regular expression (PCRE, MariaDB's ``REGEXP``) that
finds the mails the FULLTEXT index ``ft_email_search`` finds for them, row by row.

The index evaluates a word in most mails in 70-120 ms per statement however a statement
uses it (at 100,000 mails); the pattern tests one mail's subject, sender and text in
microseconds, so a broad search walks the sort order and tests only the rows it lists
(review/queue.py, desk.sql). A narrow search still starts from the index's result and
keeps the rows the pattern accepts, so both plans list the same drafts whatever the
pattern misses. What it models of InnoDB's full-text parser and the column's collation
(utf8mb4_unicode_ci), each checked against the real index in
``tests/integration/test_desk_search_words.py``:

| the index | the pattern |
|---|---|
| a token is a run of letters, digits, marks and ``_`` (``it's``, ``a-b``, ``x@y.com``: two or more) | a word starts after none of them |
| every word is a prefix (``+rechnung*``) | the token starts with the word |
| tokens over 84 characters are not indexed (``innodb_ft_max_token_size``) | at most 84 |
| InnoDB's default stopwords are not indexed (``with``, ``the``, ``und``; not ``wïth``) | a token that is one is skipped |
| case and accents do not count (``kundigung`` finds ``Kündigung``, also written ``u`` + U+0308) | a Latin or Greek letter stands for its accented forms, also with combining accents; Cyrillic letters for their other case only (``ѓ`` is not ``г``) |
| ``ß`` is ``ss`` (``strasse`` finds ``Straße``; ``ẞ`` is itself) | ``ss`` and a last ``s`` also match ``ß`` |
| ligatures and other expansions (``ﬁ`` is ``fi``, ``ĳ`` is ``ij``), full-width forms, letters outside the BMP as separators | not modelled: such a mail is found by neither plan |

Only what the pattern is sure the index finds is accepted (a letter it does not know the
collation of matches only itself, case included): the narrow plan's "index result and
pattern" and the broad plan's "pattern" are the same rows.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TOKEN = 84  # innodb_ft_max_token_size (characters)
# InnoDB's default stopword list (INFORMATION_SCHEMA.INNODB_FT_DEFAULT_STOPWORD), the words
# of 3 characters and more (shorter ones are never searched)
STOPWORDS = ("about", "are", "com", "for", "from", "how", "that", "the", "this", "was",
             "what", "when", "where", "who", "will", "with", "und", "www")
WORD_CLASS = r"\p{L}\p{N}\p{M}_"  # what InnoDB's parser reads as part of a token
# letters whose case and accents the collation (UCA 4.0.0) folds as Unicode does: Latin up
# to Latin Extended-B's UCA 4.0 part, Greek, Cyrillic, Latin Extended Additional's part
KNOWN = ((0x0000, 0x0236), (0x0370, 0x03FF), (0x0400, 0x04FF), (0x1E00, 0x1EF9))
CASE_ONLY = frozenset("ẞ")  # in a known range but not the collation's (Unicode 5.1)
# the letters whose accented forms are the letter in the collation: Latin and Greek (a
# Cyrillic letter with a mark, ``ѓ``, is a letter of its own)
ACCENTED = ((0x0000, 0x0236), (0x0370, 0x03FF), (0x1E00, 0x1EF9))
COMBINING = r"[\x{0300}-\x{036f}]*"  # accents the collation ignores at the first level


def _known(c: str) -> bool:
    return c not in CASE_ONLY and any(lo <= ord(c) <= hi for lo, hi in KNOWN)


def _accented(c: str) -> bool:
    return c not in CASE_ONLY and any(lo <= ord(c) <= hi for lo, hi in ACCENTED)


def _base(c: str) -> str:
    """A Latin or Greek letter without its accents (``ü`` -> ``u``), lower case; any other
    character in lower case."""
    d = unicodedata.normalize("NFD", c)
    if _accented(c) and len(d) > 1 and all(unicodedata.combining(x) for x in d[1:]):
        return d[0].lower()
    return c.lower()


def _forms() -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {}
    for lo, hi in ACCENTED:
        for cp in range(lo, hi + 1):
            c = chr(cp)
            if _known(c) and _base(c) != c.lower():
                forms.setdefault(_base(c), set()).add(c)
    return {b: frozenset(f) for b, f in forms.items()}


FORMS = _forms()  # a base letter -> its accented forms (both cases)


def _letter(c: str) -> str:
    """One character of a searched word as the collation compares it: a known letter in
    either case, a Latin or Greek one in any of its accented forms, also written with
    combining accents (``e`` + U+0301); any other character only itself."""
    if not _known(c):
        return f"(?-i:{re.escape(c)})"
    base = _base(c)
    members = sorted({base, *FORMS.get(base, ())})
    one = "[" + "".join(re.escape(m) for m in members) + "]" if len(members) > 1 \
        else re.escape(base)
    return one + COMBINING if _accented(c) else one


def _word(word: str) -> str:
    """A token that starts with ``word``: ``ss`` (or ``ß``) also as ``ß``, a last ``s``
    also as the start of one; not a stopword, at most MAX_TOKEN characters (counted as if
    each letter of the word were one: a token with a ``ß`` for ``ss`` may count one more).
    The word's letters come first: the engine looks for them, not at every token."""
    letters = [_base(c) if _known(c) else c for c in word]
    parts, i = [], 0
    while i < len(letters):
        c = letters[i]
        if c == "ß" or (c == "s" and i + 1 < len(letters) and letters[i + 1] == "s"):
            parts.append(f"(?:{_letter('s')}{_letter('s')}|(?-i:ß))")
            i += 1 if c == "ß" else 2
        elif c == "s" and i == len(letters) - 1:
            parts.append(f"(?:{_letter('s')}|(?-i:ß))")
            i += 1
        else:
            parts.append(_letter(word[i]))
            i += 1
    w = WORD_CLASS
    folded = "".join(letters)
    # a stopword as it is written (the parser compares them so: ``wïth`` is indexed)
    stops = [s for s in STOPWORDS if s.startswith(folded)]
    stop = f"(?!(?:{'|'.join(stops)})(?![{w}]))" if stops else ""
    return (f"(?<![{w}])" + stop + "".join(parts)
            + f"[{w}]{{0,{max(MAX_TOKEN - len(word), 0)}}}(?![{w}])")


def pattern(words: list[str]) -> str | None:
    """Every word, each as the start of a token somewhere in the text (None: no word)."""
    if not words:
        return None
    if len(words) == 1:
        return "(?i)" + _word(words[0])
    return "(?is)^" + "".join(f"(?=.*?{_word(w)})" for w in words)


__all__ = ["FORMS", "MAX_TOKEN", "STOPWORDS", "pattern"]
