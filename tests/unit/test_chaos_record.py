"""`email-rag chaos` ends with the run record of every long command (issue 43): its items
are the columns (with --seeds, the seeds), its end state decides the exit code, and an
interrupted run names what was not finished and the command that runs it."""

from __future__ import annotations

from argparse import Namespace

from email_rag_harness.chaos.command import again, build_parser, columns_record, seeds_record
from email_rag_harness.chaos.harness import COUNTER_CHECKS, ModeResult
from email_rag_harness.chaos.verify import NAIVE_MUST_SHOW, PROMISED_ZERO


def column(mode: str, broken: bool = False) -> ModeResult:
    """A column that keeps its verdict (hardened: zeros, settled; naive: every defect class
    shows), or breaks it."""
    figures = dict.fromkeys(PROMISED_ZERO, 0)
    if mode == "naive":
        figures.update(dict.fromkeys(NAIVE_MUST_SHOW, 0 if broken else 2))
    elif mode == "hardened" and broken:
        figures["duplicate_sends"] = 1
    return ModeResult(mode, figures, {}, settled=True, seconds=1.0)


def args(*argv: str) -> Namespace:
    return build_parser().parse_args(list(argv))


def test_every_column_keeping_its_verdict_is_completed_exit_0():
    r = columns_record(["hardened", "naive"], {"hardened": column("hardened"),
                                               "naive": column("naive")}, "again")
    assert (r.status, r.exit_code, r.processed, r.failed, r.remaining, r.verified, r.next) == (
        "completed", 0, 2, 0, 0, True, None)
    assert r.as_json()["attempted"] == 2 and r.as_json()["resumeAvailable"] is False


def test_a_hardened_column_breaking_a_promise_is_verification_failed_exit_3():
    r = columns_record(["hardened", "naive"], {"hardened": column("hardened", broken=True),
                                               "naive": column("naive")}, "again")
    assert (r.status, r.exit_code, r.processed, r.failed, r.verified) == (
        "verification_failed", 3, 1, 1, False)
    assert "hardened" in r.what and r.next == "again"


def test_counter_check_columns_are_figures_and_pass():
    modes = ["hardened", *COUNTER_CHECKS, "naive"]
    results = {m: column(m) for m in modes}
    assert columns_record(modes, results, "again").processed == len(modes)


def test_an_interrupted_run_counts_the_columns_not_finished_and_says_how_to_run_them():
    a = args("--mails", "30", "--seed", "4", "--counter-checks")
    modes = ["hardened", *COUNTER_CHECKS, "naive"]
    r = columns_record(modes, {"hardened": column("hardened")}, again(a), interrupted=True)
    assert (r.status, r.exit_code, r.processed, r.remaining, r.resume_available) == (
        "interrupted", 2, 1, len(modes) - 1, True)
    assert r.next == "email-rag chaos --mails 30 --seed 4 --counter-checks"
    assert r.text().splitlines()[0] == "INTERRUPTED"


def test_seeds_continue_at_the_seed_in_hand_and_failed_seeds_are_named_to_run_again():
    a = args("--seeds", "1-5", "--hardened-only")
    rows = [{"seed": 1, "verdict": "pass"}, {"seed": 2, "verdict": "FAIL"}]
    r = seeds_record(a, rows, [3, 4, 5])
    assert (r.status, r.exit_code, r.processed, r.failed, r.remaining) == (
        "interrupted", 2, 1, 1, 3)
    assert r.next == "email-rag chaos --mails 60 --seeds 3-5 --hardened-only"
    done = seeds_record(a, [*rows, *({"seed": s, "verdict": "pass"} for s in (3, 4, 5))], [])
    assert (done.status, done.exit_code, done.processed, done.failed) == (
        "verification_failed", 3, 4, 1)
    assert done.next == "email-rag chaos --mails 60 --seed 2 --hardened-only"
    apart = seeds_record(a, [{"seed": s, "verdict": "FAIL" if s in (2, 5) else "pass"}
                             for s in range(1, 6)], [])
    assert apart.failed == 2 and apart.next is None and "[2, 5]" in apart.what
