"""IMAP adapter: the only module that imports ``imapclient``.

Client errors become domain errors: a refused login is ``ImapAuthError``;
everything else the server or the network can do (refused connection,
timeout, BYE, dropped connection mid-FETCH, NO/BAD answers, garbled
responses) is ``ImapError``. Both are transient: the poller backs off and
tries again. After an error the connection is closed; open a new one.

Fetching never sets ``\\Seen`` (``BODY.PEEK``) and never holds more than one
batch in memory: ``fetch_new`` is a generator that yields one ``FetchBatch``
at a time, cut by count (``batch_size``) and by bytes (``batch_bytes``). Mails
above ``max_mail_bytes`` are fetched headers-only.

Failure table (situation | retry? | state known? | resume?):
  connection refused / DNS     | yes, backoff | nothing fetched        | next poll from cursor
  connect or read timeout      | yes, backoff | batches committed so far | next poll from cursor
  login refused                | yes, backoff (slow), needs_attention | nothing fetched | same
  BYE / connection cut mid-FETCH | yes, backoff | the batch in flight is discarded | from cursor
  folder missing (NO)          | yes, backoff | nothing fetched        | once the folder exists
  UID listed by SEARCH, no body in the FETCH | yes: next polls | the batch names it
      (``FetchBatch.missing``); the poller keeps its cursor below it and fetches it again |
      after ``missing_uid_polls`` polls: a mail row for a human; not listed any more: gone
  certificate refused (self-signed, unknown CA, expired, wrong host) | ``ImapTlsError``:
      slow schedule, needs_attention (ALARM) | nothing fetched | once the admin fixes it
  OAuth2 refresh refused (invalid_grant) | ``ImapOAuthError``: same | nothing fetched |
      after ``email-rag mailboxes authorize NAME``
  OAuth2 token endpoint down | ``ImapError``, backoff | nothing fetched | next poll

Security (``adapters.tls``): IMAPS (``tls``, 993), STARTTLS (``starttls``, 143) or ``plain``
(a loopback server only); the certificate and host name are always verified. Login:
``password`` (LOGIN), ``xoauth2`` or ``oauthbearer`` with a token from the mailbox's
``TokenSource`` (``adapters.oauth2``).
"""

from __future__ import annotations

import imaplib
import logging
import re
import select
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from imapclient import IMAPClient, SocketTimeout
from imapclient.exceptions import LoginError

from ..core.errors import (
    ConfigError,
    ImapAuthError,
    ImapError,
    ImapOAuthError,
    ImapTlsError,
    OAuthGrantError,
    OAuthUnavailableError,
)
from ..core.ports import FetchBatch, FetchedMail, FolderState
from ..core.redact import redact_text
from ..core.settings import MailboxConfig
from .oauth2 import TokenSource
from .tls import certificate_problem, certificate_summary, client_context

log = logging.getLogger(__name__)

T = TypeVar("T")

# Errors of the network or the server (imaplib.IMAP4.error covers NO/BAD and aborts).
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, ssl.SSLError, socket.timeout, imaplib.IMAP4.error,
)
_GREETING_PREFIX = re.compile(r"^\*?\s*OK\s*(\[[^\]]*\]\s*)?", re.I)
_APPENDUID = re.compile(rb"APPENDUID\s+(\d+)\s+(\d+)", re.I)



