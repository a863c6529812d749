"""Helpers for web UI tests: users, CSRF tokens, logging in."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest

from email_rag.auth import users
from email_rag.db import Database

PASSWORD = "correct horse 42"
# the browser of the in-process tests: on this machine, so a plain-http login is allowed
# (EMAIL_RAG_WEB_HTTPS=auto; tests/integration/test_web_transport.py tests the rule)
LOOPBACK = ("127.0.0.1", 50000)
XSS_SUBJECT = '<script>alert("subject")</script> Drucker <img src=x onerror=alert(1)>'
XSS_BODY = ('Hallo,\n<script>alert("body")</script>\n<img src=x onerror="alert(2)">\n'
            '<a href="javascript:alert(3)">klick</a>\n')
XSS_HTML = ('<p onclick="alert(4)">Hallo</p><script>alert(5)</script>'
            '<img src="https://tracker.example/p.gif" onerror="alert(6)">'
            '<a href="javascript:alert(7)">klick</a><a href="https://ok.example/">ok</a>'
            '<style>body{background:url(https://tracker.example/bg)}</style>')


def make_user(db: Database, name: str = "anna", role: str = "staff",
              password: str = PASSWORD) -> int:
    return users.add_user(db, name, role, password, "test")


def web_app(settings, db: Database, people: dict[str, str] | None = None, **options):
    """The web app on the test database with its users (name -> role; default anna, staff,
    and root, admin) and settings ``options`` set."""
    from email_rag.web import create_app

    for name, value in options.items():
        setattr(settings, name, value)
    settings.web_secret_key = type(settings.web_secret_key)("test-secret")
    for name, role in (people or {"anna": "staff", "root": "admin"}).items():
        make_user(db, name, role)
    return create_app(settings)


@contextmanager
def browsers(app, log_in: bool) -> Iterator:
    """``new(name)`` opens a browser (its own cookie jar) on ``app``; with ``log_in`` it is
    logged in as ``name`` (default anna) and carries its CSRF token as ``.csrf``."""
    from fastapi.testclient import TestClient

    opened: list[TestClient] = []

    def new(name: str = "anna") -> TestClient:
        c = TestClient(app, base_url="http://testserver", client=LOOPBACK)
        c.__enter__()
        opened.append(c)
        if log_in:
            c.csrf = login(c, name)
        return c

    try:
        yield new
    finally:
        for c in opened:
            c.__exit__(None, None, None)


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m, "no CSRF token in the page"
    return m.group(1)


def login(client, name: str = "anna", password: str = PASSWORD) -> str:
    """Log in through the form; returns the session's CSRF token."""
    token = csrf_of(client.get("/login").text)
    r = client.post("/login", data={"name": name, "password": password, "csrf_token": token,
                                    "next": "/queue"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return csrf_of(client.get("/queue").text)


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        if tag == "script" and d.get("src") != "/static/app.js":
            self.problems.append(f"script element {attrs}")
        if tag in ("img", "iframe", "object", "embed", "style", "base", "meta") and \
                not (tag == "meta" and set(d) <= {"charset", "name", "content"}):
            self.problems.append(f"{tag} element {attrs}")
        if tag == "form" and not (d.get("action") or "").startswith("/"):
            self.problems.append(f"foreign form {attrs}")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"event handler {name} on {tag}")
            if name in ("href", "src", "action") and value and \
                    value.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
                self.problems.append(f"{name}={value} on {tag}")
            if name == "style":
                self.problems.append(f"style attribute on {tag}")


def assert_inert(html: str) -> None:
    """No executable or loading markup from mail content survived on the page: the only
    script is our own file, no element has an event handler, no javascript: URL, no image,
    frame or style element."""
    scan = _Scan()
    scan.feed(html)
    assert scan.problems == [], scan.problems


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebBase(str):
    """The base URL of a served web UI; ``.pid`` is its process."""

    pid: int

    def __new__(cls, url: str, pid: int) -> WebBase:
        self = super().__new__(cls, url)
        self.pid = pid
        return self


@contextmanager
def serve_web(env: dict, cwd: Path) -> Iterator[str]:
    """The real `python -m email_rag web` on a free port; yields its base URL."""
    port = free_port()
    log_path = cwd / f"web-{port}.log"
    log = log_path.open("w")
    proc = subprocess.Popen([sys.executable, "-m", "email_rag", "web", "--host", "127.0.0.1",
                             "--port", str(port)], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=cwd)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a hang, not a slow start on a busy CI machine
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("web server did not start: " + log_path.read_text())
        time.sleep(0.1)
    try:
        yield WebBase(base, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


FIELDS = re.compile(r"%\(\w+\)s|%s|\{\w*\}")


@cache
def english_texts() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The UI's English texts whose German differs (from the German catalog): the pieces of
    several words between their placeholders, and the one-word texts."""
    from babel.messages.pofile import read_po

    from email_rag.web import i18n

    with i18n.catalog_path("de").open("rb") as f:
        catalog = read_po(f, locale="de")
    phrases, words = set(), set()
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, (list, tuple)) else (message.id,)
        german = " ".join(message.string if isinstance(message.string, (list, tuple))
                          else (message.string,))
        for english in ids:
            for piece in FIELDS.split(english):
                piece = piece.strip(" .,:;()–—·-")
                if not piece or piece in german or not re.search(r"[A-Za-z]{2}", piece):
                    continue
                if " " in piece:
                    phrases.add(piece)
                elif piece == english.strip(" .,:;()…"):
                    words.add(piece)
    return tuple(sorted(phrases)), tuple(sorted(words))


def english_in(shown: str, data_words: tuple[str, ...] = ()) -> list[str]:
    """The UI's English texts in ``shown`` (a page's text as a reader sees it), each with
    some context; ``data_words`` are the page's data that happen to spell such a word."""
    phrases, words = english_texts()
    found = [re.escape(p) for p in phrases if p in shown]
    found += [rf"(?<![\w-]){re.escape(w)}(?![\w-])" for w in words  # Reply-To is no "To"
              if w not in data_words]
    return [shown[max(m.start() - 30, 0):m.end() + 30] for pattern in found  # with context
            for m in re.finditer(pattern, shown)]


class _Shown(HTMLParser):
    """A page's text as a reader sees it: its text (not scripts, styles or the editor's
    content, which is the reply) and its placeholders, tooltips and screen-reader labels."""

    SKIP = {"script", "style", "textarea"}

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skipping += 1
        self.parts += [v for k, v in attrs if k in ("placeholder", "title", "aria-label") and v]

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append(data)


def shown_text(html: str) -> str:
    parser = _Shown()
    parser.feed(html)
    return "\n".join(" ".join(p.split()) for p in parser.parts if p.strip())
