"""Services.reset() after a MariaDB outage: every client is rebuilt, but the local Qdrant
folder stays owned by the process that holds it (the vector worker's one-owner lock)."""

from __future__ import annotations

import os

import pytest

from email_rag.adapters.vectors import QdrantStore, holder
from email_rag.core.errors import StoreLockedError
from email_rag.wiring.services import Services


def test_reset_keeps_the_local_vector_store_and_rebuilds_the_rest(settings, tmp_path):
    """GIVEN a process holding the local Qdrant folder and a MariaDB connection
    WHEN its services are reset (as the worker does after a MariaDB outage)
    THEN the database client is new, but the folder is still held by this process, so no
    other process can slip in (regression found by the chaos harness); close() lets go."""
    settings.qdrant_path = tmp_path / "q"
    svc = Services(settings)
    store = svc.vectors
    store.open()
    db = svc.db
    svc.reset()
    assert svc.db is not db
    assert svc.vectors is store and holder(tmp_path / "q")["pid"] == os.getpid()
    with pytest.raises(StoreLockedError):
        QdrantStore(path=tmp_path / "q", dim=settings.vector_dim).open()
    svc.close()
    other = QdrantStore(path=tmp_path / "q", dim=settings.vector_dim)
    other.open()
    other.close()
