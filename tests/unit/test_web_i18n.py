"""The web UI's German catalog keeps up with the pages (email_rag/web/i18n.py).

Three walls against an English text on a German page: every marked text has a German
translation (extracted with Babel exactly as ``scripts/translations.sh`` does), no text in
a template is left unmarked, and no flash message is a bare English literal.
"""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser

from babel.messages.pofile import read_po

from email_rag.web import i18n
from email_rag.web.render import ENV, TEMPLATES

ADMIN_TEMPLATES = ("audit.html", "failures.html", "no_reply.html", "status.html",
                   "timeline.html", "_events.html")


def german_catalog():
    with i18n.catalog_path("de").open("rb") as f:
        return read_po(f, locale="de")


def untranslated(extracted, catalog) -> list[str]:
    """The extracted msgids without a usable German text: missing, empty (a plural with
    any empty form included) or fuzzy."""
    missing = []
    for message in extracted:
        if not message.id:
            continue
        german = catalog.get(message.id)
        strings = [] if german is None else (
            list(german.string) if isinstance(german.string, (list, tuple)) else [german.string])
        if german is None or not strings or not all(strings) or german.fuzzy:
            missing.append(str(message.id))
    return missing


def test_every_marked_text_has_a_german_translation():
    extracted = i18n.extract()
    ids = {m.id if isinstance(m.id, str) else m.id[0] for m in extracted if m.id}
    assert len(ids) > 250
    assert "Draft #%(id)s approved." in ids  # texts made in the review views
    assert "sent — accepted by the relay at %(at)s" in ids  # send outcomes (sending/outcome.py)
    assert "Not retried: #%(id)s: %(why)s. Nothing changed for it." in ids  # admin flashes
    assert "Mail #%(id)s: no reply, confirmed." in ids  # no-reply flashes
    assert "%(num)s try" in ids  # plurals (ngettext)
    files = {path for m in extracted for path, _ in m.locations}
    for name in ADMIN_TEMPLATES + ("base.html", "draft.html", "queue.html"):
        assert f"email_rag/web/templates/{name}" in files, name
    assert {"email_rag/web/views_admin.py", "email_rag/web/app.py"} <= files
    missing = untranslated(extracted, german_catalog())
    assert not missing, ("translate these in email_rag/web/locale/de/LC_MESSAGES/messages.po "
                         f"(scripts/translations.sh adds them): {missing}")


def test_the_check_catches_empty_plural_and_fuzzy_translations():
    from babel.messages.catalog import Catalog

    extracted = Catalog()
    for msgid in ("Retry", ("%(num)s try", "%(num)s tries"), "Resolve", "Open"):
        extracted.add(msgid)
    catalog = Catalog(locale="de")
    catalog.add("Retry", "Erneut versuchen")
    catalog.add(("%(num)s try", "%(num)s tries"), ("%(num)s Versuch", ""))
    catalog.add("Resolve", "Erledigen", flags=["fuzzy"])
    assert untranslated(extracted, catalog) == ["('%(num)s try', '%(num)s tries')", "Resolve",
                                                "Open"]


# --- nothing left unmarked ---

SHOWN_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}
# words that are the same in every language: names, identifiers shown as such
NOT_TEXT = {"email-rag", "email-rag · email-rag", "user:anna", "English", "Deutsch", "Ctrl",
            "Enter", "ms", "/metrics", "/healthz", "(Prometheus) ·"}
# string literals in template code that are identifiers (CSS classes, keys, state names)
IDENTIFIERS = {"ok", "bad", "none", "email", "draft", "ours", "sent", "admin", "info", "stale",
               "partially_indexed", "waiting", "priority", "mailbox", "due", "agent", "week", "en", "de", "version",
               "detail", "mails", "index", "jobs", "sends", "last_error", "counts_error",
               "queues_error", "model"}
GETTEXT = {"_", "gettext", "ngettext"}


class _Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._script = 0

    def handle_starttag(self, tag, attrs):
        self._script += tag in ("script", "style")
        self.found += [v for k, v in attrs if k in SHOWN_ATTRIBUTES and v]

    def handle_endtag(self, tag):
        self._script -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._script:
            self.found.append(data)


def unmarked(name: str) -> list[str]:
    """Text of a template a user can read that does not go through gettext: HTML text and
    shown attributes outside ``{{ ... }}`` / ``{% ... %}``, and string literals in template
    code that are not an argument of ``_``/``ngettext`` and not a known identifier."""
    html, literals, calls, prev = [], [], [], []
    for _, kind, value in ENV.lex((TEMPLATES / name).read_text(), name):
        if kind == "data":
            html.append(value)
        elif kind in ("variable_begin", "block_begin"):
            html.append(" ")
        elif kind == "operator" and value == "(":
            calls.append(bool(prev) and prev[-1] in GETTEXT)
        elif kind == "operator" and value == ")" and calls:
            calls.pop()
        elif kind == "string" and not any(calls):
            text = value[1:-1]
            if re.search(r"[A-Za-z]{2}", text) and text not in IDENTIFIERS and \
                    not text.endswith(".html") and not text.startswith("/"):
                literals.append(text)
        if kind != "whitespace":
            prev.append(value)
    scan = _Texts()
    scan.feed("".join(html))
    texts = [" ".join(t.split()) for t in scan.found]
    return [t for t in texts if re.search(r"[A-Za-z]{2}", t) and t not in NOT_TEXT] + literals


