"""A small TCP fault proxy for connection-level faults (tests and chaos runs only).

Put it in front of a service (MariaDB, IMAP, Qdrant...) and:
- ``down()``: close every connection and refuse new ones (service outage);
- ``up()``: accept again on the same port;
- ``sever()``: drop the current connections but keep accepting (connections killed);
- ``cut_after(n)``: the next connections are dropped after n bytes from the server
  (e.g. an IMAP server gone mid-FETCH);
- ``silence()``: the server's bytes are held back on every connection (current and new)
  while the connections stay open - a server that hangs without closing (e.g. an IDLE
  connection that stops answering); ``speak()`` lets the held bytes through again;
- ``blackhole(match)``: the connections whose client address ``match``es (open ones and
  new ones) forward nothing in either direction and stay open - one client's link that
  stops answering while every other client is served; ``blackhole(None)`` ends it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

Peer = tuple[str, int]


class TcpFaultProxy:
    def __init__(self, target_host: str, target_port: int, listen_port: int = 0) -> None:
        self.target = (target_host, target_port)
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._cut_after: int | None = None
        self._listener: socket.socket | None = None
        self.port = listen_port
        self.connections = 0
        self._speaking = threading.Event()
        self._speaking.set()
        self._peers: set[Peer] = set()  # client addresses of the open connections
        self._match: Callable[[Peer], bool] | None = None
        self._held: set[Peer] = set()  # blackholed client addresses
        self.up()

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def up(self) -> None:
        with self._lock:
            if self._listener is not None:
                return
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self.port))
            sock.listen(64)
            self.port = sock.getsockname()[1]
            self._listener = sock
        threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        self.sever()

    def sever(self) -> None:
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:
            _close(c)

    def cut_after(self, n_bytes: int | None) -> None:
        self._cut_after = n_bytes

    def silence(self) -> None:
        self._speaking.clear()

    def speak(self) -> None:
        self._speaking.set()

    def blackhole(self, match: Callable[[Peer], bool] | None) -> list[Peer]:
        """Hold every byte of the connections whose client address ``match``es (checked once
        per connection: the open ones now, new ones when accepted); None lets them flow
        again. Returns the client addresses held now."""
        with self._lock:
            self._match = match
            peers = list(self._peers)
        held = {p for p in peers if match(p)} if match is not None else set()
        with self._lock:
            self._held = held
        return sorted(held)

    @property
    def silent(self) -> bool:
        return not self._speaking.is_set()

    def close(self) -> None:
        self.down()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, peer = listener.accept()
            except OSError:
                return
            peer = (str(peer[0]), int(peer[1]))
            match = self._match
            if match is not None and match(peer):
                with self._lock:
                    self._held.add(peer)
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            for s in (client, upstream):  # no Nagle: request/answer protocols (MariaDB,
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # IMAP) stall on it
            with self._lock:
                if self._listener is not listener:
                    _close(client)
                    _close(upstream)
                    return
                self._conns |= {client, upstream}
                self._peers.add(peer)
                self.connections += 1
            limit = self._cut_after
            threading.Thread(target=self._pipe, args=(client, upstream, None, False, peer),
                             daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, limit, True, peer),
                             daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, limit: int | None,
              from_server: bool = False, peer: Peer | None = None) -> None:
        sent = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                while from_server and not self._speaking.wait(0.1):
                    if dst.fileno() == -1:  # severed while silent
                        return
                while peer in self._held:
                    if dst.fileno() == -1:  # severed while held
                        return
                    time.sleep(0.1)
                if limit is not None and sent + len(data) >= limit:
                    dst.sendall(data[: max(0, limit - sent)])
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)
                if peer is not None:
                    self._peers.discard(peer)
                    self._held.discard(peer)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
