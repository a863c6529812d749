"""``email-rag chaos`` (``python -m email_rag_harness.chaos``): the whole real pipeline under a seeded fault plan, and the defect table.

By default two columns run one after the other on the same corpus and plan:
``hardened`` (the pipeline as in production) and ``naive`` (the harness's
counter-check, harness/email_rag_harness/chaos/naive.py: no dedup, no claim check, no step
idempotency, no reconciliation, no approval lock). ``--naive`` runs only the
naive column (does the harness see the defects?), ``--hardened-only`` only the
hardened one (does the pipeline keep its promises?). ``--print-plan`` prints the plan and exits (edit it and
pass it back with ``--plan FILE``).

The result is a run record (email_rag/core/run_result.py) like every long command's; its
items are the columns (with ``--seeds``: the seeds). Exit codes by its end state: 0
completed (every column that ran passed: hardened, zeros where zeros are promised; naive,
every defect class shown); 3 verification_failed; 2 interrupted (SIGTERM / Ctrl-C: every
process stopped and its database dropped; ``next`` runs what was not finished: a column
is run again from its start, ``--seeds`` continues at the seed in hand); 1 the harness
could not run (missing service, bad plan).
"""

from __future__ import annotations

import logging
import sys

from email_rag.cli.output import ExitCode, Outcome, Parser, UsageError, common_parser, table
from email_rag.core.run_result import EndState, RunResult

log = logging.getLogger(__name__)


