"""CLI tables fit the terminal: the columns named in ``fit`` are cut, the others never."""

from email_rag.cli.output import table


def test_fit_columns_are_cut_to_the_width_and_lines_carry_no_trailing_blanks():
    rows = [{"id": 1, "subject": "Rechnung " + "x" * 500, "from_addr": "a@example.org"},
            {"id": 22, "subject": "kurz\nzweite Zeile", "from_addr": "b@example.org"}]
    text = table(rows, ["id", "from_addr", "subject"], fit=("from_addr", "subject"), width=60)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 60 and len(lines) == 3
    assert lines[1].endswith("…") and "a@example.org" in lines[1]
    assert lines[2].endswith("kurz zweite Zeile")  # a newline in a cell never breaks a row
    assert all(line == line.rstrip() for line in lines)


def test_without_fit_nothing_is_cut():
    rows = [{"id": 1, "subject": "x" * 300}]
    assert "x" * 300 in table(rows, ["id", "subject"])
