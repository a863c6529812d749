"""The draft page says where the mail's classification came from (issue 27)."""

from __future__ import annotations

import html as htmllib
import json
import re

import pytest

from tests.factories import make_draft, make_email, make_mailbox
from tests.webutil import browsers, web_app


@pytest.fixture
def client(settings, db):
    with browsers(web_app(settings, db, {"anna": "staff"}), log_in=True) as new:
        yield new


def test_the_draft_page_shows_the_decision_source_of_each_field(client, db):
    """GIVEN a mail whose category the team's examples decided WHEN staff open its draft
    THEN the page says so, with the number of examples and how sure."""
    sources = {"category": {"source": "history", "confidence": 0.93, "examples": 12},
               "priority": {"source": "llm", "confidence": None},
               "needs_reply": {"source": "history", "confidence": 0.97, "examples": 12},
               "language": {"source": "identifier", "confidence": 1.0}}
    email = make_email(db, make_mailbox(db), category="billing", priority="normal",
                       needs_reply=1, language="de", classification_sources=json.dumps(sources))
    page = client("anna").get(f"/drafts/{make_draft(db, email)}").text
    line = htmllib.unescape(re.search(r'id="decision">([^<]*)<', page).group(1))
    assert "category billing — from 12 team examples, 93 % sure" in line
    assert "priority normal — from the model" in line


def test_a_mail_classified_before_sources_were_stored_shows_no_line(client, db):
    page = client("anna").get(f"/drafts/{make_draft(db, make_email(db, make_mailbox(db)))}").text
    assert 'id="decision"' not in page
