"""The HTML-mail sanitiser and the template filters (pure functions)."""

from zoneinfo import ZoneInfo

import pytest

from email_rag.ops.metrics import Exposition
from email_rag.web import i18n
from email_rag.web.render import ENV, age, safe_mail_html
from email_rag.web.security import safe_next


@pytest.mark.parametrize("html,gone", [
    ('<script>alert(1)</script>x', "<script"),
    ('<img src="https://tracker.example/p.gif">', "<img"),
    ('<p onclick="alert(1)">x</p>', "onclick"),
    ('<a href="javascript:alert(1)">x</a>', "javascript:"),
    ('<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>', "data:"),
    ('<svg><script>alert(1)</script></svg>', "<svg"),
    ('<iframe src="https://evil.example/"></iframe>', "<iframe"),
    ('<p style="background:url(https://t.example/)">x</p>', "style="),
    ('<style>p{background:url(https://t.example/)}</style>', "t.example"),
    ('<form action="https://evil.example/"><input name=pw></form>', "<form"),
    ('<base href="https://evil.example/">', "<base"),
    ('<meta http-equiv="refresh" content="0;url=https://evil.example/">', "<meta"),
    ('<!-- <script>alert(1)</script> -->', "<!--"),
])
def test_sanitiser_removes_what_runs_or_loads(html, gone):
    assert gone not in str(safe_mail_html(html)).lower()


def test_sanitiser_keeps_formatting_and_safe_links():
    out = str(safe_mail_html('<p><b>Hallo</b></p><a href="https://ok.example/">ok</a>'))
    assert "<b>Hallo</b>" in out
    assert 'href="https://ok.example/"' in out and 'rel="noopener noreferrer nofollow"' in out


def test_templates_escape_by_default():
    rendered = ENV.from_string("{{ v }}").render(v='<script>alert("x")</script>')
    assert rendered == "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"


@pytest.mark.parametrize("seconds,text", [(5, "5 s"), (125, "2 min"), (7300, "2 h 01 min"),
                                          (90000, "1 d 1 h"), (None, "")])
def test_age(seconds, text):
    assert age(seconds) == text


@pytest.mark.parametrize("target,expected", [
    ("/drafts/3?mailbox=x", "/drafts/3?mailbox=x"), ("//evil.example/", "/queue"),
    ("https://evil.example/", "/queue"), ("/\\evil.example", "/queue"), (None, "/queue")])
def test_login_redirects_stay_on_site(target, expected):
    assert safe_next(target) == expected


def test_metric_label_values_are_escaped():
    out = Exposition()
    out.declare("m", "gauge", "help")
    out.sample("m", 1.5, mailbox='a"b\\c\nd')
    assert out.text().splitlines()[-1] == 'm{mailbox="a\\"b\\\\c\\nd"} 1.5'


def test_numbers_and_times_in_the_pages_language_and_zone():
    """Counts follow the language (1,038 / 1.038); times are the user's zone, to the
    minute, also when they come as ISO text (the status data)."""
    template = ENV.from_string("{{ n|num }} {{ x|num }} {{ none|num }}|{{ t|when }}|{{ s|when }}")
    values = {"n": 1038, "x": 0.85, "none": None, "s": "2026-11-30T08:00:00", "t": None,
              "tz": ZoneInfo("Europe/Berlin")}
    with i18n.using("en"):
        assert template.render(**values) == "1,038 0.85 ||2026-11-30 09:00"
    with i18n.using("de"):
        assert template.render(**values) == "1.038 0,85 ||2026-11-30 09:00"
    assert ENV.from_string("{{ s|when }}").render(s="not a time", tz=None) == "not a time"
