"""The web UI's German catalog keeps up with the templates (email_rag/web/i18n.py)."""

from __future__ import annotations

from babel.messages.extract import extract_from_dir, extract_from_file
from babel.messages.pofile import read_po

from email_rag.web import i18n
from email_rag.web.render import TEMPLATES

ROOT = TEMPLATES.parents[2]
# the texts made in Python: _tr(request, user, "..."), i18n.translate(lang, "..."), N_("...")
KEYWORDS = {"_": None, "_tr": (3,), "translate": (2,), "N_": None}


def template_messages() -> set[str]:
    found = list(extract_from_dir(str(TEMPLATES), method_map=[("**.html", "jinja2")],
                                  options_map={"**.html": {"trimmed": "true"}}))
    found += extract_from_dir(str(ROOT / "email_rag" / "web"), method_map=[("**.py", "python")],
                              keywords=KEYWORDS)
    for shared in ("desk.py", "sending/outcome.py"):  # texts the web shows, made outside it
        found += [(None, *m) for m in extract_from_file("python", str(ROOT / "email_rag" / shared),
                                                         keywords=KEYWORDS)]
    return {msg if isinstance(msg, str) else msg[0] for _, _, msg, _, _ in found}


def test_every_marked_text_has_a_german_translation():
    with (i18n.LOCALE_DIR / "de" / "LC_MESSAGES" / "messages.po").open("rb") as f:
        catalog = read_po(f, locale="de")
    translated = {m.id for m in catalog if m.id and m.string}
    missing = template_messages() - translated
    assert len(template_messages()) > 90
    assert "Draft #%(id)s approved." in template_messages()  # Python texts are included
    assert "sent — accepted by the relay at %(at)s" in template_messages()  # send outcomes
    assert not missing, f"add German translations (see the .po header for the commands): {sorted(missing)}"


def test_the_language_is_per_render():
    with i18n.using("de"):
        assert i18n.gettext("Review queue") == "Prüfliste"
        with i18n.using("en"):
            assert i18n.gettext("Review queue") == "Review queue"
        assert i18n.gettext("Approve and send") == "Freigeben und senden"
    with i18n.using("xx"):  # unknown: English
        assert i18n.gettext("Review queue") == "Review queue"
