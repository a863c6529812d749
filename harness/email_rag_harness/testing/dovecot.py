"""A private Dovecot IMAP server for tests, the demo, chaos runs and benchmarks.

``Dovecot().start()`` writes a config into a fresh temp folder, starts
``dovecot -c CONF`` on a free loopback port and returns once it accepts
connections (~0.05 s). ``add_user()`` adds a passwd-file line: each user is a
fresh, empty mailbox. Mails get in by IMAP APPEND (``append``/``append_many``)
or, much faster, by writing maildir files straight into the user's folder
(``deliver``). ``stop()`` stops the instance and removes its folder.

Dovecot refuses uid 0 for mail, so as root mail runs as ``nobody:nogroup``;
every parent folder of the maildir must then be traversable by nobody, which
is why the base folder is made with ``mkdtemp`` under /dev/shm (memory, fast)
or /tmp and chmod 0755 (pytest's own tmp_path under /tmp/pytest-of-root is
not traversable).
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from email_rag.adapters.imap import ImapMailbox
from email_rag.core.errors import ConfigError
from email_rag.core.settings import MailboxConfig

from .oauth_server import OAUTH2_CONF

DOVECOT_BIN = shutil.which("dovecot") or "/usr/sbin/dovecot"

CONFIG_TEMPLATE = """\
# private Dovecot instance of email-rag (tests, demo); generated, do not edit
protocols = imap
listen = {host}
base_dir = {base}/run
state_dir = {base}/state
instance_name = {instance}
log_path = {base}/log/dovecot.log
info_log_path = {base}/log/dovecot.log
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login{oauth_mechanisms}
auth_failure_delay = 0
mail_location = maildir:{base}/mail/%u
mail_uid = {mail_user}
mail_gid = {mail_group}
first_valid_uid = 1
first_valid_gid = 0
mail_fsync = never
default_login_user = {login_user}
default_internal_user = {internal_user}
protocol imap {{
  mail_max_userip_connections = 1000
{imap_extra}}}
service imap-login {{
  inet_listener imap {{
    address = {host}
    port = {port}
  }}
  inet_listener imaps {{
{imaps}
  }}
  chroot =
}}
service anvil {{
  chroot =
  # no per-IP auth penalty: tests refuse logins on purpose, later logins must stay fast
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
{oauth_passdb}passdb {{
  driver = passwd-file
  # one file per user: Dovecot re-reads a changed passwd-file only when its mtime
  # second changes, so users added within the same second would be refused
  args = scheme=PLAIN username_format=%u {base}/passwd.d/%u
}}
userdb {{
  driver = static
  args = uid={mail_user} gid={mail_group} home={base}/mail/%u
}}
namespace inbox {{
  inbox = yes
  separator = /
{sent_mailbox}}}
"""
OAUTH_PASSDB = """\
passdb {{
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = {base}/oauth2.conf.ext
}}
"""


def default_parent() -> str:
    """Where private instances live: memory-backed /dev/shm when usable (writing maildir
    files there is ~40x faster than on this machine's disk), else /tmp."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) and shm.stat().st_mode & 0o001:
        return str(shm)
    return "/tmp"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _traversable_by(path: Path, uid: int, gid: int) -> bool:
    """Every folder from / down to ``path`` can be entered by uid/gid."""
    if uid == os.geteuid():
        return True
    for p in [path, *path.parents]:
        st = p.stat()
        if st.st_uid == uid:
            ok = st.st_mode & 0o100
        elif st.st_gid == gid:
            ok = st.st_mode & 0o010
        else:
            ok = st.st_mode & 0o001
        if not ok:
            return False
    return True


@dataclass
class DovecotUser:
    """One IMAP user of the private Dovecot = one fresh mailbox."""

    dovecot: Dovecot
    username: str
    password: str
    name: str = ""  # mailbox name for email-rag (defaults to the local part)
    folders: list[str] = field(default_factory=lambda: ["INBOX"])

    def __post_init__(self) -> None:
        self.name = self.name or self.username.split("@")[0]

    @property
    def host(self) -> str:
        return self.dovecot.host

    @property
    def port(self) -> int:
        return self.dovecot.port

    @property
    def config(self) -> MailboxConfig:
        return MailboxConfig(name=self.name, host=self.host, port=self.port,
                             security="plain",  # this Dovecot has no TLS: said explicitly
                             username=self.username, password=SecretStr(self.password),
                             folders=list(self.folders))

    def env_value(self) -> str:
        """The JSON for EMAIL_RAG_MAILBOXES with just this mailbox."""
        return mailboxes_json([self.config])

    def imap(self, timeout: float = 60.0) -> ImapMailbox:
        return ImapMailbox(self.config, timeout)

    # --- putting mail in ---
    def append(self, raw: bytes, folder: str = "INBOX") -> int | None:
        with self.imap() as imap:
            return imap.append(folder, raw)

    def append_many(self, raws: Iterable[bytes], folder: str = "INBOX") -> int:
        with self.imap() as imap:
            return imap.append_many(folder, raws)

    def create_folder(self, folder: str) -> None:
        with self.imap() as imap:
            imap.create_folder(folder)

    def delete_folder(self, folder: str) -> None:
        with self.imap() as imap:
            imap.delete_folder(folder)

    def maildir(self, folder: str = "INBOX") -> Path:
        root = self.dovecot.mail_root / self.username
        return root if folder.upper() == "INBOX" else root / ("." + folder.replace("/", "."))

    def deliver(self, raws: Iterable[bytes], folder: str = "INBOX") -> int:
        """Write mails as maildir files into ``folder``'s ``new/`` (thousands per second).

        Dovecot assigns their UIDs, in file-name order, at the next SELECT.
        """
        target = self.maildir(folder)
        self.dovecot.make_maildir(target)
        tmp, new = target / "tmp", target / "new"
        uid, gid = self.dovecot.mail_ids
        stamp, pid = int(time.time()), os.getpid()
        count = 0
        for raw in raws:
            name = f"{stamp}.M{count:07d}P{pid}Q{uuid.uuid4().hex[:8]}.erag,S={len(raw)}"
            path = tmp / name
            path.write_bytes(raw)
            if os.geteuid() == 0:
                os.chown(path, uid, gid)
            os.rename(path, new / name)
            count += 1
        return count


class Dovecot:
    """A private Dovecot instance in its own folder on a free loopback port."""

    def __init__(self, base_dir: Path | str | None = None, host: str = "127.0.0.1",
                 port: int | None = None, capability: str | None = None,
                 introspection_url: str = "", tls: tuple[Path | str, Path | str] | None = None,
                 sent_name: str | None = None) -> None:
        """``capability``: the CAPABILITY the server announces after login (e.g. without
        IDLE, to stand for a server that has none); default: Dovecot's own.
        ``introspection_url``: logins by OAuth2 bearer token (XOAUTH2, OAUTHBEARER) too,
        checked by Dovecot's ``oauth2`` passdb against that endpoint (a
        ``testing.oauth_server.TokenServer``'s ``/introspect``).
        ``tls``: (certificate, key) PEM files: STARTTLS on ``port`` and implicit TLS on
        ``tls_port``; default: plaintext only.
        ``sent_name``: a folder created for every user and marked ``\\Sent`` (special-use)."""
        self.capability = capability
        self.tls = tls
        self.sent_name = sent_name
        self.tls_port = 0
        self.introspection_url = introspection_url
        self.host = host
        self.port = port or 0
        self._own_dir = base_dir is None
        self.base = Path(base_dir) if base_dir else None
        self.instance = f"erag-dovecot-{uuid.uuid4().hex[:8]}"
        self._users = 0
        if os.geteuid() == 0:
            self.mail_user, self.mail_group = "nobody", "nogroup"
            self.login_user, self.internal_user = "dovenull", "dovecot"
            try:
                pwd.getpwnam(self.login_user)
                pwd.getpwnam(self.internal_user)
            except KeyError:
                self.login_user = self.internal_user = "nobody"
        else:  # best effort for a developer without root: everything runs as themselves
            me = pwd.getpwuid(os.geteuid()).pw_name
            self.mail_user = self.login_user = self.internal_user = me
            self.mail_group = grp.getgrgid(os.getegid()).gr_name

    # --- paths ---
    @property
    def config_path(self) -> Path:
        return self._base / "dovecot.conf"

    @property
    def passwd_dir(self) -> Path:
        return self._base / "passwd.d"

    @property
    def mail_root(self) -> Path:
        return self._base / "mail"

    @property
    def log_path(self) -> Path:
        return self._base / "log" / "dovecot.log"

    @property
    def _base(self) -> Path:
        if self.base is None:
            raise ConfigError("Dovecot has not been started")
        return self.base

    @property
    def mail_ids(self) -> tuple[int, int]:
        return pwd.getpwnam(self.mail_user).pw_uid, grp.getgrnam(self.mail_group).gr_gid

    # --- lifecycle ---
    def start(self, timeout: float = 60.0) -> Dovecot:  # a hang: a busy CI machine is slow
        if not Path(DOVECOT_BIN).exists():
            raise ConfigError("dovecot is not installed (apt-get install -y dovecot-imapd "
                              "dovecot-core, see scripts/bootstrap.sh)")
        if self.base is None:
            self.base = Path(tempfile.mkdtemp(prefix="email-rag-dovecot-", dir=default_parent()))
        self.base.mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o755)
        uid, gid = self.mail_ids
        if not _traversable_by(self.base, uid, gid):
            raise ConfigError(f"{self.base} (or a parent folder) cannot be entered by "
                              f"{self.mail_user}; Dovecot needs that. Use a folder under /tmp.")
        for sub in ("run", "state", "log", "mail"):
            (self.base / sub).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(self.mail_root, uid, gid)
        os.chmod(self.mail_root, 0o755)
        self.passwd_dir.mkdir(exist_ok=True)
        os.chmod(self.passwd_dir, 0o755)
        last_error = ""
        for _ in range(5):
            if not self.port:
                self.port = free_port(self.host)
            if self.tls and not self.tls_port:
                self.tls_port = free_port(self.host)
            self._write_config()
            # the daemon keeps inherited pipes open: its output goes to a file
            startup_log = self._base / "log" / "startup.log"
            with startup_log.open("w") as out:
                proc = subprocess.run([DOVECOT_BIN, "-c", str(self.config_path)],
                                      stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                      timeout=timeout)
            if proc.returncode == 0 and self._wait_listening(timeout):
                return self
            last_error = startup_log.read_text(errors="replace") + self._log_tail()
            self.stop(remove=False)
            if "in use" not in last_error:
                break
            self.port = self.tls_port = 0  # lost the race for a port: pick others
        raise ConfigError(f"dovecot did not start: {last_error.strip()[-2000:]}")

    def _write_config(self) -> None:
        self.config_path.write_text(CONFIG_TEMPLATE.format(
            host=self.host, port=self.port, base=self.base, instance=self.instance,
            mail_user=self.mail_user, mail_group=self.mail_group,
            login_user=self.login_user, internal_user=self.internal_user,
            imap_extra=f"  imap_capability = {self.capability}\n" if self.capability else "",
            ssl=(f"ssl = yes\nssl_cert = <{self.tls[0]}\nssl_key = <{self.tls[1]}" if self.tls
                 else "ssl = no"),
            imaps=(f"    address = {self.host}\n    port = {self.tls_port}\n    ssl = yes"
                   if self.tls else "    port = 0"),
            sent_mailbox=(f"  mailbox {json.dumps(self.sent_name)} {{\n    special_use = \\Sent\n"
                          "    auto = create\n  }\n" if self.sent_name else ""),
            oauth_mechanisms=" xoauth2 oauthbearer" if self.introspection_url else "",
            oauth_passdb=(OAUTH_PASSDB.format(base=self.base) if self.introspection_url
                          else "")))
        if self.introspection_url:
            (self._base / "oauth2.conf.ext").write_text(
                OAUTH2_CONF.format(introspect=self.introspection_url))

    def _wait_listening(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.port), timeout=1) as s:
                    s.settimeout(2)
                    if s.recv(64).startswith(b"* OK"):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def _log_tail(self) -> str:
        try:
            return "\n" + "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return ""

    def master_pid(self) -> int | None:
        try:
            return int((self._base / "run" / "master.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        pid = self.master_pid()
        return pid is not None and _alive(pid)

    def stop(self, remove: bool | None = None, grace: float = 0.5) -> None:
        """Stop the instance (and remove its folder if this object created it)."""
        if self.base is None:
            return
        pid = self.master_pid()
        if pid is not None and _alive(pid):
            # SIGTERM is what `dovecot stop` sends; the master then lingers ~3 s, so after a
            # short grace its whole process group (master and children, all ours) is killed
            os.kill(pid, signal.SIGTERM)
            if not _wait_gone(pid, grace):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _wait_gone(pid, 5.0)
        if remove if remove is not None else self._own_dir:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None

    def __enter__(self) -> Dovecot:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- users ---
    def add_user(self, username: str | None = None, password: str | None = None,
                 name: str = "", folders: list[str] | None = None) -> DovecotUser:
        """Add a user (its own passwd file; usable at once). Adding it again sets the password."""
        self._users += 1
        username = username or f"u{self._users}-{uuid.uuid4().hex[:6]}@example.com"
        password = password or uuid.uuid4().hex[:12]
        if any(c in username + password for c in ":\n\r"):
            raise ConfigError("user name and password must not contain ':' or line breaks")
        if "/" in username or username.startswith("."):
            raise ConfigError("user name must not contain '/' or start with '.'")
        path = self.passwd_dir / username
        # nodelay: a refused login is answered at once (no 0-2 s failure delay)
        path.write_text(f"{username}:{{PLAIN}}{password}::::::nodelay=yes\n")
        os.chmod(path, 0o644)
        user = DovecotUser(self, username, password, name=name,
                           folders=list(folders or ["INBOX"]))
        self.make_maildir(user.maildir("INBOX"))
        return user

    def make_maildir(self, path: Path) -> None:
        """A maildir folder (cur/new/tmp) owned by the mail user."""
        uid, gid = self.mail_ids
        for sub in ("", "cur", "new", "tmp"):
            d = path / sub if sub else path
            if not d.exists():
                d.mkdir(parents=True, exist_ok=True)
                if os.geteuid() == 0:
                    os.chown(d, uid, gid)
        if path.name.startswith("."):
            marker = path / "maildirfolder"
            if not marker.exists():
                marker.touch()
                if os.geteuid() == 0:
                    os.chown(marker, uid, gid)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a daemon's zombie waits for init to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return not _alive(pid)


def mailboxes_json(configs: Iterable[MailboxConfig]) -> str:
    """EMAIL_RAG_MAILBOXES for these mailboxes (passwords and OAuth2 client secrets in clear:
    test credentials)."""
    out = []
    for c in configs:
        item = {**c.model_dump(mode="json"), "password": c.password.get_secret_value()}
        if c.oauth is not None:
            item["oauth"]["client_secret"] = c.oauth.client_secret.get_secret_value()
        out.append(item)
    return json.dumps(out)
