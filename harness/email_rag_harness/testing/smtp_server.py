"""A fault-injecting SMTP server (aiosmtpd) for tests, the chaos harness and the demo.

Labelled as what it is: a local test relay. It records every message it
accepts (the ground truth for "was it received, how often") and can inject
faults per message by a plan: answer 421/451/550 at MAIL, RCPT or DATA, drop
the connection, or accept the message and then stall past the client's
timeout (the message WAS received; the client cannot know).

Like relays that file what they send (Exchange, Gmail), it can append each
accepted message to an IMAP folder (``file_to``), which is what the sender's
reconciliation searches.

Run standalone: ``python -m email_rag_harness.testing.smtp_server --port 0 --record FILE``
(prints ``SMTP 127.0.0.1:PORT`` on its first line; one JSON line per message in FILE).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd logs every command at INFO


@dataclass
class Fault:
    """One injected fault. ``stage``: mail, rcpt or data. ``action``: an SMTP reply line
    like '451 4.3.0 try later', 'drop' (close the connection), or 'stall' (data stage only:
    accept and record the message, then wait ``seconds`` before answering 250)."""

    action: str
    stage: str = "data"
    times: int = 1  # how many messages it applies to
    seconds: float = 5.0
    tag: str = ""  # free label, handed to ``on_fault`` (e.g. the chaos harness's "kill")


@dataclass
class Received:
    message_id: str
    mail_from: str
    rcpt_tos: list[str]
    data: bytes
    at: float = field(default_factory=time.time)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Handler:
    def __init__(self, server: FaultSmtpServer) -> None:
        self.server = server

    def _fault(self, stage: str, session: Any = None) -> Fault | None:
        fired = None
        with self.server.lock:
            for f in self.server.faults:
                if f.stage == stage and f.times > 0:
                    f.times -= 1
                    self.server.injected.append(f"{stage}:{f.action}")
                    fired = f
                    break
        if fired is not None and self.server.on_fault is not None:
            self.server.on_fault(fired, getattr(session, "peer", None))
        return fired

    async def _apply(self, server: Any, fault: Fault) -> str | None:
        if fault.action == "drop":
            server.transport.close()
            return "421 4.4.2 connection dropped"  # never seen by the client
        return fault.action

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        fault = self._fault("mail", session)
        if fault:
            return await self._apply(server, fault)
        envelope.mail_from = address
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        fault = self._fault("rcpt", session)
        if fault:
            return await self._apply(server, fault)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        fault = self._fault("data", session)
        if fault and fault.action != "stall":
            return await self._apply(server, fault)
        data = envelope.original_content or envelope.content
        if isinstance(data, str):
            data = data.encode()
        self.server.record(envelope.mail_from, list(envelope.rcpt_tos), data)
        if fault:  # stall: the message is accepted; the answer comes too late
            await asyncio.sleep(fault.seconds)
        return "250 2.0.0 Ok: queued"


class FaultSmtpServer:
    def __init__(self, port: int = 0, record_path: Path | None = None,
                 file_to: Callable[[bytes], None] | None = None,
                 on_fault: Callable[[Fault, Any], None] | None = None) -> None:
        """``on_fault(fault, peer)``: called when a fault fires, with the client's
        (host, port) - e.g. to find and kill the process holding that connection."""
        self.port = port or free_port()
        self.on_fault = on_fault
        self.lock = threading.Lock()
        self.faults: list[Fault] = []
        self.injected: list[str] = []
        self.received: list[Received] = []
        self.record_path = record_path
        self.file_to = file_to
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port,
                                      decode_data=False)

    @property
    def relay_env(self) -> dict[str, str]:
        """The environment that makes this double email-rag's global relay. It speaks no TLS,
        so plaintext is configured explicitly ('auto' would require STARTTLS)."""
        return {"EMAIL_RAG_SMTP_HOST": "127.0.0.1", "EMAIL_RAG_SMTP_PORT": str(self.port),
                "EMAIL_RAG_SMTP_SECURITY": "plain"}

    def start(self) -> FaultSmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def __enter__(self) -> FaultSmtpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_fault(self, action: str, stage: str = "data", times: int = 1,
                  seconds: float = 5.0, tag: str = "") -> None:
        with self.lock:
            self.faults.append(Fault(action, stage, times, seconds, tag))

    def record(self, mail_from: str, rcpt_tos: list[str], data: bytes) -> None:
        msg = email.message_from_bytes(data, policy=email.policy.compat32)
        item = Received(str(msg.get("Message-ID", "")).strip(), mail_from, rcpt_tos, data)
        with self.lock:
            self.received.append(item)
        if self.record_path is not None:
            with self.record_path.open("a") as f:
                f.write(json.dumps({"message_id": item.message_id, "mail_from": mail_from,
                                    "rcpt_tos": rcpt_tos, "at": item.at,
                                    "data": data.decode("utf-8", "replace")}) + "\n")
        if self.file_to is not None:
            self.file_to(data)

    def count(self, message_id: str) -> int:
        with self.lock:
            return sum(1 for r in self.received if r.message_id == message_id)


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--record", type=Path)
    args = p.parse_args()
    server = FaultSmtpServer(args.port, args.record).start()
    print(f"SMTP 127.0.0.1:{server.port}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
