"""The transition tables of docs/states.md are the code's (email_rag/core/states.py), row for
row."""

from __future__ import annotations

from pathlib import Path

from email_rag.core.states import MOVES

STATES_DOC = Path(__file__).resolve().parents[2] / "docs" / "states.md"


def test_the_states_doc_shows_every_transition_table_row_as_in_the_code():
    text = STATES_DOC.read_text()
    for moves in MOVES.values():
        for status, nxt in moves.items():
            targets = ", ".join(f"`{x}`" for x in sorted(map(str, nxt))) or "nothing (final)"
            assert f"| `{status}` | {targets} |" in text, (status, targets)
