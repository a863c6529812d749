"""Templates (Jinja2, autoescape always on), filters, and the HTML-mail sanitiser.

Mail content is untrusted. Templates print it escaped (text); the HTML part
of a mail is only shown after ``safe_mail_html``: nh3 (the ammonia sanitiser)
with a short allow-list of formatting tags, no images, styles, forms or
scripts, no event-handler attributes, links only to http(s)/mailto with
rel="noopener noreferrer nofollow". The CSP header is a second wall.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import jinja2
import nh3
from babel.numbers import format_decimal
from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from ..core.actors import shown
from ..core.catalog import Parts, read_back
from ..core.errors import EmailRagError
from ..llm import claims, draft_checks
from ..mail.addresses import rule_parts
from ..review import notes
from ..sending.compose import BIDI_CONTROLS, BIDI_MARKS, reply_subject
from ..sending.outcome import send_outcome
from . import i18n
from .labels import label
from .security import csrf_token, pop_flashes

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"

MAIL_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "div", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "li", "ol", "p", "pre", "s", "small", "span", "strong", "sub", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}
MAIL_ATTRIBUTES = {"a": {"href", "title"}, "td": {"colspan", "rowspan"},
                   "th": {"colspan", "rowspan"}}


def safe_mail_html(html: str | None) -> Markup:
    """Sanitised HTML of a mail: formatting only, nothing that runs or loads."""
    if not html:
        return Markup("")
    cleaned = nh3.clean(html, tags=MAIL_TAGS, attributes=MAIL_ATTRIBUTES,
                        url_schemes={"http", "https", "mailto"},
                        link_rel="noopener noreferrer nofollow", strip_comments=True,
                        clean_content_tags={"script", "style", "noscript", "template",
                                            "iframe", "object", "title"})
    return Markup(cleaned)  # noqa: S704 - output of the sanitiser


# Every bidi embedding, override, isolate and mark: no page hands one to the browser.
BIDI = re.compile("[" + "".join(sorted(BIDI_CONTROLS | BIDI_MARKS)) + "]")


def _marker(match: re.Match[str]) -> str:
    return f"&lt;U+{ord(match.group()):04X}&gt;"


def _styled_marker(match: re.Match[str]) -> str:
    return f'<span class="bidi-control">{_marker(match)}</span>'


def marked(value: Any) -> Markup:
    """Mail text (a subject, a body, a snippet) escaped, with every bidi control and mark
    shown as what it is (``<U+202E>``, styled): nothing in it can reorder what staff read."""
    return Markup(BIDI.sub(_styled_marker, str(escape("" if value is None else value))))  # noqa: S704 - escaped above


def isolated(value: Any) -> Markup:
    """A piece of mail-derived text shown inline (a subject, a sender, an address, a file
    name, an event's detail): ``marked`` and isolated in ``<bdi>`` so its right-to-left
    letters cannot reorder what stands around it; ``Rechnung<U+202E>fdp.exe`` never reads as
    ``Rechnungexe.pdf``."""
    return Markup(f"<bdi>{marked(value)}</bdi>")  # noqa: S704 - escaped by marked


def no_bidi_controls(value: Any) -> Any:
    """The environment's ``finalize``: every printed value, wherever it stands (text, an
    attribute, a textarea, the page title), leaves no bidi control or mark to the browser -
    each becomes the text ``<U+202E>`` (the filters above style it where they are used)."""
    if isinstance(value, str) and BIDI.search(value):
        if isinstance(value, Markup):  # already escaped (a filter's output): the marker as text
            return Markup(BIDI.sub(_marker, value))  # noqa: S704 - only markers added
        return Markup(BIDI.sub(_marker, str(escape(value))))  # noqa: S704 - escaped first
    return value


def age(seconds: Any) -> str:
    if seconds is None:
        return ""
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


@jinja2.pass_context
def when(context: Any, value: Any) -> str:
    """A stored time (UTC without tzinfo: MariaDB runs in UTC) in the user's time zone, to the
    minute (the title of the page says which zone)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        zone = context.get("tz") or UTC
        local = value.replace(tzinfo=UTC).astimezone(zone) if value.tzinfo is None \
            else value.astimezone(zone)
        return local.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, str):  # an ISO time from a JSON-shaped answer (the status data)
        try:
            return when(context, datetime.fromisoformat(value))
        except ValueError:
            return value
    return str(value)


def num(value: Any) -> str:
    """A count or measure in the page's language: 1,038 / 1.038; 0.85 / 0,85."""
    if value is None or value == "":
        return ""
    try:
        return format_decimal(value, locale=i18n.current())
    except (TypeError, ValueError, ArithmeticError):
        return str(value)


def user_zone(user: Any, default: str) -> ZoneInfo:
    """The user's time zone, else the configured one, else UTC (an unknown name never
    breaks a page)."""
    for name in (getattr(user, "time_zone", None), default, "UTC"):
        if name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return ZoneInfo("UTC")


