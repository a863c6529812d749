"""``email-rag llm serve``: the local model as a managed service (email_rag/llm/supervisor.py).

Starts llama-server with the model and flags ``scripts/local-llm/install.sh`` proved on this
CPU (the command the demo runs), waits until it answers, starts it again when it dies, and
stops it on SIGTERM/SIGINT. The port is the one ``EMAIL_RAG_LLM_BASE_URL`` names (8089 by
default), so the workers find it without another setting.

Exit codes: 0 stopped on request; 1 not installed (nothing was started).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from ..llm.local_server import LocalLLMServer, LocalModel, cache_dir
from ..llm.supervisor import Supervisor
from .output import ExitCode, Outcome, stop_on_signals


def register(sub, common) -> None:
    p = sub.add_parser("llm", parents=[common], help="the local model server")
    action = p.add_subparsers(dest="action", metavar="ACTION")
    action.required = True
    serve = action.add_parser("serve", parents=[common], help="run llama-server with the "
                              "installed model, restart it when it dies, stop it on SIGTERM")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (0.0.0.0: every interface, e.g. in a "
                       "container; default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: EMAIL_RAG_LLM_BASE_URL's, 8089)")
    serve.add_argument("--context", type=int, default=8192, help="context tokens, shared by "
                       "the slots (default 8192)")
    serve.add_argument("--parallel", type=int, default=2, help="slots (default 2: the "
                       "classification's and the draft's prompt stay cached side by side)")
    serve.add_argument("--threads", type=int, help="CPU threads (default: every core)")
    serve.add_argument("--log", type=Path, help="llama-server's log file (default "
                       "~/.cache/email-rag/llama-server.log)")
    serve.set_defaults(handler=run_serve)


def run_serve(args, svc) -> Outcome:
    port = args.port or urlsplit(svc.settings.llm_base_url).port or 8089
    server = LocalLLMServer(LocalModel.installed(), port=port, context=args.context,
                            parallel=args.parallel, threads=args.threads,
                            log=args.log or cache_dir() / "llama-server.log", host=args.host)
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        served = Supervisor(server, stop, say).run()
    finally:
        restore()
    return Outcome(ExitCode.OK, f"llama-server stopped on request after {served.starts} "
                   f"start(s) and {served.deaths} restart(s) after it died.",
                   {"url": server.url, "model": server.model_id, "starts": served.starts,
                    "deaths": served.deaths, "failed_starts": served.failed_starts,
                    "last_error": served.last_error, "log": str(server.log)})


def say(text: str) -> None:
    print(f"llm serve[{os.getpid()}]: {text}", file=sys.stderr, flush=True)
