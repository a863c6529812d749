"""Is there a vector owner? The beacon of the worker that owns a local Qdrant folder.

With a local Qdrant folder exactly one process - the ``--with-vectors`` worker -
runs the vector steps. If it cannot start (another process holds the folder) or
keeps dying, every mail that needs the vector queue waits, while the rest of the
pipeline flows. This module makes that visible instead of silent:

- the running owner beats a Redis key (``beat``; expires after ``3 x interval``);
- every start of an owner is counted in a 10-minute window (``record_start``), every
  start that failed is counted with its error (``record_failed_start``), and the
  worker logs an ``ALARM`` line;
- ``email-rag status`` and the web status page read ``state()``: no beat while
  entries wait on the vector queue, failed starts, or more than ``MAX_STARTS``
  starts in the window is an alarm.

Redis keeps this (a restarted, empty Redis shows "no beat" until the owner beats
again, a few seconds later); MariaDB's jobs table stays the truth about the work.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

BEAT_KEY = "email-rag:vector-owner"
STARTS_KEY = "email-rag:vector-owner:starts"
FAILED_KEY = "email-rag:vector-owner:failed-starts"
WINDOW_S = 600
MAX_STARTS = 3  # more starts than this within WINDOW_S: the owner restarts repeatedly
INTERVAL_S = 5.0


def _now() -> float:
    return time.time()


def record_start(redis: Any) -> None:
    _push(redis, STARTS_KEY, {"at": _now(), "pid": os.getpid(), "host": socket.gethostname()})


def record_failed_start(redis: Any, error: str) -> None:
    log.error("ALARM vector owner cannot start: %s Mails needing the vector queue wait; "
              "everything else keeps flowing.", error)
    _push(redis, FAILED_KEY, {"at": _now(), "pid": os.getpid(), "error": error[:400]})


def _push(redis: Any, key: str, item: dict[str, Any]) -> None:
    try:
        with redis.pipeline() as pipe:
            pipe.lpush(key, json.dumps(item))
            pipe.ltrim(key, 0, 49)
            pipe.expire(key, WINDOW_S)
            pipe.execute()
    except Exception as e:  # noqa: BLE001 - the beacon is informative; Redis may be down
        log.warning("vector owner beacon not written (%s): %s", key, e)


class Beacon:
    """The running owner's heartbeat (a daemon thread)."""

    def __init__(self, redis: Any, interval: float = INTERVAL_S) -> None:
        self.redis, self.interval = redis, interval
        self.info = {"pid": os.getpid(), "host": socket.gethostname(), "since": _now()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        try:
            self.redis.set(BEAT_KEY, json.dumps({**self.info, "at": _now()}),
                           ex=max(1, int(3 * self.interval)))
        except Exception as e:  # noqa: BLE001 - Redis may be down; beat again later
            log.warning("vector owner beat not written: %s", e)

    def start(self) -> Beacon:
        self.beat()
        self._thread = threading.Thread(target=self._run, name="vector-owner-beacon",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        self._stop.set()
        try:
            self.redis.delete(BEAT_KEY)
        except Exception:  # noqa: BLE001
            pass


def _recent(redis: Any, key: str) -> list[dict[str, Any]]:
    cutoff = _now() - WINDOW_S
    out = []
    for raw in redis.lrange(key, 0, 49):
        try:
            item = json.loads(raw)
        except ValueError:
            continue
        if float(item.get("at", 0)) >= cutoff:
            out.append(item)
    return out


def state(redis: Any, waiting: int) -> tuple[bool, str]:
    """(ok, what an admin reads). ``waiting``: entries queued on the vector queue."""
    raw = redis.get(BEAT_KEY)
    owner = json.loads(raw) if raw else None
    starts = _recent(redis, STARTS_KEY)
    failed = _recent(redis, FAILED_KEY)
    problems = []
    if failed:
        problems.append(f"ALARM {len(failed)} failed start(s) in the last {WINDOW_S // 60} min, "
                        f"last: {failed[0].get('error')}")
    if len(starts) > MAX_STARTS:
        problems.append(f"ALARM restarted {len(starts)} times in the last {WINDOW_S // 60} min")
    if owner is None and waiting:
        problems.append(f"ALARM no vector owner running while {waiting} entr"
                        f"{'y waits' if waiting == 1 else 'ies wait'} on the vector queue")
    if owner is not None:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(owner["since"])))
        head = f"worker pid {owner['pid']} on {owner['host']} since {since}"
    else:
        head = "no vector owner running"
    return not problems, "; ".join([head, *problems])
