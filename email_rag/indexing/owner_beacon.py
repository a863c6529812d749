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
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..core.rows import FromRow

log = logging.getLogger(__name__)

BEAT_KEY = "email-rag:vector-owner"
STARTS_KEY = "email-rag:vector-owner:starts"
FAILED_KEY = "email-rag:vector-owner:failed-starts"
WINDOW_S = 600
MAX_STARTS = 3  # more starts than this within WINDOW_S: the owner restarts repeatedly
INTERVAL_S = 5.0


def _now() -> float:
    return time.time()


@dataclass(frozen=True)
class OwnerStart(FromRow):
    """One start of a vector owner (``error``: it failed), kept in Redis for ``WINDOW_S``."""

    at: float
    pid: int
    host: str | None = None
    error: str | None = None

    def as_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None})


@dataclass(frozen=True)
class OwnerBeat(FromRow):
    """The running owner's heartbeat (``BEAT_KEY``)."""

    pid: int
    host: str
    since: float
    at: float = 0.0


def record_start(redis: Any) -> None:
    _push(redis, STARTS_KEY, OwnerStart(_now(), os.getpid(), host=socket.gethostname()))


def record_failed_start(redis: Any, error: str) -> None:
    log.error("ALARM vector owner cannot start: %s Mails needing the vector queue wait; "
              "everything else keeps flowing.", error)
    _push(redis, FAILED_KEY, OwnerStart(_now(), os.getpid(), error=error[:400]))


def _push(redis: Any, key: str, item: OwnerStart) -> None:
    try:
        with redis.pipeline() as pipe:
            pipe.lpush(key, item.as_json())
            pipe.ltrim(key, 0, 49)
            pipe.expire(key, WINDOW_S)
            pipe.execute()
    except Exception as e:  # noqa: BLE001 - the beacon is informative; Redis may be down
        log.warning("vector owner beacon not written (%s): %s", key, e)


class Beacon:
    """The running owner's heartbeat (a daemon thread)."""

    def __init__(self, redis: Any, interval: float = INTERVAL_S) -> None:
        self.redis, self.interval = redis, interval
        self.beat_record = OwnerBeat(os.getpid(), socket.gethostname(), _now())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        try:
            self.redis.set(BEAT_KEY, json.dumps(asdict(replace(self.beat_record, at=_now()))),
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


def _recent(redis: Any, key: str, now: float) -> list[OwnerStart]:
    cutoff = now - WINDOW_S
    out = []
    for raw in redis.lrange(key, 0, 49):
        try:
            item = OwnerStart.from_row(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            continue
        if float(item.at or 0) >= cutoff:
            out.append(item)
    return out


def state(redis: Any, waiting: int) -> tuple[bool, str]:
    """(ok, what an admin reads). ``waiting``: entries queued on the vector queue."""
    raw = redis.get(BEAT_KEY)
    owner = OwnerBeat.from_row(json.loads(raw)) if raw else None
    now = _now()
    return judge(owner, _recent(redis, STARTS_KEY, now), _recent(redis, FAILED_KEY, now),
                 waiting)


def judge(owner: OwnerBeat | None, starts: list[OwnerStart], failed: list[OwnerStart],
          waiting: int) -> tuple[bool, str]:
    """The owner's state from its beat and the starts of the window (newest first)."""
    problems = []
    if failed:
        problems.append(f"ALARM {len(failed)} failed start(s) in the last {WINDOW_S // 60} min, "
                        f"last: {failed[0].error}")
    if len(starts) > MAX_STARTS:
        problems.append(f"ALARM restarted {len(starts)} times in the last {WINDOW_S // 60} min")
    if owner is None and waiting:
        problems.append(f"ALARM no vector owner running while {waiting} entr"
                        f"{'y waits' if waiting == 1 else 'ies wait'} on the vector queue")
    if owner is not None:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(owner.since)))
        head = f"worker pid {owner.pid} on {owner.host} since {since}"
    else:
        head = "no vector owner running"
    return not problems, "; ".join([head, *problems])
