"""``email-rag web [--host H] [--port P]``: serve the web UI with uvicorn.

One process; FastAPI runs each request in a thread with its own MariaDB
connection. Put it behind a TLS-terminating proxy in production and set
EMAIL_RAG_WEB_TRUSTED_PROXIES (the proxy's address), EMAIL_RAG_WEB_HTTPS=required and
EMAIL_RAG_WEB_SECRET_KEY (docs/web.md, Security).
"""

from __future__ import annotations

from .output import ExitCode, Outcome


def register(sub, common) -> None:
    p = sub.add_parser("web", parents=[common], help="serve the web UI")
    p.add_argument("--host", help="bind address (default EMAIL_RAG_WEB_HOST)")
    p.add_argument("--port", type=int, help="port (default EMAIL_RAG_WEB_PORT)")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:
    import uvicorn

    from ..web import create_app

    s = svc.settings
    host = args.host or s.web_host
    port = args.port if args.port is not None else s.web_port
    app = create_app(s)
    print(f"email-rag web UI on http://{host}:{port}/ (Ctrl+C stops)", flush=True)
    # X-Forwarded-For/-Proto only from the configured proxies: anyone else could choose the
    # client address the login throttle and the audit log see
    proxies = [p.strip() for p in s.web_trusted_proxies.split(",") if p.strip()]
    uvicorn.run(app, host=host, port=port, log_level=s.log_level.lower(), access_log=True,
                proxy_headers=bool(proxies), forwarded_allow_ips=proxies or None,
                server_header=False)
    return Outcome(ExitCode.OK, "Web UI stopped.", {"host": host, "port": port})