class ImapMailbox:
    """One IMAP connection to one mailbox. Use as a context manager."""

    def __init__(self, config: MailboxConfig, timeout: float = 30.0,
                 tokens: TokenSource | None = None) -> None:
        self.config = config
        self.timeout = timeout
        self.tokens = tokens  # OAuth2 access tokens (auth xoauth2 / oauthbearer)
        self._client: IMAPClient | None = None
        self._token: str | None = None  # the token of the last OAuth2 login
        self.selected: str | None = None
        self.logout_on_close = True  # False: cut the connection (an IDLE one may be dead)

    def __repr__(self) -> str:
        return f"ImapMailbox({self.config.username}@{self.config.host}:{self.config.port})"

    # --- connection ---
    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except LoginError as e:
            self.close()
            if self._token is not None and self.tokens is not None:
                self.tokens.invalidate(self._token)  # the next login fetches a fresh one
            raise ImapAuthError(
                f"IMAP login ({self.config.auth}) as {self.config.username} at {self._where} "
                f"was refused: {_text(e)}", mailbox=self.config.name) from e
        except OAuthGrantError as e:
            self.close()
            raise ImapOAuthError(f"IMAP at {self._where}: {e}", mailbox=self.config.name) from e
        except OAuthUnavailableError as e:
            self.close()
            raise ImapError(f"IMAP at {self._where}: no OAuth2 token: {e}",
                            mailbox=self.config.name) from e
        except _NETWORK_ERRORS as e:
            self.close()
            problem = certificate_problem(e, self.config.host, self.config.port)
            if problem:
                raise ImapTlsError(f"IMAP: {problem}", mailbox=self.config.name) from e
            kind = "timed out" if isinstance(e, socket.timeout | TimeoutError) else "failed"
            raise ImapError(f"IMAP {action} at {self._where} {kind}: {type(e).__name__}: "
                            f"{_text(e)}", mailbox=self.config.name) from e

    @property
    def _where(self) -> str:
        return f"{self.config.host}:{self.config.port}"

    def connect(self) -> ImapMailbox:
        if self._client is not None:
            return self
        c = self.config
        mode = c.mode
        try:
            context = client_context(c.ca_file) if mode != "plain" else None
        except ConfigError as e:
            raise ImapTlsError(f"IMAP {self._where}: {e}", mailbox=c.name) from e
        with self._translate("connect"):
            client = IMAPClient(c.host, port=c.port, ssl=mode == "tls", ssl_context=context,
                                timeout=SocketTimeout(connect=self.timeout, read=self.timeout))
        self._client = client
        if mode == "starttls":
            with self._translate("STARTTLS"):
                if not client.has_capability("STARTTLS"):
                    self.close()
                    raise ImapTlsError(
                        f"IMAP server {self._where} does not offer STARTTLS; refusing to log "
                        f"in in clear (mailbox {c.name}: set security 'tls' for port 993, or "
                        "security 'plain' explicitly for a loopback server without TLS)",
                        mailbox=c.name)
                client.starttls(context)
        with self._translate("login"):
            self._login(client)
        return self

    def _login(self, client: IMAPClient) -> None:
        c = self.config
        if c.auth == "password":
            client.login(c.username, c.password.get_secret_value())
            return
        if self.tokens is None:
            raise ImapOAuthError(f"mailbox {c.name} uses {c.auth} but has no OAuth2 token "
                                 "source (oauth settings)", mailbox=c.name)
        self._token = self.tokens.access_token()
        if c.auth == "oauthbearer":
            client.oauthbearer_login(c.username, self._token)
        else:
            client.oauth2_login(c.username, self._token)

    def tls_version(self) -> str:
        """The TLS version of the connection ('' when in clear)."""
        sock = self._client.socket() if self._client is not None else None
        return sock.version() or "" if isinstance(sock, ssl.SSLSocket) else ""

    def peer_certificate(self) -> dict[str, str]:
        """The server certificate's subject, issuer and expiry (verified; empty in clear)."""
        sock = self._client.socket() if self._client is not None else None
        if not isinstance(sock, ssl.SSLSocket):
            return {}
        return certificate_summary(sock)

    def capabilities(self) -> list[str]:
        return sorted(c.decode() if isinstance(c, bytes) else str(c)
                      for c in self._call("CAPABILITY", lambda c: c.capabilities()))

    def special_folder(self, flag: bytes) -> str | None:
        """The folder the server marks with a SPECIAL-USE / XLIST flag (e.g. ``b"\\Sent"``);
        None when no folder carries it (no guessing by name)."""
        folders = self._call("LIST", lambda c: c.list_folders())
        for flags, _delim, name in folders:
            if any(f.lower() == flag.lower() for f in flags):
                return str(name)
        return None

    @property
    def greeting(self) -> str:
        """The server's greeting text (after ``connect``) without the status and response
        code, e.g. "Dovecot (Debian) ready." for ``email-rag status``."""
        welcome = self._client.welcome if self._client is not None else None
        text = welcome.decode("utf-8", "replace") if isinstance(welcome, bytes) else str(
            welcome or "")
        return _GREETING_PREFIX.sub("", text).strip()

    def close(self) -> None:
        client, self._client, self.selected = self._client, None, None
        if client is None:
            return
        try:
            if not self.logout_on_close:
                raise ConnectionAbortedError
            client.logout()
        except Exception:  # noqa: BLE001 - a dead connection may fail to log out
            try:
                client.shutdown()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> ImapMailbox:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, action: str, fn: Callable[[IMAPClient], T], folder: str | None = None) -> T:
        """Run an IMAP command (``action``: its name, for error texts; ``folder`` it acts on)."""
        self.connect()
        assert self._client is not None
        with self._translate(action if folder is None else f"{action} {folder!r}"):
            return fn(self._client)

    # --- folders ---
    def select(self, folder: str, readonly: bool = True) -> FolderState:
        info = self._call("SELECT", lambda c: c.select_folder(folder, readonly=readonly), folder)
        self.selected = folder
        try:
            return FolderState(folder, int(info[b"UIDVALIDITY"]),
                               int(info.get(b"UIDNEXT", 0)), int(info.get(b"EXISTS", 0)))
        except (KeyError, TypeError, ValueError) as e:
            raise ImapError(f"IMAP SELECT {folder!r} at {self._where} returned no UIDVALIDITY",
                            mailbox=self.config.name) from e

    def folder_exists(self, folder: str) -> bool:
        return bool(self._call("LIST", lambda c: c.folder_exists(folder)))

    def create_folder(self, folder: str) -> None:
        if not self.folder_exists(folder):
            self._call("CREATE", lambda c: c.create_folder(folder), folder)

    def delete_folder(self, folder: str) -> None:
        if self.selected == folder:
            self._call("CLOSE", lambda c: c.unselect_folder())
            self.selected = None
        if self.folder_exists(folder):
            self._call("DELETE", lambda c: c.delete_folder(folder), folder)

    # --- reading ---
    def uids_after(self, folder: str, last_uid: int) -> list[int]:
        """UIDs above ``last_uid`` in ascending order (ints only: small even for 10,000 mails)."""
        if self.selected != folder:
            self.select(folder)
        found = self._call("UID SEARCH", lambda c: c.search(["UID", f"{last_uid + 1}:*"]))
        # "n:*" matches the highest UID even when it is below n: filter.
        return sorted(int(u) for u in found if int(u) > last_uid)

    def uids_where(self, folder: str, *criteria: str) -> list[int]:
        """UIDs matching a SEARCH, e.g. ``uids_where("INBOX", "UNSEEN")``."""
        self.select(folder)
        return sorted(int(u) for u in self._call("UID SEARCH",
                                                 lambda c: c.search(list(criteria) or "ALL")))

    def fetch_new(self, folder: str, last_uid: int, batch_size: int = 200,
                  batch_bytes: int = 16_000_000,
                  max_mail_bytes: int = 25_000_000) -> Iterator[FetchBatch]:
        """Yield batches of mails with UID > ``last_uid``; one batch in memory at a time.

        A batch holds at most ``batch_size`` mails and about ``batch_bytes``. One
        ``SEARCH LARGER`` per folder finds the mails bigger than a fair share of
        the byte budget; chunks without such mails are fetched in one round trip,
        the others after a size FETCH, cut by bytes (headers only above
        ``max_mail_bytes``).
        """
        uids = self.uids_after(folder, last_uid)
        if not uids:
            return
        batch_size = max(1, batch_size)
        share = max(1, min(batch_bytes // batch_size, max_mail_bytes))
        large = set(self._call("UID SEARCH LARGER", lambda c: c.search(
            ["UID", f"{last_uid + 1}:*", "LARGER", str(share)])))
        for start in range(0, len(uids), batch_size):
            chunk = uids[start:start + batch_size]
            if not large.intersection(chunk):
                yield self._fetch_plain(chunk)
                continue
            sizes = self._sizes(chunk)
            groups: list[list[int]] = [[]]
            group_bytes = 0
            for uid in chunk:
                size = min(sizes.get(uid, 0), max_mail_bytes)
                if groups[-1] and group_bytes + size > batch_bytes:
                    groups.append([])
                    group_bytes = 0
                groups[-1].append(uid)
                group_bytes += size
            for n, group in enumerate(groups):
                last = chunk[-1] if n == len(groups) - 1 else group[-1]
                yield self._fetch_group(group, sizes, max_mail_bytes, last)

    def _fetch_plain(self, chunk: list[int]) -> FetchBatch:
        """Mails known to be small: size and body in one FETCH."""
        data = self._call("UID FETCH BODY.PEEK[]",
                          lambda c: c.fetch(chunk, ["RFC822.SIZE", "BODY.PEEK[]"]))
        mails, missing = [], []
        for uid in chunk:
            v = data.get(uid)
            body = v.get(b"BODY[]") if v else None
            if body is None:
                missing.append(uid)
                continue
            mails.append(FetchedMail(uid, bytes(body), int(v.get(b"RFC822.SIZE", len(body)))))
        if missing:
            log.warning("%s: UIDs %s listed but no body in the FETCH; fetched again later",
                        self, missing[:10])
        return FetchBatch(mails, chunk[-1], list(chunk), missing)

    def _sizes(self, uids: Sequence[int]) -> dict[int, int]:
        data = self._call("UID FETCH RFC822.SIZE", lambda c: c.fetch(uids, ["RFC822.SIZE"]))
        return {int(uid): int(v.get(b"RFC822.SIZE", 0)) for uid, v in data.items()}

    def _fetch_group(self, group: list[int], sizes: dict[int, int], max_mail_bytes: int,
                     last_uid: int) -> FetchBatch:
        present = [u for u in group if u in sizes]
        small = [u for u in present if sizes[u] <= max_mail_bytes]
        big = [u for u in present if sizes[u] > max_mail_bytes]
        got: dict[int, tuple[bytes, bool]] = {}
        if small:
            data = self._call("UID FETCH BODY.PEEK[]", lambda c: c.fetch(small, ["BODY.PEEK[]"]))
            for uid, v in data.items():
                body = v.get(b"BODY[]")
                if body is not None:
                    got[int(uid)] = (bytes(body), False)
        if big:
            data = self._call("UID FETCH BODY.PEEK[HEADER]",
                              lambda c: c.fetch(big, ["BODY.PEEK[HEADER]"]))
            for uid, v in data.items():
                head = v.get(b"BODY[HEADER]")
                if head is not None:
                    got[int(uid)] = (bytes(head), True)
        missing = [u for u in group if u not in got]
        if missing:
            log.warning("%s: UIDs %s listed but no body in the FETCH; fetched again later",
                        self, missing[:10])
        mails = [FetchedMail(u, got[u][0], sizes.get(u, len(got[u][0])), got[u][1])
                 for u in group if u in got]
        return FetchBatch(mails, last_uid, list(group), missing)

    def find_message_id(self, folder: str, message_id: str) -> list[int]:
        """UIDs of mails in ``folder`` whose Message-ID header is ``message_id``.

        Used to reconcile a send whose outcome is unknown (look in the Sent folder).
        """
        self.select(folder)
        needle = message_id.strip()
        charset = None if needle.isascii() else "UTF-8"
        found = self._call("UID SEARCH HEADER Message-ID",
                           lambda c: c.search(["HEADER", "Message-ID", needle], charset=charset))
        return sorted(int(u) for u in found)

    # --- writing ---
    def append(self, folder: str, raw: bytes, flags: Iterable[str] = (),
               when: datetime | None = None) -> int | None:
        """APPEND one mail; returns its UID when the server reports APPENDUID."""
        answer = self._call(
            "APPEND", lambda c: c.append(folder, raw, flags=tuple(flags), msg_time=when), folder)
        m = _APPENDUID.search(answer if isinstance(answer, bytes) else str(answer).encode())
        return int(m.group(2)) if m else None

    def append_many(self, folder: str, raws: Iterable[bytes], chunk: int = 500) -> int:
        """APPEND many mails (MULTIAPPEND in chunks when the server offers it)."""
        count, pending = 0, []
        multi = self._call("CAPABILITY", lambda c: c.has_capability("MULTIAPPEND"))
        for raw in raws:
            if not multi:
                self.append(folder, raw)
                count += 1
                continue
            pending.append(raw)
            if len(pending) >= chunk:
                count += self._multiappend(folder, pending)
                pending = []
        if pending:
            count += self._multiappend(folder, pending)
        return count

    def _multiappend(self, folder: str, raws: list[bytes]) -> int:
        self._call("MULTIAPPEND", lambda c: c.multiappend(folder, raws), folder)
        return len(raws)


@dataclass(frozen=True)
class IdleNews:
    """What one look at an IDLE connection brought."""

    new_mail: bool = False  # an EXISTS or RECENT response: something arrived in the folder
    responses: int = 0  # untagged responses of any kind (``* OK Still here`` included)


class IdleSession:
    """One connection IDLEing on one folder (RFC 2177); the poller's push channel.

    ``start()`` connects, checks the IDLE capability (False: the server has none, the
    caller polls instead), selects the folder read-only and enters IDLE. ``wait(t)``
    blocks up to ``t`` seconds for untagged responses; ``refresh()`` ends IDLE (DONE,
    whose tagged answer proves the server is alive) and enters it again - the caller
    does this before the server's inactivity timeout (29 min per the RFC). Nothing here
    fetches mail: a notification only tells the caller to run its normal poll.

    Failure table (situation | retry? | state known? | resume?):
      connection cut / EOF / BYE while IDLE | caller: backoff, new session | nothing fetched
          here | the caller's poll from the cursor
      DONE not answered within ``timeout`` (silent server) | same; caller logs ALARM | - | same
      server without IDLE                  | no: ``start()`` returns False | - | caller polls
    """

    EOF_PROBES = 20  # readable-but-empty reads in a row that count as a closed connection

    def __init__(self, config: MailboxConfig, folder: str, timeout: float = 30.0,
                 tokens: TokenSource | None = None) -> None:
        self.folder = folder
        self.imap = ImapMailbox(config, timeout, tokens)
        self.imap.logout_on_close = False
        self.idling = False
        self.started_at = 0.0  # monotonic time of the last IDLE command (start or refresh)
        self._empty_reads = 0

    def __repr__(self) -> str:
        return f"IdleSession({self.imap!r}, {self.folder!r})"

    def start(self) -> bool:
        imap = self.imap
        if not imap._call("CAPABILITY", lambda c: c.has_capability("IDLE")):
            self.close()
            return False
        imap.select(self.folder, readonly=True)
        self._enter()
        return True

    def _enter(self) -> None:
        self.imap._call("IDLE", lambda c: c.idle(), self.folder)
        self.idling = True
        self.started_at = time.monotonic()
        self._empty_reads = 0

    def fileno(self) -> int:
        client = self.imap._client
        if client is None:
            raise ImapError(f"IDLE connection of {self.folder!r} is closed",
                            mailbox=self.imap.config.name)
        return client.socket().fileno()

    def wait(self, timeout: float) -> IdleNews:
        """Untagged responses that arrived within ``timeout`` s (0: only those waiting)."""
        client = self.imap._client
        if client is None or not self.idling:
            raise ImapError(f"IDLE connection of {self.folder!r} is not idling",
                            mailbox=self.imap.config.name)
        with self.imap._translate(f"IDLE {self.folder!r}"):
            readable = bool(select.select([client.socket()], [], [], max(0.0, timeout))[0])
            if not readable:
                return IdleNews()
            responses = client.idle_check(timeout=0)
            if not responses:
                # imapclient swallows EOF in idle_check: readable with nothing to read is
                # a closed connection (or, rarely, half a line: give it a few more reads)
                self._empty_reads += 1
                if self._empty_reads >= self.EOF_PROBES or _peek_eof(client.socket()):
                    raise EOFError("connection closed by the server while IDLE")
                time.sleep(0.005)
                return IdleNews()
        self._empty_reads = 0
        if any(r and r[0] == b"BYE" for r in responses):
            self.close()
            raise ImapError(f"IMAP server said BYE while IDLE on {self.folder!r}",
                            mailbox=self.imap.config.name)
        new = any(len(r) >= 2 and r[1] in (b"EXISTS", b"RECENT") for r in responses)
        return IdleNews(new_mail=new, responses=len(responses))

    def refresh(self) -> IdleNews:
        """DONE and IDLE again; raises ``ImapError`` when DONE is not answered in time."""
        self.idling = False
        _, responses = self.imap._call("DONE", lambda c: c.idle_done(), self.folder)
        self._enter()
        new = any(len(r) >= 2 and r[1] in (b"EXISTS", b"RECENT") for r in responses or ())
        return IdleNews(new_mail=new, responses=len(responses or ()))

    def close(self) -> None:
        self.idling = False
        self.imap.close()  # no LOGOUT dialogue with a connection that may be dead: cut it


def _peek_eof(sock: socket.socket) -> bool:
    """True when the peer closed ``sock`` (plain sockets; TLS cannot peek)."""
    if isinstance(sock, ssl.SSLSocket):
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


def _text(e: BaseException) -> str:
    msg = e.args[0] if e.args else str(e)
    if isinstance(msg, bytes):
        msg = msg.decode("utf-8", "replace")
    return redact_text(str(msg) or type(e).__name__)[:500]


def connect(config: MailboxConfig, timeout: float) -> ImapMailbox:
    """Factory used by the poller for password mailboxes (``Services.imap_mailbox`` adds a
    mailbox's OAuth2 token source)."""
    return ImapMailbox(config, timeout)


class ImapSentFolder:
    """The mailbox's Sent folder, as the sending side needs it.

    ``contains`` answers whether a mail with this Message-ID was filed there
    (reconciliation of a send whose outcome is unknown); a missing folder
    holds nothing. ``append`` files a sent reply (marked \\Seen), creating the
    folder when needed - unless the provider files submitted mail itself
    (``provider_files_sent``: Microsoft 365, Gmail), where a second copy would be a
    duplicate. Errors are ``ImapError``: the caller retries later.

    Which folder: ``sent_folder`` when configured, else the one the server marks ``\\Sent``
    (RFC 6154 SPECIAL-USE: "Sent Items", "[Gmail]/Sent Mail", "Gesendete Elemente"), else
    "Sent". It is looked up once per connection.

    One connection is kept between calls (a worker files one reply after the
    other: connecting and logging in twice per reply was most of a send's time
    in the send benchmark). A kept connection is checked with NOOP before it is
    used and opened again if that fails - so no command with an effect is ever
    repeated here; an error during a command closes the connection and is raised.
    """

    DEFAULT_NAME = "Sent"

    def __init__(self, config: MailboxConfig, timeout: float = 30.0,
                 tokens: TokenSource | None = None) -> None:
        self.config = config
        self.timeout = timeout
        self.tokens = tokens
        self.folder = config.sent_folder  # "" until found by SPECIAL-USE
        self._imap: ImapMailbox | None = None
        self._folder_seen = False  # the folder exists (seen or created on this connection)

    def _session(self) -> ImapMailbox:
        if self._imap is not None:
            try:
                self._imap._call("NOOP", lambda c: c.noop())
                return self._imap
            except ImapError:
                self.close()
        self._imap = ImapMailbox(self.config, self.timeout, self.tokens).connect()
        if not self.config.sent_folder:
            self.folder = self._imap.special_folder(b"\\Sent") or self.DEFAULT_NAME
        return self._imap

    def _do(self, fn: Callable[[ImapMailbox], T]) -> T:
        imap = self._session()
        try:
            return fn(imap)
        except ImapError:
            self.close()
            raise

    def contains(self, message_id: str) -> bool:
        def search(imap: ImapMailbox) -> bool:
            if not self._folder_seen:
                if not imap.folder_exists(self.folder):
                    return False
                self._folder_seen = True
            return bool(imap.find_message_id(self.folder, message_id))

        return self._do(search)

    def append(self, message: bytes) -> None:
        if self.config.provider_files_sent:
            return  # the provider filed the submitted mail already; a copy would double it

        def file(imap: ImapMailbox) -> None:
            if not self._folder_seen:
                imap.create_folder(self.folder)
                self._folder_seen = True
            imap.append(self.folder, message, flags=("\\Seen",))

        self._do(file)

    def close(self) -> None:
        imap, self._imap, self._folder_seen = self._imap, None, False
        if imap is not None:
            imap.close()


def sent_folder(config: MailboxConfig, timeout: float = 30.0,
                tokens: TokenSource | None = None) -> ImapSentFolder:
    return ImapSentFolder(config, timeout, tokens)
