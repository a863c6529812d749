"""``email-rag bench llm``: the figures per drafted mail and per configuration come from
llama-server's timings of every call (no model here: synthetic answers; the real run is
the bench itself)."""

from __future__ import annotations

from email_rag_harness.bench.llm_speed import (
    as_run,
    figures,
    interleaved,
    quality,
    quality_over_runs,
    verdict,
)
from email_rag_harness.bench.quality_drafts import DEFAULT_SET
from email_rag_harness.testing.labelled import load_set


def _call(prompt_n: int, cache_n: int, predicted_n: int, prompt_ms: float, predicted_ms: float,
          **extra: int) -> dict:
    return {"duration_ms": prompt_ms + predicted_ms + 100, "outcome": "ok",
            "timings": {"prompt_n": prompt_n, "cache_n": cache_n, "predicted_n": predicted_n,
                        "prompt_ms": prompt_ms, "predicted_ms": predicted_ms, **extra}}


def test_model_seconds_count_every_call_and_are_divided_by_the_drafted_mails():
    """GIVEN one run: a mail classified and drafted (2 + 3 model seconds) and one that took no
    reply (1 model second) THEN 6 model seconds for 1 drafted mail, 600 mails an hour, and the
    per-mail figures sum the mail's own calls (read + cached prompt tokens)."""
    run = {"mails": [
        {"classify": [_call(100, 400, 20, 1500, 500)],
         "draft": [_call(300, 0, 60, 1000, 2000, draft_n=80, draft_n_accepted=60)]},
        {"classify": [_call(50, 400, 20, 500, 500)], "draft": None}]}
    f = figures("now", [run])
    assert f["model_seconds_per_drafted_mail"] == 6.0 and f["drafted_mails_per_hour"] == 600.0
    assert f["drafted_mails"] == 1 and f["calls"] == 3
    assert f["prompt_tokens"]["total"] == 800 and f["cached_tokens"]["total"] == 400
    assert f["generated_tokens"]["total"] == 80 and f["model_s"]["total"] == 5.0
    assert f["draft_acceptance"] == 0.75
    assert f["tg_tokens_per_s"] == round(100 / 3.0, 1)


def test_each_run_is_a_figure_of_its_own_for_the_noise():
    one = {"mails": [{"classify": [_call(10, 0, 10, 1000, 1000)], "draft": [_call(10, 0, 10, 0, 0)]}]}
    two = {"mails": [{"classify": [_call(10, 0, 10, 2000, 2000)], "draft": [_call(10, 0, 10, 0, 0)]}]}
    f = figures("before", [one, two])
    assert f["model_seconds_runs"] == [2.0, 4.0] and f["model_seconds_per_drafted_mail"] == 3.0
    assert figures("x", [{"mails": []}])["model_seconds_per_drafted_mail"] is None


def test_the_mails_come_from_every_group_in_turn():
    s = load_set(DEFAULT_SET)
    first = interleaved(s, 8)
    groups = [next(m.group for m in s.mails if m.id == i) for i in first]
    assert len(first) == 8 and set(groups[:4]) == {"past_reply", "article", "no_source",
                                                    "no_reply"}
    assert len(interleaved(s, None)) == len(s.mails)


def test_a_labelled_run_is_read_as_calls_per_mail_and_its_quality():
    """GIVEN a labelled-set run: a mail drafted with no model call (a source carried as
    written), one adapted, one that took no reply THEN the draft calls are those of the
    drafted mails (none for the first), and the quality is weighted over the answered groups."""
    found = {"mails": [{"id": "m01", "drafted": True}, {"id": "m02", "drafted": True},
                       {"id": "m03", "drafted": False}],
             "llm_attempts": {"m01": [{"task": "classify", **_call(10, 0, 5, 100, 100)}],
                              "m02": [{"task": "classify", **_call(10, 0, 5, 100, 100)},
                                      {"task": "adapt", **_call(20, 0, 30, 200, 900)}],
                              "m03": [{"task": "classify", **_call(10, 0, 5, 100, 100)}]},
             "groups": {"past_reply": {"mails": 2, "mean_fact_recall": 1.0,
                                       "all_facts_share": 1.0, "drafts_with_wrong_fact": 0,
                                       "wrong_language": 0},
                        "article": {"mails": 2, "mean_fact_recall": 0.5,
                                    "all_facts_share": 0.0, "drafts_with_wrong_fact": 1,
                                    "wrong_language": 1}}}
    run = as_run(found)
    assert [m["draft"] is None for m in run["mails"]] == [False, False, True]
    assert run["mails"][0]["draft"] == [] and len(run["mails"][1]["draft"]) == 1
    assert figures("now", [run])["model_seconds_per_drafted_mail"] == round(1.7 / 2, 2)
    assert quality(found) == {"fact_recall": 0.75, "all_facts_share": 0.5, "wrong_facts": 1,
                              "wrong_language": 1}


def test_quality_is_the_mean_of_the_runs_and_the_noise_their_range():
    runs = [{"fact_recall": 0.8, "all_facts_share": 0.6, "wrong_facts": 1, "wrong_language": 0},
            {"fact_recall": 0.7, "all_facts_share": 0.5, "wrong_facts": 3, "wrong_language": 0},
            {"fact_recall": 0.9, "all_facts_share": 0.7, "wrong_facts": 2, "wrong_language": 0}]
    q = quality_over_runs(runs)
    assert q["fact_recall"] == 0.8 and q["all_facts_share"] == 0.6 and q["wrong_facts"] == 2.0
    assert q["noise"] == {"fact_recall": 0.2, "all_facts_share": 0.2, "wrong_facts": 2,
                          "wrong_language": 0}
    assert quality_over_runs([{"fact_recall": None, "all_facts_share": None,
                               "wrong_facts": 0, "wrong_language": 0}])["fact_recall"] is None


def test_a_figure_is_worse_only_beyond_the_noise_of_both_configurations():
    """GIVEN before and now with their runs' noise THEN a recall lower by less than the larger
    noise is within the noise, lower by more is worse; more wrong facts beyond the noise is
    worse; a better figure is never worse; with one run each (noise 0) any step counts."""
    before = {"fact_recall": 0.0, "all_facts_share": 0.0, "wrong_facts": 0.0,
              "wrong_language": 0.0, "noise": {"fact_recall": 0.0, "all_facts_share": 0.0,
                                               "wrong_facts": 0, "wrong_language": 0}}
    now = {"fact_recall": 0.8, "all_facts_share": 0.6, "wrong_facts": 1.5, "wrong_language": 0.0,
           "noise": {"fact_recall": 0.1, "all_facts_share": 0.1, "wrong_facts": 2,
                     "wrong_language": 0}}
    v = verdict(before, now)
    assert v["fact_recall"] == "better" and v["all_facts_share"] == "better"
    assert v["wrong_facts"] == "within the noise" and v["wrong_language"] == "same"
    worse = {**now, "wrong_facts": 2.5}
    assert verdict(before, worse)["wrong_facts"] == "worse"
    assert verdict(now, {**now, "fact_recall": 0.75})["fact_recall"] == "within the noise"
    assert verdict(now, {**now, "fact_recall": 0.65})["fact_recall"] == "worse"
