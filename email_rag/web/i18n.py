"""The web UI's languages: English (the source text) and German, chosen per user.

Templates mark text with ``{{ _("...") }}`` / ``ngettext`` (Jinja2's i18n extension);
Python marks it with ``_tr(request, user, "...")`` (web views), ``translate(lang, "...")``
or ``N_("...")`` (texts made outside the web, translated where they are shown). The German
catalog is ``locale/de/LC_MESSAGES/messages.po`` (gettext, read with Babel and compiled in
memory at start-up, so no build step and no binary file in the repo).

``scripts/translations.sh`` (``update()``) extracts every marked text (``extract``: Babel, with the
files of ``babel.cfg`` and the keywords below) and merges it into the catalog (new texts
get an empty translation, texts no longer marked are dropped); then translate the empty
ones. ``tests/unit/test_web_i18n.py`` runs the same ``extract`` and fails when a text has
no German translation (empty or fuzzy), so the catalog cannot fall behind the pages.

The language of the page being rendered is a context variable, set by ``render.page``
for the duration of one render: thread-safe with one shared Jinja environment.
"""

from __future__ import annotations

import contextvars
import io
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po
from babel.support import NullTranslations, Translations

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
ROOT = Path(__file__).resolve().parents[2]  # babel.cfg's paths are relative to it
MAPPING = Path(__file__).resolve().parent / "babel.cfg"
# the marking functions: Jinja2's _ and ngettext; _tr(request, user, msg) in the views,
# translate(lang, msg), N_(msg) for texts made outside the web
KEYWORDS = {"_": None, "gettext": None, "ngettext": (1, 2), "_tr": (3,), "translate": (2,),
            "N_": None}
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


def current() -> str:
    """The language of the page being rendered."""
    return _current.get()


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


def from_accept_language(header: str | None) -> str | None:
    """The first of ``LANGUAGES`` a browser's Accept-Language asks for, by its weights
    (``de-DE,de;q=0.9,en;q=0.8`` -> de; ``fr,en;q=0.5`` -> en); None when it names none of
    them (or is missing or malformed)."""
    wanted: list[tuple[float, int, str]] = []
    for i, part in enumerate((header or "").split(",")[:32]):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and q > 0:
            wanted.append((-q, i, primary))
    return min(wanted)[2] if wanted else None


def translate(language: str | None, message: str, **values: object) -> str:
    """``message`` (a msgid with ``%(name)s`` fields) in ``language``: for texts made in
    Python, such as the messages shown after an action."""
    with using(language):
        text = gettext(message)
    return text % values if values else text


def catalog_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / "messages.po"


def extract() -> Catalog:
    """Every marked text of the files ``babel.cfg`` names (what the UI can show)."""
    with MAPPING.open() as f:
        method_map, options_map = parse_mapping_cfg(f, str(MAPPING))
    found = Catalog(project="email-rag web UI")
    for filename, lineno, message, comments, context in extract_from_dir(
            str(ROOT), method_map, options_map, keywords=KEYWORDS):
        found.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    return found


def update(language: str = "de") -> list[str]:
    """Merge the marked texts into the language's catalog; returns the msgids that still
    need a translation."""
    path = catalog_path(language)
    with path.open("rb") as f:
        catalog = read_po(f, locale=language)
    catalog.update(extract(), no_fuzzy_matching=True)
    catalog.last_translator = catalog.language_team = "email-rag"
    catalog.msgid_bugs_address = "email-rag"
    catalog.revision_date = datetime.now(UTC)
    with path.open("wb") as f:
        write_po(f, catalog, width=100, no_location=True, ignore_obsolete=True)
    return [str(m.id) for m in catalog if m.id and not all(_strings(m))]


def _strings(message: object) -> tuple[str, ...]:
    string = getattr(message, "string", "")
    return tuple(string) if isinstance(string, (list, tuple)) else (string,)