def test_no_text_in_a_template_is_left_unmarked():
    left = {p.name: unmarked(p.name) for p in sorted(TEMPLATES.glob("*.html"))}
    assert {name: texts for name, texts in left.items() if texts} == {}


def test_the_unmarked_check_sees_text_attributes_and_literals(tmp_path, monkeypatch):
    (tmp_path / "t.html").write_text(
        '<p>Retry</p><input placeholder="Note"><b>{{ x or \'(no subject)\' }}</b>'
        '<i>{{ _("Marked") }}</i>{{ ngettext("%(num)s try", "%(num)s tries", 2) }}'
        '<a class="{{ \'ok\' }}" href="/x">{{ _("From %(a)s", a=y or _("nobody")) }}</a>')
    monkeypatch.setitem(globals(), "TEMPLATES", tmp_path)
    assert unmarked("t.html") == ["Retry", "Note", "(no subject)"]


SHOWN_ARGS = {"flash": (2, 4), "_back_to_draft": (3,)}  # the text (and a link's text)
SHOWN_KEYWORDS = {"page": ("title", "message")}  # an error page's title and message


def english_literals(node: ast.AST) -> list[ast.AST]:
    """String literals with words in an expression, outside calls of _tr/translate."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) \
            in ("_tr", "translate"):
        return []
    if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.search(r"[A-Za-z]{2}", node.value)):
        return [node]
    return [n for child in ast.iter_child_nodes(node) for n in english_literals(child)]


def test_no_flash_is_a_bare_english_literal():
    """The text of a flash or an error page comes from ``_tr``/``translate`` (or a variable
    made with them), never from an English string or f-string literal."""
    bare = []
    for path in sorted(TEMPLATES.parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in SHOWN_ARGS:
                for i in SHOWN_ARGS[node.func.id]:
                    if i < len(node.args) and english_literals(node.args[i]):
                        bare.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in SHOWN_KEYWORDS:
                bare += [f"{path.name}:{node.lineno}" for k in node.keywords
                         if k.arg in SHOWN_KEYWORDS[node.func.id] and english_literals(k.value)]
    assert bare == []


def test_the_language_is_per_render():
    with i18n.using("de"):
        assert i18n.gettext("Review queue") == "Prüfliste"
        with i18n.using("en"):
            assert i18n.gettext("Review queue") == "Review queue"
        assert i18n.gettext("Approve and send") == "Freigeben und senden"
    with i18n.using("xx"):  # unknown: English
        assert i18n.gettext("Review queue") == "Review queue"


def test_every_state_category_priority_and_failure_kind_has_a_german_label():
    """The values the desk shows from the database (states, categories, priorities, queue
    entries, failure kinds, roles) are shown through ``label``: each has a label, and in
    German none is left as the English label or the stored value."""
    from email_rag.classification.values import Category, Priority
    from email_rag.core.states import (
        DraftStatus,
        JobKind,
        JobState,
        MailStatus,
        SendStatus,
        UserRole,
    )
    from email_rag.review.console import KINDS
    from email_rag.web.labels import LABELS, label

    values = {v.value for e in (MailStatus, DraftStatus, SendStatus, JobState, JobKind,
                                Category, Priority, UserRole) for v in e} | set(KINDS)
    assert sorted(values - set(LABELS)) == []
    same_in_german = {"spam", "normal"}  # the German word is the English one
    with i18n.using("de"):
        english_left = sorted(v for v in values if v not in same_in_german
                              and label(v) in (LABELS[v], v))
    assert english_left == []
    with i18n.using("de"):
        assert label("pending_review") == "wartet auf Prüfung" and label("billing") == "Rechnung"
    assert label("pending_review") == "pending review" and label("brand_new") == "brand new"


def test_the_pages_script_has_no_english_text():
    """What the draft page's script says (saved, saving, editing, changed, offline, the
    Regenerate question) comes from the page (data-msg-*, translated), not from app.js."""
    script = (TEMPLATES.parent / "static" / "app.js").read_text()
    code = re.sub(r"//[^\n]*", "", script)
    sentences = [s for s in re.findall(r'"([^"\n]*)"', code) if re.search(r"[A-Za-z]+ [a-z]+", s)]
    assert [s for s in sentences if s != "use strict"] == []


def test_the_reply_rule_is_shown_in_the_page_language():
    """The reply rule is stored in English with the mail; the draft and mail pages show its
    wording and its reason translated, the addresses as they are, and an unknown rule as
    stored."""
    from email_rag.web.render import reply_rule

    stored = "From (Reply-To 'x y' is not a valid address, ignored)"
    with i18n.using("de"):
        assert reply_rule(stored) == "Von (Reply-To 'x y' ist keine gültige Adresse, nicht " \
                                     "verwendet)"
        assert reply_rule("Reply-To: the sender a@shop.example asks for replies to "
                          "b@shop.example") == ("Reply-To: der Absender a@shop.example bittet "
                                                "um Antworten an b@shop.example")
        assert reply_rule("an older wording") == "an older wording"
    with i18n.using("en"):
        assert reply_rule(stored) == stored
