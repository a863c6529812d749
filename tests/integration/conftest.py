"""Fixtures the review-desk tests share; a test module that needs other users or settings
defines its own ``app`` (and ``client``), which take precedence."""

from __future__ import annotations

import pytest

from tests.webutil import browsers, web_app


@pytest.fixture
def app(settings, db):
    """The web app with anna (staff) and root (admin)."""
    return web_app(settings, db)


@pytest.fixture
def client(app):
    """``client(name="anna")``: a logged-in browser with its CSRF token as ``.csrf``."""
    with browsers(app, log_in=True) as new:
        yield new
