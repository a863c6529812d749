"""The benchmark entry point: a wrong run is a failure with its reason, never a figure."""

from __future__ import annotations

import argparse
import sys
import types

import pytest
from email_rag_harness.bench import __main__ as entry
from email_rag_harness.bench.common import CheckFailed, Report, Target, percentile


@pytest.fixture
def fake_bench(monkeypatch):
    module = types.ModuleType("bench_fake")
    monkeypatch.setitem(sys.modules, "bench_fake", module)
    monkeypatch.setitem(entry.BENCHMARKS, "worker", ("bench_fake", "fake"))
    return module


def args(**kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    entry.add_arguments(p)
    return p.parse_args(["worker", *[f"--{k}={v}" for k, v in kw.items()]])


def test_a_run_whose_check_fails_exits_3_and_reports_no_figure(fake_bench):
    def run(a):
        raise CheckFailed("job 7 ran twice")

    fake_bench.run = run
    out = entry.execute(args())
    assert int(out.exit_code) == 3
    assert "job 7 ran twice" in out.message and "No speed is reported" in out.message
    assert out.data == {"bench": "worker", "error": "check_failed", "detail": "job 7 ran twice"}


def test_a_broken_run_exits_1_and_a_good_one_0_with_table_and_figures(fake_bench):
    fake_bench.run = lambda a: (_ for _ in ()).throw(RuntimeError("worker died"))
    broken = entry.execute(args())
    assert int(broken.exit_code) == 1 and "worker died" in broken.message

    fake_bench.run = lambda a: Report("worker", "fast enough", ["run", "ratio"],
                                      [{"run": "project", "ratio": 0.6}], {"ratio": 0.6},
                                      [Target("ratio >= 0.5", 0.6, 0.5)], ["all done"])
    good = entry.execute(args(mails=5))
    assert int(good.exit_code) == 0
    assert good.data["ratio"] == 0.6 and good.data["targets"][0]["met"] is True
    assert "target ratio >= 0.5: 0.6 -> met" in good.text


def test_options_and_percentiles():
    a = args(processes="1,2,4")
    assert a.processes == [1, 2, 4] and a.mails is None
    with pytest.raises(SystemExit):
        args(processes="one")
    assert percentile([5.0], 50) == 5.0 and percentile([], 95) is None
    assert percentile([1, 2, 3, 4, 100], 50) == 3
    assert Target("p50 < 25", 30.0, 25.0, higher_is_better=False).met is False


@pytest.mark.parametrize("per_mail", [0.0, 0.93, 1.94, 6.9, 24.2, 19.35])
def test_the_bare_same_io_jobs_make_the_counted_io_per_mail_in_sum(per_mail):
    """N jobs of the bare same-I/O baseline make N times a per-mail count (rounded): a
    fraction such as 0.93 vector searches per mail is spread over the jobs, never dropped."""
    from email_rag_harness.bench.bare import spread

    for n in (1, 7, 100, 2040):
        made = [spread(per_mail, job) for job in range(1, n + 1)]
        assert sum(made) == round(n * per_mail)
        assert all(int(per_mail) <= k <= int(per_mail) + 1 for k in made)
