"""One ``Services`` per request thread.

FastAPI runs plain ``def`` routes in a thread pool; a MariaDB connection must
not be shared between threads, so each thread gets its own Services (and so
its own connection), built lazily and reused by that thread's later requests.
After a MariaDB outage the thread's Services is reset (reconnect, clear caches).
Its MariaDB connections have a read/write timeout (``web_db_timeout_seconds``): a
database that accepts but never answers gives a 503 page within seconds.
"""

from __future__ import annotations

import threading

from ..core.settings import Settings
from ..wiring.services import Services


class ServicesPool:
    def __init__(self, settings: Settings) -> None:
        if settings.web_db_timeout_seconds > 0 and not settings.db_read_timeout:
            settings = settings.model_copy(update={"db_read_timeout": settings.web_db_timeout_seconds})
        self.settings = settings
        self._local = threading.local()
        self._all: list[Services] = []
        self._lock = threading.Lock()
        self.generation = 0  # raised after a MariaDB outage: every thread resets its Services

    def get(self) -> Services:
        svc = getattr(self._local, "svc", None)
        if svc is None:
            svc = Services(self.settings)
            self._local.svc = svc
            self._local.generation = self.generation
            with self._lock:
                self._all.append(svc)
        elif self._local.generation != self.generation:
            svc.reset()  # reconnect, clear every cached client
            self._local.generation = self.generation
        return svc

    def close(self) -> None:
        with self._lock:
            for svc in self._all:
                svc.close()
            self._all.clear()
