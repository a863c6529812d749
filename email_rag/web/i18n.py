"""The web UI's languages: English (the source text) and German, chosen per user.

Templates mark text with ``{{ _("...") }}`` / ``{% trans %}`` (Jinja2's i18n extension);
the German catalog is ``locale/de/LC_MESSAGES/messages.po`` (gettext, read with Babel
and compiled in memory at start-up, so no build step and no binary file in the repo).
``tests/unit/test_web_i18n.py`` extracts every marked text from the templates and fails
when one has no German translation, so the catalog cannot fall behind the templates.

The language of the page being rendered is a context variable, set by ``render.page``
for the duration of one render: thread-safe with one shared Jinja environment.
"""

from __future__ import annotations

import contextvars
import io
from functools import cache
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import NullTranslations, Translations

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "de")
DEFAULT = "en"

_current = contextvars.ContextVar("ui_language", default=DEFAULT)


@cache
def translations(language: str) -> NullTranslations:
    po = LOCALE_DIR / language / "LC_MESSAGES" / "messages.po"
    if language == DEFAULT or not po.exists():
        return NullTranslations()
    with po.open("rb") as f:
        catalog = read_po(f, locale=language)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return Translations(fp=buf)


def gettext(message: str) -> str:
    return translations(_current.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(_current.get()).ngettext(singular, plural, n)


class using:  # noqa: N801 - used as ``with using(lang):``
    """Render in this language for the duration of the block."""

    def __init__(self, language: str | None) -> None:
        self.language = language if language in LANGUAGES else DEFAULT
        self._token: contextvars.Token | None = None

    def __enter__(self) -> str:
        self._token = _current.set(self.language)
        return self.language

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _current.reset(self._token)


def translate(language: str | None, message: str, **values: object) -> str:
    """``message`` (a msgid with ``%(name)s`` fields) in ``language``: for texts made in
    Python, such as the messages shown after an action."""
    with using(language):
        text = gettext(message)
    return text % values if values else text
