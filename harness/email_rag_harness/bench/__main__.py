"""The one entry point of the benchmarks: ``python -m bench NAME [--mails N] [--json]``
(also ``email-rag bench NAME ...``, the same code).

Each benchmark measures the project next to a bare script doing the same I/O in the
same run, and reports the ratio: absolute rates on a shared machine are noise. Each
run uses its own fresh database, a claimed Redis db and a temp folder, and removes
them at the end. Before it reports a figure it checks its own result (every mail
exactly once, every draft sent once); a wrong run exits 3 with what was wrong.

Exit codes: 0 figures reported (targets met or not: see the table), 1 the run broke,
3 its correctness check failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from email_rag.cli.output import ExitCode, Outcome

BENCHMARKS = {
    "ingest": ("email_rag_harness.bench.ingest", "the poller vs bare FETCH + INSERT; peak RSS by mailbox size"),
    "history": ("email_rag_harness.bench.history", "history import of older mail + Sent replies vs bare "
                "same I/O; index rate; time to 50,000 searchable"),
    "worker": ("email_rag_harness.bench.worker", "the worker fleet vs a bare RQ job doing the same writes"),
    "llm-bound": ("email_rag_harness.bench.llm_bound", "LLM at 500 ms per call: throughput by worker count"),
    "send": ("email_rag_harness.bench.send", "the send job vs a bare smtplib loop"),
    "index": ("email_rag_harness.bench.index_speed", "index and search speed (hashing or local model)"),
    "quality": ("email_rag_harness.bench.quality", "model quality on the labelled corpus: accuracy per field, "
                "JSON validity, retrieval hit@k, latency"),
    "web": ("email_rag_harness.bench.web", "the review desk with 10,000 pending drafts: server-side p50 of the "
                         "queue and draft pages, first contentful paint"),
    "latency": ("email_rag_harness.bench.latency", "time from APPEND to draft_ready, IMAP IDLE vs polling, "
                "scripted LLM at 0 ms and at --latency-ms"),
    "runtime": ("email_rag_harness.bench.runtime", "llama-server builds and flags: CPU seconds per classify and "
                "draft call (--other-server PATH adds e.g. a native build)"),
    "llm": ("email_rag_harness.bench.llm_speed", "model seconds per drafted mail with the real model: "
            "before (main 0e96d7f) / now / now+draft (speculative decoding), from llama-server's "
            "timings (--configurations, --runs)"),
    "hops": ("email_rag_harness.bench.hops", "module boundaries one mail crosses: poller -> draft, approval "
                           "-> send (sys.setprofile)"),
    "scale": ("email_rag_harness.bench.scale", "cost by mailbox size (1,000 / 10,000 mails): local Qdrant "
              "search, hybrid retrieval, queue claim per operation, and memory"),
    "knowledge": ("email_rag_harness.bench.knowledge", "knowledge import (passages/s), unchanged "
                  "re-import and search p50 over generated articles"),
    "mime": ("email_rag_harness.bench.pathological", "pathological mails (20,000 parts, 2 MB HTML, deep "
                                   "nesting): seconds per pipeline step"),
}


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas: {text!r}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", choices=sorted(BENCHMARKS), metavar="NAME",
                   help="; ".join(f"{k}: {v[1]}" for k, v in BENCHMARKS.items()))
    p.add_argument("--mails", type=int, default=None,
                   help="how many mails/drafts (defaults: ingest 10000, worker 2000, "
                        "llm-bound 24, send 500, index 300, web 10000)")
    p.add_argument("--processes", type=_ints, default=None, metavar="1,2",
                   help="worker processes per measured run (worker: 1,2; llm-bound: 1,2,4,8)")
    p.add_argument("--runs", type=int, default=None,
                   help="ingest: alternating runs, best kept (default 3; 1 when --mails < 1000); "
                        "llm: repeats of every configuration (default 1; 3 give the noise)")
    p.add_argument("--latency-ms", type=float, default=None,
                   help="llm-bound: scripted LLM latency per call (default 500); latency: the "
                        "realistic LLM latency of the second pair of runs (default 1000)")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="ingest: one more poll under cProfile; worker: run the project's workers under cProfile, keep the .prof "
                        "files in DIR and list the top functions per mail")
    p.add_argument("--interval-ms", type=float, default=None,
                   help="latency: one APPEND every this many ms (default 3000)")
    p.add_argument("--poll-seconds", type=int, default=None,
                   help="latency: poll interval of the polling runs (default 60)")
    p.add_argument("--memory-sizes", type=_ints, default=None, metavar="1000,10000",
                   help="ingest: mailbox sizes of the peak-RSS runs (default 1000,10000); "
                        "scale: the mailbox sizes (default 1000,10000)")
    p.add_argument("--statements", action="store_true",
                   help="hops: list every MariaDB statement and commit of both legs, with the "
                        "step or function that sent it")
    p.add_argument("--batch", type=int, default=200, help="ingest: UIDs per FETCH (default 200)")
    p.add_argument("--worker-class", choices=("simple", "fork"), default="simple",
                   help="RQ worker class of project and bare workers (default simple)")
    p.add_argument("--backend", default="hashing", help="index: embedding backend")
    p.add_argument("--with-vectors", action="store_true",
                   help="history: index with the real embedder (local USE multilingual) "
                        "instead of the hashing test embedder")
    p.add_argument("--skip-bare", action="store_true",
                   help="history: no bare same-I/O run (no ratio; for the 50,000-mail "
                        "time to searchable)")
    p.add_argument("--index-batch", type=int, default=None,
                   help="history: mails per index job (default: the setting, 128)")
    p.add_argument("--llm", choices=("local", "configured", "scripted"), default="local",
                   help="quality: the local model (started here), the configured endpoint, "
                        "or the scripted test double (smoke only)")
    p.add_argument("--configurations", default=None, metavar="before,now,now+draft",
                   help="llm: which configurations, in this order (default all three)")
    p.add_argument("--other-server", default=None, metavar="PATH",
                   help="runtime: another llama-server binary to compare (e.g. a native build)")
    p.add_argument("--retrieval-only", action="store_true",
                   help="quality: only retrieval (vectors, lexical, fused hit@1/hit@3 on the "
                        "whole corpus); no LLM is started")
    p.add_argument("--drafts", action="store_true",
                   help="quality: the drafts on a labelled set judged by their facts "
                        "(--set, --only, --keep, --verbose; bench/quality_drafts.py)")
    p.add_argument("--set", default=None, metavar="PATH",
                   help="quality --drafts: the labelled set's folder (default "
                        "bench/labelled/kaffeewerk)")
    p.add_argument("--only", default=None, metavar="m01,m02",
                   help="quality --drafts: only these mails of the set")
    p.add_argument("--keep", action="store_true",
                   help="quality --drafts: keep the run's database and temp folder")
    p.add_argument("--verbose", action="store_true",
                   help="quality --drafts: a row per mail besides the groups")
    p.add_argument("--compare", nargs=2, default=None, metavar=("A.json", "B.json"),
                   help="quality: two saved `--drafts --json` outputs side by side")
    p.add_argument("--learning-curve", action="store_true",
                   help="quality: only the learning curve on the held-out split (accuracy "
                        "with 0/25/50/100 labelled examples; --mails: held-out mails)")
    p.add_argument("--points", type=_ints, default=None, metavar="0,25,50,100",
                   help="quality: examples learned at each point of the learning curve")


def execute(args: argparse.Namespace) -> Outcome:
    module = importlib.import_module(BENCHMARKS[args.name][0])
    from .common import CheckFailed

    try:
        report = module.run(args)
    except CheckFailed as e:
        return Outcome(ExitCode.VERIFY_FAILED,
                       f"{args.name}: the run's own correctness check FAILED: {e}\n"
                       "No speed is reported for a wrong run. Its database and Redis db were "
                       "removed; run again, and look at the pipeline if it repeats.",
                       {"bench": args.name, "error": "check_failed", "detail": str(e)})
    except KeyboardInterrupt:
        return Outcome(ExitCode.ERROR, f"{args.name}: interrupted; everything it made was removed.",
                       {"bench": args.name, "error": "interrupted"})
    except Exception as e:  # noqa: BLE001 - a broken run says why, and cleaned up
        traceback.print_exc(file=sys.stderr)
        return Outcome(ExitCode.ERROR,
                       f"{args.name}: the run broke ({type(e).__name__}: {e}); nothing is "
                       "reported. Its database, Redis db and temp folder were removed.",
                       {"bench": args.name, "error": type(e).__name__, "detail": str(e)})
    return Outcome(ExitCode.OK, report.summary, report.data(), report.text())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="email-rag bench", description=__doc__.split("\n")[0])
    add_arguments(p)
    p.add_argument("--json", action="store_true", help="the same figures as one JSON object")
    args = p.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return execute(args).render(args.json)


if __name__ == "__main__":
    raise SystemExit(main())
