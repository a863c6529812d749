"""The queue search's word pattern (review/fulltext.py) as text: what it is built from.
Whether it accepts what the FULLTEXT index finds is checked against the real index in
tests/integration/test_desk_search_words.py."""

from __future__ import annotations

from email_rag.review import fulltext
from email_rag.review.queue import QueueQuery


def test_no_word_no_pattern():
    assert fulltext.pattern([]) is None
    assert QueueQuery(search="ab c").params(None)["pattern"] is None


def test_a_searched_word_is_a_token_start_in_any_case_and_accent():
    one = fulltext.pattern(["Kündigung"])
    assert one.startswith("(?i)(?<![") and "ü" in one and "ù" in one and "K" not in one
    assert one.endswith("{0,75}(?![" + fulltext.WORD_CLASS + "])")  # 84 characters at most
    both = fulltext.pattern(["Rechnung", "4711"])
    assert both.startswith("(?is)^(?=.*?") and both.count("(?=.*?") == 2


def test_ss_and_a_last_s_also_match_sharp_s_and_capital_sharp_s_only_itself():
    assert fulltext.pattern(["strasse"]).count("|(?-i:ß))") == 1
    assert fulltext.pattern(["straße"]).count("|(?-i:ß))") == 1
    assert fulltext.pattern(["grüs"]).count("|(?-i:ß))") == 1
    assert "(?-i:ẞ)" in fulltext.pattern(["grüẞe"])


def test_a_stopword_is_skipped_only_where_the_word_could_start_one():
    assert "(?!(?:with)(?![" in fulltext.pattern(["wit"])
    assert "(?!(?:the)(?![" in fulltext.pattern(["the"])
    assert "(?!(?:when|where)(?![" in fulltext.pattern(["whe"])
    assert "(?!(?:" not in fulltext.pattern(["Rechnung"])


def test_letters_the_collation_does_not_fold_match_only_themselves():
    assert fulltext.pattern(["日本語"]) == "(?i)(?<![" + fulltext.WORD_CLASS + "])" + \
        "(?-i:日)(?-i:本)(?-i:語)" + "[" + fulltext.WORD_CLASS + "]{0,81}(?![" + \
        fulltext.WORD_CLASS + "])"
    assert "ѓ" not in fulltext.pattern(["где"])  # a Cyrillic letter with a mark is its own


def test_a_cyrillic_letter_with_a_mark_is_not_its_base_letter():
    assert "г" not in fulltext.pattern(["ѓде"]) and "ѓ" in fulltext.pattern(["ѓде"])
