"""Durable small files: written whole or not at all, and still there after a crash."""

from __future__ import annotations

import os
from pathlib import Path


def write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file (mode 0600), fsync it, rename it over ``path`` and
    fsync the folder, so a crash leaves the old file or the new one, never a torn one.
    Raises ``OSError`` when the disk refuses."""
    tmp = path.with_suffix(f".tmp.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
