"""The processes that write the journals refuse to start off the persistent volume (issue
44; email_rag/runtime/persistence.py), through the real CLI and this machine's real mount
table: a folder that is no mount point, a memory-backed mount, and the root file system (a
real disk mount) where they start."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli


def journals_under(base: Path) -> dict[str, str]:
    return {"EMAIL_RAG_SEND_JOURNAL_DIR": str(base / "send-journal"),
            "EMAIL_RAG_OAUTH_JOURNAL_DIR": str(base / "oauth-journal"),
            "EMAIL_RAG_AUDIT_SPOOL_PATH": str(base / "audit-spool.jsonl")}


@pytest.mark.parametrize("command", [["worker", "--burst"], ["scheduler"], ["poll", "--once"],
                                     ["idle"]])
def test_a_journal_writer_refuses_a_volume_that_is_no_mount_point(env, tmp_path, command):
    """GIVEN EMAIL_RAG_PERSISTENT_DIR naming a plain folder (no volume mounted there) WHEN a
    process that writes the journals starts THEN it exits 1 at once, saying why and what to
    do, before it touches anything."""
    volume = tmp_path / "volume"
    volume.mkdir()
    r = run_cli(*command, "--json", env_extra={"EMAIL_RAG_PERSISTENT_DIR": str(volume),
                                               **journals_under(volume)}, timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Refusing to start" in r.stdout and "is not a mount point" in r.stdout
    assert "sent a second time" in r.stdout
    assert not (volume / "send-journal").exists()


def test_a_memory_backed_volume_is_refused(env, tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or not any(" /dev/shm " in line and " - tmpfs " in line for line in
                                   Path("/proc/self/mountinfo").read_text().splitlines()):
        pytest.skip("no tmpfs mounted at /dev/shm here")
    r = run_cli("worker", "--burst", "--json", env_extra={
        "EMAIL_RAG_PERSISTENT_DIR": str(shm), **journals_under(shm / f"erag-{tmp_path.name}")},
        timeout=60)
    assert r.returncode == 1 and "tmpfs mount" in r.stdout, r.stdout + r.stderr


def test_the_worker_starts_with_its_journals_on_a_disk_mount(env, tmp_path):
    """GIVEN the root file system (a disk-backed mount point here) as the volume and the
    journals under it WHEN the worker starts THEN it runs (a burst over the empty queues)."""
    r = run_cli("worker", "--burst", "--json", env_extra={
        "EMAIL_RAG_PERSISTENT_DIR": "/", **journals_under(tmp_path)}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_without_a_persistent_dir_nothing_is_checked(env, tmp_path):
    r = run_cli("worker", "--burst", "--json", env_extra=journals_under(tmp_path), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
