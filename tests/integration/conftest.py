"""Fixtures integration tests share: the review desk's ``app``/``client``, ``services`` on the
test's database, and the scripted LLM ``server`` with ``svc`` (Services on it). A test module that needs other users, settings
or LLM options defines its own fixture of the same name, which takes precedence."""

from __future__ import annotations

import pytest
from email_rag_harness.testing.llm_server import ScriptedLLMServer

from email_rag.wiring.services import Services
from tests.llm_support import TIMEOUT
from tests.webutil import browsers, web_app


@pytest.fixture
def app(request, settings, db):
    """The web app with the test module's ``PEOPLE`` (name -> role; default anna, staff, and
    root, admin)."""
    return web_app(settings, db, getattr(request.module, "PEOPLE", None))


@pytest.fixture
def client(app):
    """``client(name="anna")``: a logged-in browser with its CSRF token as ``.csrf``."""
    with browsers(app, log_in=True) as new:
        yield new


@pytest.fixture(scope="module")
def server():
    """The scripted LLM over HTTP, one per test module (reset for each test by ``svc``)."""
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
def services(settings):
    """Services on this test's database (no LLM server)."""
    s = Services(settings)
    yield s
    s.close()


@pytest.fixture
def svc(settings, server):
    """Services on this test's database with the scripted LLM and no retry jitter."""
    server.reset()
    settings.llm_base_url = server.url
    settings.llm_timeout = TIMEOUT
    settings.retry_jitter = 0
    s = Services(settings)
    yield s
    s.close()


@pytest.fixture
def team(db) -> tuple[int, int]:
    """The mailboxes support (anna and bob work it) and sales (carl): their ids. The module's
    ``PEOPLE`` names those users."""
    from email_rag.auth import users
    from tests.factories import make_mailbox

    support, sales = make_mailbox(db, "support"), make_mailbox(db, "sales")
    for name in ("anna", "bob"):
        users.set_mailbox(db, name, "support", True, "test")
    users.set_mailbox(db, "carl", "sales", True, "test")
    return support, sales
