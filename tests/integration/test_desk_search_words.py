"""The queue search's word pattern (review/fulltext.py) against the real FULLTEXT index: the
pattern accepts what the index finds for a word (tokens, prefixes, case and accents, ß and
ss, stopwords, the longest token), never a mail the index does not find, and the narrow
plan (the index's result) and the broad plan (the pattern only) list the same drafts for
every one of these words."""

from __future__ import annotations

import pytest

from email_rag.review import fulltext, queue
from email_rag.review.queue import QueueQuery, fulltext_query, search_words
from tests.factories import make_draft, make_email

PEOPLE = {"anna": "staff", "bob": "staff", "carl": "staff", "root": "admin"}

TEXTS = {
    "kuendigung": "Kündigung zum Monatsende", "strasse": "Strasse 5", "strasze": "Straße 7",
    "capital_sz": "GRÜẞE", "gruesse": "Grüsse", "with": "with love", "with_accent": "Wïth care",
    "there": "there it is", "too_long": "pre" + "a" * 90, "longest": "abc" + "d" * 81,
    "one_over": "abx" + "d" * 82, "underscore": "foo_bar baz-qux", "apostrophe": "don't o'neil",
    "combining": "e\u0301tude", "astral": "a\U0001d400rechnung", "middot": "x\u00b7rechnung",
    "ligature": "\ufb01nance", "ij": "\u0133ssel", "greek": "Ωmega", "cjk": "日本語テキスト",
    "greek_run": "αβγδεζ", "dotted": "İstanbul", "dotless": "ıstakoz", "digits": "Bestellung 4711",
    "superscript": "abc²rechnung", "mixed": "Rechnung und Lieferung", "cyrillic": "ѓеле",
    "cyrillic_base": "Гелий", "fullwidth": "ＡＢＣＤ",
}
SEARCHES = ["kundigung", "kündigung", "KÜNDIG", "strasse", "straße", "stras", "grüß", "grüs",
            "grusse", "gru", "wit", "with", "the", "there", "preaaa", "abcddd", "abxddd",
            "foo_bar", "bar", "baz", "qux", "neil", "don", "tude", "étude", "rechnung",
            "finance", "ijssel", "ωmeg", "ΩMEGA", "日本語", "βγδ", "istanbul", "istakoz", "4711",
            "kunde3", "example", "com", "etude", "abcd", "гел", "ѓел", "ГЕЛ", "Rechnung Lieferung", "Lieferung Drucker", "mega"]
# found by the index through what the pattern does not model (review/fulltext.py): a
# ligature or ĳ as its letters, full-width letters, a letter outside the BMP as a separator
NOT_MODELLED = {"finance": {"ligature"}, "ijssel": {"ij"}, "rechnung": {"astral"},
                "abcd": {"fullwidth"}}


@pytest.fixture
def mails(db, team) -> dict[str, int]:
    support, _ = team
    return {name: make_email(db, support, subject="x", body=text, from_addr="kunde3@example.com")
            for name, text in TEXTS.items()}


def _found(db, mails, statement: str, value: str) -> set[str]:
    names = {v: k for k, v in mails.items()}
    return {names[r["id"]] for r in db.fetchall(statement, {"v": value})}


def _by_index(db, mails, search: str) -> set[str]:
    return _found(db, mails, "SELECT id FROM emails WHERE MATCH(subject, from_addr, from_name, "
                  "body_text) AGAINST (%(v)s IN BOOLEAN MODE)", fulltext_query(search))


def _by_pattern(db, mails, search: str) -> set[str]:
    return _found(db, mails, "SELECT id FROM emails WHERE CONCAT_WS(' ', subject, from_addr, "
                  "from_name, body_text) REGEXP %(v)s", fulltext.pattern(search_words(search)))


def test_the_pattern_accepts_what_the_index_finds(db, mails):
    """GIVEN mails with accents, ß and ss, stopwords, long tokens, separators and other
    scripts WHEN each word is searched THEN the pattern accepts exactly the mails the index
    finds, but for the expansions it does not model, which it never accepts."""
    for search in SEARCHES:
        index, pattern = _by_index(db, mails, search), _by_pattern(db, mails, search)
        assert pattern == index - NOT_MODELLED.get(search, set()), (search, index, pattern)
    assert _by_index(db, mails, "kundigung") == {"kuendigung"}  # the edges are real
    assert _by_index(db, mails, "grüs") == {"gruesse"} and _by_index(db, mails, "stras") == {
        "strasse", "strasze"}
    assert _by_index(db, mails, "wit") == {"with_accent"}
    assert "too_long" not in _by_index(db, mails, "preaaa")
    assert _by_index(db, mails, "abcddd") == {"longest"} and not _by_index(db, mails, "abxddd")
    for search, names in NOT_MODELLED.items():
        assert names <= _by_index(db, mails, search), search


def test_each_accented_form_is_its_letter_in_the_collation(db):
    """The letters the pattern lets stand for a letter (either case) equal it in the
    columns' collation (utf8mb4_unicode_ci): the pattern never accepts what the index
    would not."""
    pairs = [(form, base) for base, forms in fulltext.FORMS.items() for f in forms
             for form in {f, f.upper(), f.lower()}]
    assert len(pairs) > 500
    for start in range(0, len(pairs), 200):
        chunk = pairs[start:start + 200]
        tests = ", ".join("CONVERT(%s USING utf8mb4) COLLATE utf8mb4_unicode_ci = %s"
                          for _ in chunk)
        row = db.fetchone(f"SELECT CONCAT_WS(',', {tests}) AS same",
                          [v for pair in chunk for v in pair])
        unequal = [p for p, same in zip(chunk, row["same"].split(","), strict=True)
                   if same != "1"]
        assert not unequal, unequal


@pytest.mark.parametrize("sort", ["waiting", "priority"])
def test_both_plans_list_the_same_drafts_for_every_word(services, db, mails, monkeypatch, sort):
    """Each word searched in the queue as a narrow search (the index's result) and as a
    broad one (the count's cap at 0: the sort order walked, the pattern only): the same
    drafts in the same order - the index's matches the pattern accepts."""
    drafts = {name: make_draft(db, email) for name, email in mails.items()}
    names = {v: k for k, v in drafts.items()}
    for search in SEARCHES:
        query = QueueQuery(search=search, sort=sort)
        narrow = [names[r.id] for r in queue.queue_page(services, None, query, limit=100).rows]
        monkeypatch.setattr(queue, "COUNT_CAP", 0)
        broad = queue.queue_page(services, None, query, limit=100)
        monkeypatch.setattr(queue, "COUNT_CAP", 1000)
        assert [names[r.id] for r in broad.rows] == narrow, search
        assert broad.capped == bool(narrow), search
        expected = _by_index(db, mails, search) - NOT_MODELLED.get(search, set())
        assert set(narrow) == expected, search
