"""`email-rag bench quality --drafts` end to end on the scripted double: four mails of the
kaffeewerk set (one per group) through the real history import, knowledge import, poll and
worker processes; the report's structure, and the judge's figures against the drafts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from email_rag_harness.bench.quality_drafts import DEFAULT_SET, run_set

from tests.helpers import ROOT

ONLY = ["m09", "m22", "m46", "m56"]  # past_reply, article, no_source, no_reply


@pytest.fixture(scope="module")
def result():
    return run_set(None, "scripted", ONLY, False, db_prefix="erag_t_db_",
                   say=lambda text: None)


def test_the_report_has_the_run_the_groups_and_a_row_per_mail(result):
    assert {"set", "date", "machine", "groups", "mails"} <= set(result)
    assert result["set"] == "kaffeewerk" and result["llm"] == "scripted"
    assert set(result["groups"]) == {"past_reply", "article", "no_source", "no_reply"}
    assert [m["id"] for m in result["mails"]] == ONLY
    steps = result["steps"]
    assert steps["history"]["stored"] == 112 and steps["history"]["not_indexed"] == 0
    assert steps["mails"]["final"] is True, steps["mails"]
    assert steps["saved_replies"] == 6
    assert steps["knowledge"]["status"] in ("ok", "not available")
    for g in result["groups"].values():
        assert g["mails"] == 1 and g["model_seconds_per_mail"] >= 0


def test_the_judges_figures_match_the_drafts_the_product_wrote(result):
    """The judge's figures per mail are those of the draft's text against the set's labels
    (facts and wrong facts found, normalised), and the drafts follow retrieve-then-adapt: the
    mail no source answers gets the honest reply (asks or defers, promises nothing), the
    newsletter-like spam none."""
    from email_rag_harness.testing.labelled import load_set

    labels = {m.id: m for m in load_set(DEFAULT_SET).mails}
    for m in result["mails"]:
        if not m["drafted"]:
            continue
        facts = labels[m["id"]].facts
        found = [str(f) for f in facts if f.found_in(m["draft"])]
        assert m["found"] == found, m["id"]
        if facts:
            assert m["recall"] == round(len(found) / len(facts), 3)
        assert m["wrong_found"] == [str(f) for f in labels[m["id"]].wrong
                                    if f.found_in(m["draft"])]
    mails = {m["id"]: m for m in result["mails"]}
    assert mails["m46"]["drafted"] and mails["m46"]["asks_or_defers"]
    assert mails["m46"]["promises"] == []
    assert mails["m56"]["mail_status"] in ("no_reply", "no_reply_suggested")
    assert not mails["m56"]["drafted"]
    g = result["groups"]
    assert g["no_source"]["drafts_with_promise"] == 0 and g["no_source"]["ask_defer_share"] == 1.0
    assert g["no_reply"]["drafted_share"] == 0.0


def test_json_is_one_object_and_the_cli_compares_two_saved_runs(result, tmp_path):
    """GIVEN the run's result rendered as `--json` prints it THEN one object with set, date,
    machine, groups and mails; `bench quality --compare A.json B.json` prints both side by
    side (from files: no database)."""
    import io

    from email_rag_harness.bench.quality_drafts import report

    from email_rag.cli.output import ExitCode, Outcome

    rep = report(result, verbose=True)
    buf = io.StringIO()
    Outcome(ExitCode.OK, rep.summary, rep.data(), rep.text()).render(True, buf)
    out = json.loads(buf.getvalue())
    assert {"set", "date", "machine", "groups", "mails"} <= set(out["data"])
    assert "m09" in rep.text() and "past_reply" in rep.text()
    (tmp_path / "a.json").write_text(buf.getvalue())
    better = json.loads(json.dumps(out["data"]))
    better["groups"]["article"]["mean_fact_recall"] = 0.75
    (tmp_path / "b.json").write_text(json.dumps(better))
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'harness'}", "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    cmp = subprocess.run([sys.executable, "-m", "email_rag_harness.bench", "quality", "--compare",
                          str(tmp_path / "a.json"), str(tmp_path / "b.json")], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=120)
    assert cmp.returncode == 0, cmp.stderr[-2000:]
    line = next(x for x in cmp.stdout.splitlines()
                if x.startswith("article") and "mean_fact_recall" in x)
    before = str(result["groups"]["article"]["mean_fact_recall"])
    assert line.split()[-2:] == [before, "0.75"], cmp.stdout
