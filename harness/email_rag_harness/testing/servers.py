"""Private MariaDB and Redis servers that a test or a chaos run may crash for real.

The machine's shared servers (127.0.0.1:3306, :6379) are never signalled: a
``PrivateMariaDB`` is its own ``mariadbd`` with a fresh datadir on a free
port (``mariadb-install-db`` ~4 s, start ~1 s), a ``PrivateRedis`` its own
``redis-server`` (keeps nothing on disk). Both offer what a crash test needs:

| call | what happens | what a client sees |
|---|---|---|
| ``crash()`` | SIGKILL of the server process | connections reset; connects refused |
| ``restart()`` | the same datadir/port started again | MariaDB: InnoDB crash recovery, committed rows are back; Redis: empty |
| ``halt()`` / ``resume()`` | SIGSTOP / SIGCONT | connections open, no answer (a hung server) |
| ``stop()`` | SIGTERM, wait, remove the folder | - |

Failure table of the fixture itself:

| situation | what happens |
|---|---|
| the binary is missing | ``ServerError`` naming the package to install |
| the server does not answer within ``start_timeout`` | ``ServerError`` with the tail of its log; the process is killed |
| the port was taken between choosing and binding | the start fails like above (the caller may start again) |
| the owning process dies | ``PR_SET_PDEATHSIG`` kills the server with it |

PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the
process: a server (re)started from a short-lived thread (a chaos injector) would
die with that thread. So every server process is started by one long-lived
spawner thread of this module (``_SPAWNER``), whoever asks for it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from email_rag.core.errors import EmailRagError

from .dovecot import free_port

MARIADBD = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
MARIADB_INSTALL_DB = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


# the one thread that forks server processes; it lives as long as the process (see above)
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="private-server-spawner")


class ServerError(EmailRagError):
    """A private server could not be set up or started."""


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class _PrivateServer:
    name = "server"

    def __init__(self, start_timeout: float = 60.0, root: Path | None = None) -> None:
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"email-rag-{self.name}-", dir=root))
        self.port = free_port()
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.crashes = 0
        self.halted = False

    @property
    def log_path(self) -> Path:
        return self.dir / f"{self.name}.log"

    def command(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        return _accepts(self.port)

    def start(self):
        out = self.log_path.open("ab")
        try:
            self.proc = _SPAWNER.submit(
                subprocess.Popen, self.command(), stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent).result()
        except OSError as e:
            raise ServerError(f"cannot start the private {self.name}: {e}") from e
        finally:
            out.close()
        deadline = time.monotonic() + self.start_timeout
        while not self.ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._kill()
                tail = self.log_path.read_text(errors="replace")[-1500:]
                raise ServerError(f"the private {self.name} on port {self.port} did not start "
                                  f"within {self.start_timeout:.0f} s; its log ends:\n{tail}")
            time.sleep(0.1)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def crash(self) -> None:
        """SIGKILL: no shutdown, no flush (what a power cut or the OOM killer does)."""
        if self.halted:
            self.resume()
        self._kill()
        self.crashes += 1

    def restart(self):
        if self.running:
            raise ServerError(f"the private {self.name} is still running; crash() or stop() first")
        return self.start()

    def halt(self) -> None:
        """SIGSTOP: connections stay open, nothing answers (a hung server)."""
        if self.running:
            os.kill(self.proc.pid, signal.SIGSTOP)
            self.halted = True

    def resume(self) -> None:
        if self.running and self.halted:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.halted = False

    def stop(self, remove: bool = True) -> None:
        if self.halted:
            self.resume()
        if self.running:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._kill()
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=20)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class PrivateMariaDB(_PrivateServer):
    """Its own mariadbd: root without a password on 127.0.0.1:``port``."""

    name = "mariadb"

    def __init__(self, start_timeout: float = 60.0, root: Path | None = None) -> None:
        super().__init__(start_timeout, root)
        self.datadir = self.dir / "data"
        self._installed = False

    def command(self) -> list[str]:
        return [MARIADBD, "--no-defaults", f"--datadir={self.datadir}", f"--port={self.port}",
                "--bind-address=127.0.0.1", f"--socket={self.dir / 'sock'}",
                f"--pid-file={self.dir / 'pid'}", "--user=root", "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
                "--max-connections=400", "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_unicode_ci", f"--log-error={self.log_path}"]

    def ready(self) -> bool:
        if not _accepts(self.port):
            return False
        import mariadb

        try:
            conn = mariadb.connect(host="127.0.0.1", port=self.port, user="root", password="",
                                   connect_timeout=2)
        except mariadb.Error:
            return False
        conn.close()
        return True

    def start(self):
        if not self._installed:
            if not Path(MARIADBD).exists():
                raise ServerError("mariadbd is missing: apt-get install mariadb-server")
            try:
                subprocess.run(
                    [MARIADB_INSTALL_DB, "--no-defaults", f"--datadir={self.datadir}",
                     "--auth-root-authentication-method=normal", "--skip-test-db",
                     "--user=root"], check=True, capture_output=True, timeout=120)
            except (OSError, subprocess.SubprocessError) as e:
                detail = getattr(e, "stderr", b"") or b""
                raise ServerError(f"mariadb-install-db failed: {e} "
                                  f"{detail.decode(errors='replace')[-800:]}") from e
            self._installed = True
        return super().start()


class PrivateRedis(_PrivateServer):
    """Its own redis-server on 127.0.0.1:``port``; keeps nothing on disk (restart = empty)."""

    name = "redis"

    def command(self) -> list[str]:
        if not Path(REDIS_SERVER).exists():
            raise ServerError("redis-server is missing: apt-get install redis-server")
        return [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.dir), "--logfile", str(self.log_path)]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ready(self) -> bool:
        import redis

        if not _accepts(self.port):
            return False
        r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
        try:
            return bool(r.ping())
        except redis.RedisError:
            return False
        finally:
            r.close()
