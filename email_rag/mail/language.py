"""The language a mail is written in, decided in milliseconds by language identifiers.

Two libraries from the registries, each where it is strongest (measured on the
labelled corpus plus subject-only, first-sentence, mixed and short variants;
figures in docs/local-llm.md):

- py3langid (97 languages, 0.05 ms) says whether the text is in a language outside
  ``SUPPORTED``, and decides alone a text of 20 words or more that it puts in one
  supported language beyond doubt (``_plain``); it is weak on short texts;
- lingua (the supported languages only, built for short and mixed text) picks the
  language of the rest: each sentence votes with its word count times lingua's
  confidence, so a German signature under an English mail does not decide its language
  (~0.4 ms a sentence: the identifier's cost).

A sentence with Spanish's inverted marks ("¿", "¡") is Spanish: no other supported language
writes them, and a shop's German name in a short Spanish question ("¿venden tazas ... de
Kaffeewerk?") tipped lingua to Dutch.

Quoted lines (``> ...``) and quoted spans (an error message in quotes, usually
English) are left out when enough text remains. ``confidence`` is the winning
language's share of the vote (0-1), or py3langid's probability where it decided alone;
below ``SURE`` the caller should treat the answer as a guess (the LLM's answer then
breaks the tie).

The models load on first use (lingua's per language, ~300 MB for the seven).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import Any

SUPPORTED = ("de", "en", "fr", "es", "it", "nl", "pt")
OTHER = "other"
SURE = 0.75  # share of the sentence vote above which the answer is not a guess
_OTHER_SURE = 0.9  # py3langid probability that the text is in an unsupported language
_MIN_CHARS_FOR_OTHER = 12
_PLAIN_WORDS = 20  # written_in: enough words for py3langid alone (weak only on short texts)
_PLAIN_SURE = 0.999

_QUOTED_SPAN = re.compile(r"'[^'\n]{6,}'|\"[^\"\n]{6,}\"|„[^“\n]+“|«[^»\n]+»|“[^”\n]+”")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_INVERTED = re.compile(r"[¿¡]")
_WORD = re.compile(r"\w+")
_lock = threading.Lock()


@dataclass(frozen=True)
class LanguageGuess:
    code: str  # one of SUPPORTED, or OTHER
    confidence: float

    @property
    def sure(self) -> bool:
        return self.confidence >= SURE


def identify(text: str) -> LanguageGuess:
    """The language of ``text`` (a mail's subject and body); OTHER for a language
    outside ``SUPPORTED``, and OTHER with confidence 0 when there is nothing to read."""
    text = _without_quotes(text or "")
    if not _WORD.search(text):
        return LanguageGuess(OTHER, 0.0)
    code, p = _outside_identifier().classify(text)
    if code not in SUPPORTED and p > _OTHER_SURE and len(text.strip()) >= _MIN_CHARS_FOR_OTHER:
        return LanguageGuess(OTHER, float(p))
    if code in SUPPORTED and _plain(text, p):
        return LanguageGuess(code, float(p))
    return _vote(text)


def written_in(text: str, code: str) -> bool:
    """Whether ``text`` is plainly in ``code``: a text of ``_PLAIN_WORDS`` words or more that
    py3langid alone puts in that language beyond doubt. The fast yes of a check that only
    asks "is this in the expected language?" (a draft); False means "ask ``identify``"."""
    text = _without_quotes(text or "")
    found, p = _outside_identifier().classify(text)
    return found == code and _plain(text, p)


def _plain(text: str, p: float) -> bool:
    """py3langid's answer (probability ``p``) decides alone: the text is long enough and the
    answer beyond doubt. Measured on the 332 corpus mails with their quoted, signed-in-another-
    language and first-sentence variants (1,328 texts): it decided 412 of them, all right,
    never against the sentence vote."""
    return p >= _PLAIN_SURE and len(_WORD.findall(text)) >= _PLAIN_WORDS


def _without_quotes(text: str) -> str:
    own = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(">"))
    unquoted = _QUOTED_SPAN.sub(" ", own)
    return unquoted if len(_WORD.findall(unquoted)) >= 3 else own


def _vote(text: str) -> LanguageGuess:
    detector, codes = _supported_detector()
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    scores: dict[str, float] = {}
    for sentence in sentences:
        words = len(_WORD.findall(sentence))
        if words < 3 and len(sentences) > 1:
            continue
        if _INVERTED.search(sentence):
            scores["es"] = scores.get("es", 0.0) + max(words, 1)
            continue
        with _lock:  # lingua's detector is not documented as thread-safe
            values = detector.compute_language_confidence_values(sentence)
        if values:
            code = codes[values[0].language]
            scores[code] = scores.get(code, 0.0) + max(words, 1) * values[0].value
    total = sum(scores.values())
    if not total:
        return LanguageGuess(OTHER, 0.0)
    best = max(scores, key=lambda c: scores[c])
    return LanguageGuess(best, scores[best] / total)


@cache
def _outside_identifier() -> Any:
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE, norm_probs=True)


@cache
def _supported_detector() -> tuple[Any, dict[Any, str]]:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    languages = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in SUPPORTED]
    detector = LanguageDetectorBuilder.from_languages(*languages).build()
    return detector, {lang: lang.iso_code_639_1.name.lower() for lang in languages}