def who(actor: Any) -> str:
    """An audit actor as a person reads it: ``user:anna`` -> ``anna``."""
    return shown(actor)


def as_json(value: Any) -> str:
    if value is None or value == "":
        return ""
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


@jinja2.pass_context
def outcome(context: Any, attempt: Any) -> str:
    """What is known about a reply's sending, from its send attempt (email_rag/sending/
    outcome.py), in the page's language and the user's time zone."""
    message, values = send_outcome(attempt, at=lambda v: when(context, v))
    text = i18n.gettext(message)
    return text % values if values else text


def reply_rule(rule: str | None) -> str:
    """Whom the reply goes to and why (the rule stored in English with the mail) in the
    page's language: its wording and its reason translated, the addresses as they are; a
    rule of no known wording as it was stored."""
    parts = rule_parts(rule or "")
    if parts is None:
        return rule or ""
    wording, values = parts
    if "why_not" in values:
        values = {**values, "why_not": reply_rule(values["why_not"])}
    text = i18n.gettext(wording)
    return text % values if values else text


def translated(parts: Iterable[Parts], sep: str = "; ") -> str:
    """Texts read back as wordings and values (``core.catalog``) in the page's language."""
    out = []
    for wording, values in parts:
        text = i18n.gettext(wording)
        out.append(text % values if values else text)
    return sep.join(out)


def known(message: str, wordings: Iterable[str]) -> str:
    """A text made in English from one of ``wordings`` (a stored rule, a raised "does not
    exist", a refused decision) in the page's language, its stored values too (a ``status``
    by its label, a reply ``rule``); a text of none of them as it is."""
    parts = read_back(message or "", wordings)
    if parts is None:
        return message
    wording, values = parts
    shown = {"status": label, "rule": reply_rule}
    return translated([(wording, {k: shown[k](v) if k in shown else v
                                  for k, v in values.items()})])


def tr_known(request: Request, message: str, wordings: Iterable[str]) -> str:
    """``known`` in the language of this request's pages (outside a page's rendering)."""
    with i18n.using(language(request)):
        return known(message, wordings)


def check_flags(flags: str | None) -> str:
    """A FLAGGED draft's findings (stored in English by the draft step) in the page's
    language, the kinds of its unsupported claims too; findings of no known wording as
    stored."""
    parts = draft_checks.flag_parts(flags or "")
    if parts is None:
        return flags or ""
    return translated([(w, {**v, "claims": claims.shown(v["claims"], i18n.gettext)})
                       if w == draft_checks.UNSUPPORTED else (w, v) for w, v in parts])


def build_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, extensions=["jinja2.ext.i18n"],
                             finalize=no_bidi_controls)
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_callables(i18n.gettext, i18n.ngettext, newstyle=True)  # type: ignore[attr-defined]
    env.filters.update(age=age, when=when, as_json=as_json, mail_html=safe_mail_html,
                       reply_subject=reply_subject, who=who, send_outcome=outcome, num=num,
                       iso=isolated, marked=marked, label=label, rule=reply_rule,
                       check_flags=check_flags)
    return env


ENV = build_env()


def language(request: Request, user: Any = None) -> str | None:
    """The language of the pages and messages for this request: the user's choice (on /me),
    else the one the session last saw (the user row may be out of reach: a 503 page), else
    the browser's (Accept-Language), else the configured default."""
    user = user or getattr(request.state, "user", None)
    return (getattr(user, "ui_language", None) or (request.scope.get("session") or {}).get("lang")
            or i18n.from_accept_language(request.headers.get("accept-language"))
            or request.app.state.settings.web_language)


def tr(request: Request, user: Any, message: str, **values: object) -> str:
    """A message made in Python (a flash, a refusal) in the user's language; ``message`` is
    a msgid with ``%(name)s`` fields (extracted as ``_tr``, see babel.cfg)."""
    return i18n.translate(language(request, user), message, **values)


def page_zone(request: Request) -> ZoneInfo:
    """The time zone the page shows times in, and reads times typed into it in."""
    return user_zone(getattr(request.state, "user", None), request.app.state.settings.web_time_zone)


def unread_mentions(request: Request, user: Any, status_code: int) -> int | None:
    """The header's count of the user's unread mentions (None on an error page or when the
    database does not answer: the page is still made)."""
    if user is None or status_code >= 500:
        return None
    try:
        return notes.unread_count(request.app.state.pool.get(), user.id, user.mailbox_ids)
    except EmailRagError:
        return None


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    user = getattr(request.state, "user", None)
    tz = page_zone(request)
    context.setdefault("mentions", unread_mentions(request, user, status_code))
    with i18n.using(language(request, user)) as lang:
        html = ENV.get_template(template).render(
            request=request, user=user, csrf=csrf_token(request), flashes=pop_flashes(request),
            path=request.url.path, tz=tz, lang=lang, **context)
    return HTMLResponse(html, status_code=status_code)
