"""What every benchmark shares: its own database, Redis db and temp folder; worker
processes; the report (a table, the same figures as JSON, the targets).

Each run claims a Redis db with the same scheme as the tests (``tests/conftest.py``:
key ``email-rag-test-claim:<n>`` in db 0, db ``n`` in 1..15, here taken from 15
down so tests starting at 1 rarely meet it), makes fresh MariaDB databases
(``erag_bench_*``), works in a fresh temp folder, and removes all of it at the
end, also after a failure or Ctrl-C.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from email_rag.adapters.imap import FetchedMail
from email_rag.core.settings import ENV_PREFIX, Settings
from email_rag.db import Database, drop_database, sql
from email_rag.db.migrate import ensure_database, migrate
from email_rag.ingest.store import BatchTarget, PrepareOptions, prepare, store_batch

ROOT = Path(__file__).resolve().parents[2]  # the folder holding email_rag_harness/
MARIADB = dict(host="127.0.0.1", port=3306, user="root", password="")
REDIS_BASE = "redis://127.0.0.1:6379"
CLAIM_KEY = "email-rag-test-claim:{n}"
CLAIM_TTL = 900


class CheckFailed(Exception):
    """The run's own correctness check failed: a fast wrong run is not a figure."""


# --- the report ---
@dataclass
class Target:
    name: str  # e.g. "ratio >= 0.7"
    value: float | None
    limit: float
    higher_is_better: bool = True

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        return self.value >= self.limit if self.higher_is_better else self.value <= self.limit

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "limit": self.limit, "met": self.met}


@dataclass
class Report:
    bench: str
    summary: str  # one or two lines: the ratio(s) and what they mean
    columns: list[str]
    rows: list[dict[str, Any]]
    figures: dict[str, Any]  # every figure of the table and more, for --json
    targets: list[Target] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # correctness checks that passed
    notes: list[str] = field(default_factory=list)

    def data(self) -> dict[str, Any]:
        return {"bench": self.bench, **self.figures, "rows": self.rows,
                "targets": [t.as_dict() for t in self.targets], "checks": self.checks,
                "machine": machine()}

    def text(self) -> str:
        from email_rag.cli.output import table

        out = [table(self.rows, self.columns)]
        for t in self.targets:
            verdict = {True: "met", False: "MISSED", None: "n/a"}[t.met]
            out.append(f"target {t.name}: {t.value} -> {verdict}")
        if self.checks:
            out.append("checked before reporting: " + "; ".join(self.checks))
        out += self.notes
        return "\n".join(out)


