"""`email-rag bench quality --drafts` end to end on the scripted double: four mails of the
kaffeewerk set (one per group) through the real history import, poll and worker processes;
the report's structure, and the judge's figures against drafts the test scripted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from email_rag_harness.bench.quality_drafts import run_set

from tests.helpers import ROOT

ONLY = ["m09", "m22", "m46", "m56"]  # past_reply, article, no_source, no_reply
# m09 asks to cancel order 41502: a draft with the policy (both facts) and another
# customer's event (order 40418, a wrong fact); m46 (wrong coffee, no source) a draft that
# promises a refund and a day
M09 = ("Hallo Sven,\n\nstornieren können Sie, solange die Bestellung nicht Versandbereit ist, "
       "meist bis 14:00 Uhr am Bestelltag. Die Bestellung 40418 ist storniert.\n\n"
       "Ihr Kaffeewerk-Kundenservice")
M46 = ("Hello Noah,\n\nsorry about that. We will refund your order on Friday.\n\n"
       "Your Kaffeewerk customer service")
PLAN = {"rules": [{"fault": "answer", "kind": "draft", "match": "41502", "content": M09},
                  {"fault": "answer", "kind": "draft", "match": "Yirgacheffe", "content": M46}]}


@pytest.fixture(scope="module")
def result():
    return run_set(None, "scripted", ONLY, False, db_prefix="erag_t_db_", scripted_plan=PLAN,
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


def test_the_judges_figures_match_the_scripted_drafts(result):
    mails = {m["id"]: m for m in result["mails"]}
    m09, m22, m46, m56 = (mails[i] for i in ONLY)
    # the scripted answer's text is the draft's body (the product frames greeting and sign-off)
    assert M09.split("\n\n")[1] in m09["draft"]
    assert m09["drafted"] and m09["recall"] == 1.0 and m09["all_facts"] is True
    assert m09["wrong_found"] == ["40418", "haben wir storniert | wurde storniert | ist storniert"]
    assert m09["draft_language"] == "de" and not m09["wrong_language"]
    # the double's own template for m22 holds none of the shipping facts, and defers
    assert m22["drafted"] and m22["recall"] == 0.0 and m22["missing"]
    assert m46["drafted"] and m46["promises"] == ["Friday", "We will refund"]
    assert m46["asks_or_defers"] is False
    assert m56["mail_status"] in ("no_reply", "no_reply_suggested") and not m56["drafted"]
    g = result["groups"]
    assert g["past_reply"]["drafts_with_wrong_fact"] == 1
    assert g["no_source"]["drafts_with_promise"] == 1 and g["no_source"]["ask_defer_share"] == 0.0
    assert g["no_reply"]["drafted_share"] == 0.0
    assert g["article"]["mean_fact_recall"] == 0.0


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
    assert line.split()[-2:] == ["0.0", "0.75"], cmp.stdout
