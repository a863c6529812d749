"""The labelled draft sets (harness bench/labelled/*/, format in its README.md): every set
folder present passes the loader's checks, and the loader lists a labelling mistake instead
of running on it (a row per situation of testing/labelled.py's failure table)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from email_rag_harness.bench.quality_drafts import DEFAULT_SET
from email_rag_harness.testing.labelled import (
    GROUPS,
    LANGUAGES,
    SetError,
    load_set,
    set_folders,
    shape_problems,
)

LABELLED = DEFAULT_SET.parent


def test_kaffeewerk_is_there_and_is_found_as_a_set():
    assert DEFAULT_SET in set_folders(LABELLED)


@pytest.mark.parametrize("folder", set_folders(LABELLED), ids=lambda p: p.name)
def test_every_set_passes_its_checks(folder):
    """GIVEN a set folder THEN its counts per group and language, its sources and every fact
    of its past_reply/article mails (found in the source's text) hold."""
    s = load_set(folder)
    groups = Counter(m.group for m in s.mails)
    assert set(groups) <= set(GROUPS) and all(groups[g] for g in GROUPS), groups
    assert all(Counter(m.language for m in s.mails)[lang] for lang in LANGUAGES)
    for m in s.mails:
        if m.group in ("past_reply", "article"):
            text = "\n".join(s.source_text(x) or "" for x in m.source)
            assert all(f.found_in(text) for f in m.facts), m.id


def test_kaffeewerk_has_the_shape_the_brief_asks():
    s = load_set(DEFAULT_SET)
    assert shape_problems(s) == []
    groups = Counter(m.group for m in s.mails)
    assert len(s.mails) >= 64 and len(s.articles) >= 18 and len(s.history) >= 56
    assert len(s.saved_replies) >= 6
    assert groups["past_reply"] >= 20 and groups["article"] >= 20
    assert groups["no_source"] >= 14 and groups["no_reply"] >= 6
    suffixes = {Path(a.path).suffix for a in s.articles}
    assert {".md", ".html", ".txt"} <= suffixes
    # honest: every past reply used as a source carries a case event the set marks wrong
    for m in s.mails:
        if m.group == "past_reply":
            reply = s.source_text(m.source[0]) or ""
            assert any(w.found_in(reply) for w in m.wrong), m.id


@pytest.fixture
def copy(tmp_path):
    target = tmp_path / "set"
    shutil.copytree(DEFAULT_SET, target)
    return target


def _rewrite(path: Path, change) -> None:
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    change(items)
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items))


def test_a_fact_missing_from_its_source_is_named(copy):
    def change(items):
        items[0]["facts"][0] = ["7,50"]  # m01's gift wrap fee mistyped
    _rewrite(copy / "mails.jsonl", change)
    with pytest.raises(SetError) as e:
        load_set(copy)
    assert e.value.problems == ["mail m01: fact [7,50] is in none of its sources"]


def test_a_source_that_does_not_exist_and_a_wrong_group_are_listed_together(copy):
    def change(items):
        items[20]["source"] = ["knowledge/retouren.md"]
        items[40]["group"] = "unanswerable"
        items[1]["wrong"] = []
    _rewrite(copy / "mails.jsonl", change)
    with pytest.raises(SetError) as e:
        load_set(copy)
    text = str(e.value)
    assert "mail m21: source 'knowledge/retouren.md' does not exist" in text
    assert "group 'unanswerable' not one of" in text
    assert "mail m02: a past_reply mail needs at least one wrong fact" in text


def test_a_line_that_is_not_json_and_too_few_mails_are_named_by_file_and_line(copy):
    lines = (copy / "mails.jsonl").read_text().splitlines()
    (copy / "mails.jsonl").write_text("\n".join(lines[:50] + ["{not json"]) + "\n")
    with pytest.raises(SetError) as e:
        load_set(copy)
    assert "mails.jsonl:51: not JSON" in str(e.value)
    (copy / "mails.jsonl").write_text("\n".join(lines[:50]) + "\n")
    assert "mails: 50, at least 60 needed" in shape_problems(load_set(copy))


def test_an_article_format_that_is_not_one_and_a_missing_set_toml(copy, tmp_path):
    (copy / "knowledge" / "notes.rtf").write_text("{\\rtf1 x}")
    with pytest.raises(SetError) as e:
        load_set(copy)
    assert "knowledge/notes.rtf: not an article format" in str(e.value)
    with pytest.raises(SetError, match="no set.toml"):
        load_set(tmp_path)


def test_errors_name_files_and_ids_never_the_mail_text(copy):
    def change(items):
        items[0]["facts"][0] = ["Rachel Green's secret"]
    _rewrite(copy / "mails.jsonl", change)
    with pytest.raises(SetError) as e:
        load_set(copy)
    assert "Christmas present" not in str(e.value) and "rachel.green@" not in str(e.value)


def test_only_picks_mails_and_refuses_unknown_ids():
    s = load_set(DEFAULT_SET)
    assert [m.id for m in s.only(["m21", "m01"])] == ["m21", "m01"]
    with pytest.raises(SetError, match="m99"):
        s.only(["m01", "m99"])
