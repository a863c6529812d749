"""An IMAP proxy that withholds chosen server responses (tests and chaos runs only).

Client -> server bytes pass unchanged; server -> client responses are reassembled
(lines and ``{n}`` literals) and some are dropped:
- ``hide``: an untagged ``* n FETCH (UID u ...)`` response while ``u`` is in ``hide`` - a
  server hiccup the poller must survive (SEARCH lists the UID, the FETCH has no body);
- ``mute_idle``: every untagged response while the connection is IDLE (after the ``+``
  continuation, until the next tagged response) - a server that stops sending IDLE
  notifications without closing the connection; commands are still answered, so only
  the safety poll and the re-issue can find new mail.
"""

from __future__ import annotations

import re
import socket
import threading

_LITERAL = re.compile(rb"\{(\d+)\+?\}$")
_FETCH_UID = re.compile(rb"^\* \d+ FETCH \(.*?\bUID (\d+)", re.I)


class ImapHidingProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.hide: set[int] = set()
        self.mute_idle = False
        self.hidden = 0  # responses dropped so far
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        try:
            self._listener.close()
        except OSError:
            pass

    def __enter__(self) -> ImapHidingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._filter, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def _filter(self, src: socket.socket, dst: socket.socket) -> None:
        buf = b""
        idling = False
        try:
            while data := src.recv(65536):
                buf += data
                while (end := _response_end(buf)) is not None:
                    response, buf = buf[:end], buf[end:]
                    if response.startswith(b"+"):
                        idling = True
                    elif not response.startswith(b"*"):
                        idling = False  # a tagged response ends IDLE (or any command)
                    elif idling and self.mute_idle:
                        self.hidden += 1
                        continue
                    m = _FETCH_UID.match(response)
                    if m and int(m.group(1)) in self.hide:
                        self.hidden += 1
                        continue
                    dst.sendall(response)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass


def _response_end(buf: bytes) -> int | None:
    """Where the first complete response in ``buf`` ends (after its CRLF), or None."""
    pos = 0
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol == -1:
            return None
        m = _LITERAL.search(buf, pos, eol)
        if m is None or m.end() != eol:
            return eol + 2
        pos = eol + 2 + int(m.group(1))
        if pos > len(buf):
            return None