def machine() -> dict[str, Any]:
    import psutil

    load = os.getloadavg()
    return {"nproc": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "load_1_5_15": [round(x, 2) for x in load],
            "python": sys.version.split()[0],
            "date": time.strftime("%Y-%m-%d %H:%M", time.localtime())}


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def percentile(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


# --- the run's own database, Redis db and temp folder ---
class Workspace:
    """``with Workspace("worker") as ws:`` - a claimed Redis db, fresh databases, a temp dir.

    ``prefix``: the databases' name prefix (a test's own); ``keep``: leave the databases and
    the temp folder at the end (to look at them), the Redis db is freed either way."""

    def __init__(self, tag: str, prefix: str = "erag_bench_", keep: bool = False) -> None:
        self.tag = tag
        self.prefix = prefix
        self.keep = keep
        self.redis_url = ""
        self.tmp = Path()
        self._claim: redis.Redis | None = None
        self._claim_key = ""
        self._owner = uuid.uuid4().hex
        self._databases: list[str] = []
        self._stop = threading.Event()
        self._cleanups: list[Any] = []

    def __enter__(self) -> Workspace:
        self._claim = redis.Redis.from_url(f"{REDIS_BASE}/0")
        for _ in range(200):
            for n in range(15, 0, -1):
                key = CLAIM_KEY.format(n=n)
                if self._claim.set(key, self._owner, nx=True, ex=CLAIM_TTL):
                    self._claim_key, self.redis_url = key, f"{REDIS_BASE}/{n}"
                    break
            if self._claim_key:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("no free Redis db (1..15): every one is claimed by a test run")
        self.redis().flushdb()
        threading.Thread(target=self._keep_claim, daemon=True, name="redis-claim").start()
        self.tmp = Path(tempfile.mkdtemp(prefix=f"erag-bench-{self.tag}-"))
        return self

    def _keep_claim(self) -> None:  # a long run keeps its Redis db
        while not self._stop.wait(60):
            if self._claim is not None and self._claim.get(self._claim_key) == self._owner.encode():
                self._claim.expire(self._claim_key, CLAIM_TTL)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url)

    def database(self) -> Database:
        """A fresh, migrated database (dropped at the end)."""
        name = f"{self.prefix}{self.tag.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
        self._databases.append(name)
        db = Database(**MARIADB, database=name)
        ensure_database(db, name)
        migrate(db)
        return db

    def fresh(self) -> Database:
        """A fresh database and an empty Redis db for the next measured run."""
        self.redis().flushdb()
        return self.database()

    def on_exit(self, fn: Any) -> None:
        self._cleanups.append(fn)

    def settings(self, db: Database, **kw: Any) -> Settings:
        return Settings(**self.setting_values(db, **kw))

    def setting_values(self, db: Database, **kw: Any) -> dict[str, Any]:
        values: dict[str, Any] = dict(
            db_name=db.database, redis_url=self.redis_url,
            audit_spool_path=self.tmp / "audit-spool.jsonl",
            qdrant_path=self.tmp / f"qdrant-{db.database}", embedding_backend="hashing",
            # the scripted LLM stands for an endpoint serving many calls at once (a hosted API):
            # no per-endpoint call limit, so the benchmarks measure the pipeline's overlap
            llm_max_concurrent=0, log_level="WARNING",
            # the benchmarks' mail is new work; `bench history` switches the import on
            history_import=False)
        values.update(kw)
        return values

    def env(self, db: Database, **kw: Any) -> dict[str, str]:
        """The environment of a subprocess (the real CLI) for this run: only our settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
        for key, value in self.setting_values(db, **kw).items():
            if isinstance(value, list | dict):
                value = json.dumps(value)
            env[ENV_PREFIX + key.upper()] = str(value)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for fn in reversed(self._cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - clean up the rest anyway
                print(f"bench cleanup: {e}", file=sys.stderr)
        server = Database(**MARIADB)
        try:
            for name in [] if self.keep else self._databases:
                server.execute(drop_database(name))
        finally:
            server.close()
        try:
            self.redis().flushdb()
        finally:
            if self._claim is not None:
                if self._claim.get(self._claim_key) == self._owner.encode():
                    self._claim.delete(self._claim_key)
                self._claim.close()
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


# --- mails in the database, as the poller stores them ---
def store_mails(db: Database, raws: Iterable[bytes], queue: str, batch: int = 200,
                mailbox: str = "bench") -> list[tuple[int, int]]:
    """Mail rows and queued job rows through the poller's own store code (no IMAP).

    Returns (email id, job id) of the mails that got a job."""
    with db.transaction() as cur:
        cur.execute(sql("bench_mailbox_insert"),
                    {"name": mailbox, "address": f"{mailbox}@example.com"})
    mailbox_id = int(db.fetchone(sql("bench_mailbox_id"), {"name": mailbox})["id"])
    target = BatchTarget(mailbox_id, mailbox, "INBOX", 1, queue)
    opts = PrepareOptions(message_id_domain="email-rag.invalid",
                          own_addresses=frozenset({f"{mailbox}@example.com"}))
    out: list[tuple[int, int]] = []
    pending: list[FetchedMail] = []
    uid = 0

    def flush() -> None:
        result = store_batch(db, target, [prepare(m, opts) for m in pending], uid)
        out.extend((int(j.email_id or 0), j.id) for j in result.jobs)
        pending.clear()

    for raw in raws:
        uid += 1
        pending.append(FetchedMail(uid, raw, len(raw)))
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    return out


# --- processes ---
@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    out_path: Path
    err_path: Path
    out: str = ""
    err: str = ""

    def collect(self) -> None:
        self.out = self.out_path.read_text(errors="replace") if self.out_path.exists() else ""
        self.err = self.err_path.read_text(errors="replace") if self.err_path.exists() else ""

    def result(self) -> dict[str, Any]:
        """The JSON outcome the process printed last (the CLI's --json shape), or {}."""
        text = "\n" + self.out
        start = text.rfind("\n{\n")
        if start < 0:
            return {}
        try:
            return json.loads(text[start + 1:])
        except ValueError:
            return {}


def cpu_seconds(procs: Iterable[Proc]) -> float:
    """User + system CPU seconds the processes have used so far (/proc; 0 where gone): the
    work a run costs, which a busy machine stretches in wall time but hardly in CPU time."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in procs:
        try:
            fields = Path(f"/proc/{p.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14, 15)
    return total / tick


def spawn(name: str, args: list[str], env: dict[str, str], cwd: Path) -> Proc:
    """A subprocess whose output goes to files (a full pipe would stall it)."""
    tag = f"{name}-{uuid.uuid4().hex[:6]}"
    out_path, err_path = cwd / f"{tag}.out", cwd / f"{tag}.err"
    env = {**env, "PYTHONFAULTHANDLER": "1"}  # SIGABRT prints every thread's stack
    with out_path.open("w") as out, err_path.open("w") as err:
        popen = subprocess.Popen([sys.executable, *args], env=env, cwd=cwd, stdout=out,
                                 stderr=err, stdin=subprocess.DEVNULL)
    return Proc(name, popen, out_path, err_path)


def stop(procs: Iterable[Proc], timeout: float = 60) -> None:
    """SIGTERM (RQ's warm shutdown: the job in hand finishes), then collect the output.

    A process still running after ``timeout`` gets SIGABRT: its stderr then ends with the
    stack of every thread (PYTHONFAULTHANDLER, set by ``spawn``), the place it hung."""
    procs = list(procs)
    for p in procs:
        if p.popen.poll() is None:
            p.popen.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.popen.send_signal(signal.SIGABRT)
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait()
        p.collect()


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.02,
               procs: Sequence[Proc] = ()) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        for p in procs:
            if p.popen.poll() is not None:
                p.collect()
                raise RuntimeError(f"{p.name} exited with {p.popen.returncode} while waiting "
                                   f"for {what}: {(p.err or p.out)[-1500:]}")
        time.sleep(interval)
    raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")


def rq_workers(r: redis.Redis) -> int:
    from rq import Worker

    return len(Worker.all(connection=r))


def terminate(popen: subprocess.Popen, timeout: float = 5) -> None:
    """SIGTERM a helper server process; SIGKILL it if it does not stop in ``timeout`` s."""
    if popen.poll() is None:
        popen.terminate()
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


class LLMServerProcess:
    """The scripted LLM server in its own process (its CPU is not the bench's)."""

    def __init__(self, latency_ms: float = 0, cwd: Path | None = None) -> None:
        args = [sys.executable, "-m", "email_rag_harness.testing.llm_server", "--port", "0",
                "--latency-ms", str(latency_ms)]
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=env, cwd=cwd)
        assert self.popen.stdout is not None
        self.url = json.loads(self.popen.stdout.readline())["url"]

    def _call(self, method: str, path: str) -> dict[str, Any]:
        import urllib.request

        base = self.url.rsplit("/v1", 1)[0]
        req = urllib.request.Request(base + path, method=method,
                                     data=b"{}" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/_control/stats")

    def reset(self) -> None:
        self._call("POST", "/_control/reset")

    def chat_bodies(self) -> list[dict[str, Any]]:
        """The request bodies of the recent chat calls (the server keeps the last 200)."""
        got: Any = self._call("GET", "/_control/requests")
        return [r["body"] for r in got if str(r.get("path", "")).endswith("/chat/completions")]

    def stop(self) -> None:
        terminate(self.popen)
