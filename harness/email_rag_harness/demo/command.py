"""``email-rag demo``: the main job end to end with the local defaults (see email_rag_harness.testing.demo)."""

from __future__ import annotations

import sys

from email_rag.cli.output import ExitCode, Outcome, table

from ..testing.demo import DEMO_DB, run_demo


def register(sub, common) -> None:
    p = sub.add_parser("demo", parents=[common], help="run the whole pipeline on sample mail")
    p.add_argument("--database", default=DEMO_DB,
                   help=f"database to (re)create for the demo (default {DEMO_DB})")
    p.add_argument("--scripted", action="store_true",
                   help="use the scripted LLM TEST DOUBLE (canned answers, seconds) instead of "
                        "the local model: for fast development runs, not a demo of the model")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    quiet = getattr(args, "json", False)
    data = run_demo(svc.settings, database=args.database, scripted=args.scripted,
                    say=(lambda *_: None) if quiet else
                    (lambda line: print(line, file=sys.stdout, flush=True)))
    rows = data["mails"]
    ok = data["received"] == 1 and data["drafts"] >= 1
    text = "\n7. every mail (llm_s: seconds of LLM calls for it):\n" + table(
        rows, ["id", "status", "category", "language", "draft", "flags", "send", "llm_s",
               "subject"])
    text += (f"\n\nThe sample questions the drafts answer with every labelled fact: "
             f"{data['questions_answered']} of {data['questions']} (the facts of each: "
             "bench/labelled/kaffeewerk/mails.jsonl)")
    text += (f"\n\nLLM: {data['llm']}\nper mail that went through the LLM: "
             f"{data['llm_seconds_per_mail']} s of LLM calls ({data['mails_with_llm']} mails); "
             f"the worker took {data['worker_seconds']} s for all mails.")
    text += (f"\n\nOpen the result in the web UI:\n"
             f"  EMAIL_RAG_DB_NAME={args.database} email-rag users add admin --role admin\n"
             f"  EMAIL_RAG_DB_NAME={args.database} email-rag web   # then http://127.0.0.1:8080/")
    if ok:
        return Outcome(ExitCode.OK, "Demo finished: the approved reply was received exactly once.",
                       data, text)
    return Outcome(ExitCode.VERIFY_FAILED, "Demo finished but the approved reply was not received "
                   "exactly once; see the table and the worker log in " + data["work_dir"],
                   data, text)
