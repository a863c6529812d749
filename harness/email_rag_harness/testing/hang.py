"""Servers that misbehave at the TCP level (tests and chaos runs only).

- ``HangingServer``: accepts every connection and never answers a byte (a
  server that hangs); clients must time out.
- ``closed_port()``: a loopback port nothing listens on (connection refused).
"""

from __future__ import annotations

import socket
import threading


def closed_port() -> int:
    """A port that was free a moment ago; connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HangingServer:
    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = int(self._sock.getsockname()[1])
        self.connections = 0
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._held.append(conn)  # read nothing, answer nothing
                self.connections += 1

    def close(self) -> None:
        with self._lock:
            self._closed = True
            held, self._held = self._held, []
        for c in held:
            try:
                c.close()
            except OSError:
                pass
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def __enter__(self) -> HangingServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
