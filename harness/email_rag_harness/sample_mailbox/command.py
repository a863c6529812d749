"""``email-rag sample-mailbox``: a private Dovecot with sample support mails.

Starts (or finds running) a Dovecot instance in ``--dir`` on a free loopback
port, with one user whose INBOX holds a few sample mails (support requests,
a reply in a thread, an auto-reply, a bounce, an HTML-only mail, a mail with
an attachment), and prints the ``EMAIL_RAG_MAILBOXES`` value to poll it.
``--stop`` stops it and removes the folder. Test credentials only.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from email_rag.cli.output import ExitCode, Outcome

from ..testing.dovecot import Dovecot, DovecotUser, mailboxes_json
from ..testing.mails import sample_mails

DEFAULT_DIR = Path(f"/tmp/email-rag-sample-imap-{os.geteuid()}")
STATE_FILE = "sample-mailbox.json"
USERNAME = "support@example.com"


def register(sub, common) -> None:
    p = sub.add_parser("sample-mailbox", parents=[common],
                       help="start a private IMAP server with sample mails (for trying poll)")
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                   help=f"folder of the instance (default {DEFAULT_DIR}; must be enterable "
                        "by the user nobody, so not under /root)")
    p.add_argument("--stop", action="store_true", help="stop the instance and remove its folder")
    p.set_defaults(handler=run)


def run(args, svc) -> Outcome:  # noqa: ARG001 - needs no database
    base: Path = args.dir.resolve()
    state_path = base / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.exists() else None
    if args.stop:
        if state is None:
            return Outcome(ExitCode.OK, f"No sample mailbox at {base}; nothing to stop.",
                           {"stopped": False})
        Dovecot(base_dir=base, port=state["port"]).stop(remove=True)
        return Outcome(ExitCode.OK, f"Stopped the sample mailbox and removed {base}.",
                       {"stopped": True})
    dovecot = Dovecot(base_dir=base, port=state["port"] if state else None)
    if state and dovecot.running():
        user = DovecotUser(dovecot, state["username"], state["password"], name="sample")
        return _outcome(user, base, started=False)
    dovecot.start()
    if state is None:
        user = dovecot.add_user(USERNAME, secrets.token_hex(8), name="sample")
        user.deliver(sample_mails())
        state = {"port": dovecot.port, "username": user.username, "password": user.password}
        state_path.write_text(json.dumps(state))
        os.chmod(state_path, 0o600)
    else:
        user = DovecotUser(dovecot, state["username"], state["password"], name="sample")
        state["port"] = dovecot.port
        state_path.write_text(json.dumps(state))
    return _outcome(user, base, started=True)


def _outcome(user: DovecotUser, base: Path, started: bool) -> Outcome:
    value = mailboxes_json([user.config])
    verb = "Started" if started else "Already running:"
    msg = (f"{verb} a sample IMAP mailbox at {user.host}:{user.port} (user {user.username}, "
           f"Dovecot in {base}).\nPoll it with:\n\n"
           f"  export EMAIL_RAG_MAILBOXES='{value}'\n"
           "  email-rag migrate && email-rag poll --once\n\n"
           "Stop it with: email-rag sample-mailbox --stop")
    return Outcome(ExitCode.OK, msg, {"mailboxes": json.loads(value), "dir": str(base),
                                      "host": user.host, "port": user.port,
                                      "started": started})
