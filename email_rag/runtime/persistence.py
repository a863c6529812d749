"""The local files that must outlive the container: checked before a process starts.

Three files hold what MariaDB may not have yet: the send journal (the relay's 250 of a reply,
written before MariaDB records it: without it a reply whose record was lost is sent twice),
the OAuth journal (a rotated refresh token: without it the mailbox loses its only valid
token) and the audit spool (events waiting for MariaDB). In a container they must live on
the image's volume, or replacing the container loses them.

"Persistent", concretely: ``EMAIL_RAG_PERSISTENT_DIR`` names the volume (the image sets it
to its ``VOLUME``, ``/var/lib/email-rag``; docker-compose mounts the named volume ``spool``
there), and a path is persistent when

1. it lies inside that directory once symlinks are resolved, and
2. that directory is a mount point of this process (``/proc/self/mountinfo``: a volume,
   not a folder of the container's own writable layer), and
3. the mount is not memory-backed (``tmpfs``, ``ramfs``: gone at the container's end).

Without ``EMAIL_RAG_PERSISTENT_DIR`` (a process outside an image: the demo, tests, a host
install) nothing is checked. The worker, the scheduler, ``idle`` and ``poll`` (the processes
that write these files) refuse to start when one is not persistent.

| situation | retry? | state known? | resume? |
|---|---|---|---|
| no ``EMAIL_RAG_PERSISTENT_DIR`` | - | yes: not in an image, no check | starts |
| every file inside the mounted, disk-backed volume | - | yes | starts |
| a file outside the volume (e.g. the relative default ``var/send-journal`` under /app) | no | yes: nothing started | ``ConfigError`` names the setting, its path and the volume: set it under the volume |
| a symlink inside the volume pointing outside it | no | yes: nothing started | as above (the resolved path counts) |
| the volume's directory is no mount point (run without the volume) | no | yes: nothing started | ``ConfigError``: mount a volume there (compose: ``spool``) |
| the volume is memory-backed (tmpfs) | no | yes: nothing started | ``ConfigError``: mount a disk-backed volume |
| ``/proc/self/mountinfo`` unreadable (not Linux) | no | no: cannot tell | ``ConfigError``: unset ``EMAIL_RAG_PERSISTENT_DIR`` only where the files are known to persist |
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import ConfigError
from ..core.settings import Settings

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
MOUNTINFO = Path("/proc/self/mountinfo")


def durable_files(settings: Settings) -> dict[str, Path]:
    """The local files that hold what MariaDB may not have yet, by their variable."""
    return {"EMAIL_RAG_SEND_JOURNAL_DIR": settings.send_journal_dir,
            "EMAIL_RAG_OAUTH_JOURNAL_DIR": settings.oauth_journal_dir,
            "EMAIL_RAG_AUDIT_SPOOL_PATH": settings.audit_spool_path}


def mounts(mountinfo: str) -> dict[str, str]:
    """Mount point -> filesystem type, from the text of ``/proc/self/mountinfo`` (the last
    mount of a point wins: it hides the earlier ones)."""
    found: dict[str, str] = {}
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or not tail.split():
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        found[point] = tail.split()[0]
    return found


def problems(volume: Path, files: dict[str, Path], mounted: dict[str, str]) -> list[str]:
    """What is not persistent (see the module's rule), in words an operator acts on."""
    volume = Path(os.path.realpath(volume))
    found = []
    fs = mounted.get(str(volume))
    if fs is None:
        found.append(f"the volume directory {volume} is not a mount point: no volume is "
                     "attached there, so its files live in the container's own layer and go "
                     "with it (docker-compose: mount the volume `spool` at it)")
    elif fs in MEMORY_FILESYSTEMS:
        found.append(f"the volume directory {volume} is a {fs} mount: memory, gone when the "
                     "container stops (mount a disk-backed volume there)")
    for name, path in files.items():
        real = Path(os.path.realpath(path))
        if real != volume and volume not in real.parents:
            found.append(f"{name}={path} is not inside the volume {volume} (it resolves to "
                         f"{real}); set it to a path under {volume}")
    return found


def check(settings: Settings) -> None:
    """Refuse to start (``ConfigError``) when a durable file is not on the persistent volume
    ``EMAIL_RAG_PERSISTENT_DIR`` names; nothing is checked without it."""
    if not settings.persistent_dir:
        return
    try:
        mounted = mounts(MOUNTINFO.read_text(encoding="utf-8", errors="replace"))
    except OSError as e:
        raise ConfigError(f"cannot tell whether {settings.persistent_dir} is a volume "
                          f"({MOUNTINFO}: {e.strerror}); unset EMAIL_RAG_PERSISTENT_DIR only "
                          "where the journals are known to persist") from e
    found = problems(Path(settings.persistent_dir), durable_files(settings), mounted)
    if found:
        raise ConfigError(
            "Refusing to start: the journals must survive this container (EMAIL_RAG_"
            "PERSISTENT_DIR, docs/states.md 'Where the journals live'): " + "; ".join(found)
            + ". A reply accepted by the relay whose record MariaDB has not yet got would "
            "otherwise be sent a second time after the container is replaced.")
