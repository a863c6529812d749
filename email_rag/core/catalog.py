"""Texts marked for the web UI's translation catalog.

A module below the web layer that words something staff read (an outcome, a rule, a
queue label) marks the text with ``N_``: it stays English where it is stored or logged,
and the web UI translates it when it shows it (``email_rag/web/babel.cfg`` lists the
modules whose marked texts are extracted)."""

from __future__ import annotations


def N_(message: str) -> str:  # noqa: N802 - the gettext convention for a marked text
    return message