def build_parser() -> Parser:
    from .plan import FAULTS

    p = Parser(prog="email-rag chaos", parents=[common_parser()],
               description="Drive the real pipeline under a seeded fault plan; print the "
                           "defect table (hardened and naive columns).",
               epilog="Faults a plan may hold: " + ", ".join(FAULTS) + " (oauth_token: the "
                      "OAuth2 token endpoint of the run's mailbox down or answering "
                      "invalid_grant for a while). See docs/chaos.md.")
    p.add_argument("--mails", type=int, default=60, help="generated mails (default 60)")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=int, default=1, help="seed of corpus and plan (default 1)")
    seeds.add_argument("--seeds", type=_seed_range, metavar="A-B",
                       help="run every seed from A to B (e.g. 1-20), one after another, and "
                            "report per seed; exit 0 only if every seed passed")
    p.add_argument("--plan", metavar="FILE", help="fault plan JSON (default: from seed and mails)")
    cols = p.add_mutually_exclusive_group()
    cols.add_argument("--naive", action="store_true",
                      help="run only the naive column (safeguards off)")
    cols.add_argument("--hardened-only", action="store_true",
                      help="run only the hardened column")
    p.add_argument("--counter-checks", action="store_true",
                   help="also run the plan once per safeguard with only that one removed "
                        "(idempotency keys, claim fence, reconciliation before resend, "
                        "dedup): a column each, to show what each safeguard prevents")
    p.add_argument("--keep", action="store_true",
                   help="keep each run's folder (process logs, plan) for inspection")
    p.add_argument("--print-plan", action="store_true", help="print the plan JSON and exit")
    return p


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(raw)
    except UsageError as e:
        return Outcome(ExitCode.ERROR, f"Usage error: {e}. Nothing was done.\n{e.usage.strip()}",
                       {"error": "usage", "detail": str(e)}).render("--json" in raw)
    from email_rag.core.settings import get_settings

    logging.basicConfig(level=get_settings().log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        outcome = run(args)
    except KeyboardInterrupt:  # before any column started (each column says its own)
        outcome = Outcome.of(columns_record(_modes(args), {}, again(args), interrupted=True),
                             INTERRUPTED)
    return outcome.render(getattr(args, "json", False))


INTERRUPTED = "Interrupted. Every process the harness started was stopped and its database " \
    "dropped."


def again(args, seeds: list[int] | None = None) -> str | None:
    """The command that runs this one again (``seeds``: only those; None when they are no
    one range)."""
    words = ["email-rag chaos"]
    if getattr(args, "plan", None):
        words.append(f"--plan {args.plan}")
    else:
        words.append(f"--mails {args.mails}")
    seeds = seeds if seeds is not None else getattr(args, "seeds", None)
    if not seeds or len(seeds) == 1:
        words.append(f"--seed {seeds[0] if seeds else args.seed}")
    elif seeds == list(range(seeds[0], seeds[-1] + 1)):
        words.append(f"--seeds {seeds[0]}-{seeds[-1]}")
    else:
        return None
    words += [flag for flag, on in (("--naive", args.naive),
                                    ("--hardened-only", args.hardened_only),
                                    ("--counter-checks", args.counter_checks),
                                    ("--keep", args.keep)) if on]
    return " ".join(words)


def _modes(args) -> list[str]:
    modes = ["naive"] if args.naive else ["hardened"] if args.hardened_only else \
        ["hardened", "naive"]
    if args.counter_checks:  # hardened except one safeguard each, beside the others
        from .harness import COUNTER_CHECKS

        modes = [m for m in modes if m == "hardened"] + list(COUNTER_CHECKS) + \
            [m for m in modes if m == "naive"]
    return modes


def columns_record(modes: list[str], results: dict, next_cmd: str | None,
                   interrupted: bool = False) -> RunResult:
    """One run's record: a column passed when its verdict holds (hardened: zeros where
    zeros are promised and settled; naive: every defect class shown; a counter-check
    column is a figure, it passes); columns not run are remaining."""
    from .report import verdict

    failed = [m for m, r in results.items() if not verdict({m: r})[0]]
    done = len(results) - len(failed)
    return RunResult.decide(
        processed=done, failed=len(failed), remaining=len(modes) - len(results),
        verified=None if interrupted else not failed, interrupted=interrupted, item="column",
        next=next_cmd if interrupted or failed else None,
        what=("Processing interrupted: the column in hand was stopped." if interrupted else
              f"Column(s) failing their verdict: {', '.join(failed)}." if failed else
              "Every column keeps its verdict."),
        safe="State is safe: every process the harness started was stopped and its database "
             "dropped; a column is run again from its start.")


def _seed_range(text: str) -> list[int]:
    import argparse

    try:
        a, _, b = text.partition("-")
        first, last = int(a), int(b or a)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected A-B, e.g. 1-20") from None
    if first < 0 or last < first:
        raise argparse.ArgumentTypeError(f"{text!r}: expected A-B with 0 <= A <= B")
    return list(range(first, last + 1))


def run(args) -> Outcome:
    if getattr(args, "seeds", None):
        if args.plan or args.print_plan:
            return Outcome(ExitCode.ERROR, "--seeds takes no --plan or --print-plan: each seed "
                           "makes its own plan.", {"error": "usage"})
        return run_seeds(args)
    return run_one(args)


def run_seeds(args) -> Outcome:
    """Every seed in turn; one line per seed, the verdict over all of them."""
    rows, per_seed = [], {}
    for seed in args.seeds:
        args.seed = seed
        print(f"chaos: seed {seed} of {args.seeds[0]}-{args.seeds[-1]}", file=sys.stderr,
              flush=True)
        outcome = run_one(args)
        if outcome.result is not None and outcome.result.status == EndState.INTERRUPTED:
            left = [s for s in args.seeds if s >= seed]
            return Outcome.of(seeds_record(args, rows, left), f"seed {seed}: {INTERRUPTED}",
                              {"seeds": per_seed, "interrupted_seed": seed})
        if outcome.exit_code == ExitCode.ERROR:
            return Outcome(ExitCode.ERROR, f"seed {seed}: {outcome.message}",
                           {"seeds": per_seed, "failed_seed": seed})
        columns = outcome.data.get("columns", {})
        verdict = outcome.data.get("verdict", {})
        per_seed[seed] = {"ok": bool(verdict.get("ok")), "reasons": verdict.get("reasons", []),
                          "columns": columns,
                          "seconds": {m: r.get("seconds") for m, r in
                                      outcome.data.get("runs", {}).items()}}
        h = columns.get("hardened", {})
        rows.append({"seed": seed, "verdict": "pass" if verdict.get("ok") else "FAIL",
                     "settled": "no" if h.get("not_settled") else "yes",
                     "crashes": h.get("server_crashes", ""),
                     "longest_down_s": h.get("longest_outage_s", ""),
                     "admin_acts": h.get("admin_actions", ""),
                     "kills": h.get("hard_kills", ""), "replies": h.get("replies_received", ""),
                     "unknown": h.get("unknown_sends", ""),
                     "seconds": per_seed[seed]["seconds"].get("hardened", ""),
                     "why": "; ".join(verdict.get("reasons", []))[:160]})
    failed = [r["seed"] for r in rows if r["verdict"] != "pass"]
    text = table(rows, ["seed", "verdict", "settled", "crashes", "longest_down_s", "admin_acts",
                        "kills", "replies", "unknown", "seconds", "why"])
    data = {"seeds": per_seed, "failed": failed}
    record = seeds_record(args, rows, [])
    if failed:
        return Outcome.of(record, f"Verification FAILED for seed(s) {failed} of {len(rows)}.",
                          data, text)
    return Outcome.of(record, f"Verification passed for all {len(rows)} seeds.", data, text)


def seeds_record(args, rows: list[dict], left: list[int]) -> RunResult:
    """The record over seeds: a seed passed or failed its verdict; ``left``: the seeds not
    finished when the run was interrupted (``next`` continues with them)."""
    failed = [r["seed"] for r in rows if r["verdict"] != "pass"]
    interrupted = bool(left)
    return RunResult.decide(
        processed=len(rows) - len(failed), failed=len(failed), remaining=len(left),
        verified=None if interrupted else not failed, interrupted=interrupted, item="seed",
        next=again(args, left) if left else again(args, failed) if failed else None,
        what=(f"Processing interrupted at seed {left[0]}." if left else
              f"Seed(s) failing their verdict: {failed}." if failed else
              "Every seed keeps its verdict."),
        safe="State is safe: every process the harness started was stopped and its database "
             "dropped.")


def run_one(args) -> Outcome:
    from . import plan as chaos_plan

    try:
        plan = chaos_plan.load(args.plan) if args.plan else \
            chaos_plan.default_plan(args.mails, args.seed)
    except chaos_plan.PlanError as e:
        return Outcome(ExitCode.ERROR, f"Fault plan refused: {e}. Nothing was run.",
                       {"error": "plan", "detail": str(e)})
    if args.print_plan:
        return Outcome(ExitCode.OK, "", {"plan": plan}, chaos_plan.dumps(plan))
    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd: every SMTP line
    _sigterm_interrupts()
    modes = _modes(args)

    from email_rag.core.errors import EmailRagError

    from ..testing.dovecot import Dovecot
    from ..testing.oauth_server import TokenServer
    from .harness import TOKEN_LIFETIME_S, HarnessError, Shared, run_mode
    from .report import render

    # the mailbox logs in by OAuth2 (XOAUTH2): Dovecot checks each bearer token at the
    # harness's own token server, which the plan's oauth_token faults take down
    tokens = TokenServer(lifetime=TOKEN_LIFETIME_S).start()
    try:
        dovecot = Dovecot(introspection_url=tokens.url + "/introspect").start()
    except EmailRagError as e:
        tokens.stop()
        return Outcome(ExitCode.ERROR, f"Cannot start the private Dovecot: {e}. Nothing was run.",
                       {"error": "dovecot", "detail": str(e)})
    results = {}
    try:
        shared = Shared.build(plan, dovecot, tokens)
        for mode in modes:
            log.info("chaos: %s column, %d mails, seed %d", mode, plan["mails"], plan["seed"])
            print(f"chaos: running the {mode} column ({plan['mails']} mails, seed "
                  f"{plan['seed']})...", file=sys.stderr, flush=True)
            results[mode] = run_mode(plan, mode, shared, keep=args.keep)
    except (HarnessError, EmailRagError) as e:
        return Outcome(ExitCode.ERROR, f"The chaos harness failed: {type(e).__name__}: {e}. "
                       "Every process it started was stopped and its database dropped.",
                       {"error": type(e).__name__, "detail": str(e),
                        "columns": {m: r.figures for m, r in results.items()}})
    except KeyboardInterrupt:  # the column in hand cleaned up after itself
        return Outcome.of(columns_record(modes, results, again(args), interrupted=True),
                          INTERRUPTED, {"columns": {m: r.figures for m, r in results.items()}})
    finally:
        dovecot.stop()
        tokens.stop()
    duplicates = sum(1 for m in shared.mails if m.deliveries > 1)
    text, data, ok, reasons = render(plan, results, len(shared.raws), duplicates)
    record = columns_record(modes, results, again(args))
    if ok:
        message = ("Verification passed: " + "; ".join(
            ["hardened: zero where zero is promised" if "hardened" in results else "",
             "naive: every defect class shows" if "naive" in results else ""]).strip("; ")
            + ". Each run's database was dropped and its Redis db released.")
        return Outcome.of(record, message, data, text)
    return Outcome.of(record, "Verification FAILED: " + "; ".join(reasons)
                      + ". See the findings above; a hardened defect is a bug in the pipeline.",
                      data, text)


def _sigterm_interrupts() -> None:
    """SIGTERM stops a run like Ctrl-C: every process stopped, database dropped, Redis freed."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
