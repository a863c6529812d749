"""Where the journals must live (email_rag/runtime/persistence.py): the rule on a mount
table and real paths (tmp folders, symlinks); the real processes are in
tests/e2e/test_cli_persistence.py."""

from __future__ import annotations

from pathlib import Path

from email_rag.runtime.persistence import mounts, problems

MOUNTINFO = """\
23 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 23 0:26 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
612 590 253:1 /var/lib/docker/volumes/email-rag_spool/_data /var/lib/email-rag rw,relatime master:1 - ext4 /dev/vda1 rw
613 590 0:45 / /run/with\\040space rw - tmpfs tmpfs rw
"""


def test_the_mount_table_is_read_with_each_mount_points_filesystem():
    found = mounts(MOUNTINFO)
    assert found["/var/lib/email-rag"] == "ext4" and found["/dev/shm"] == "tmpfs"
    assert found["/run/with space"] == "tmpfs" and found["/"] == "ext4"
    assert mounts("garbage line\n\n") == {}


def files_in(base: Path) -> dict[str, Path]:
    return {"EMAIL_RAG_SEND_JOURNAL_DIR": base / "send-journal",
            "EMAIL_RAG_OAUTH_JOURNAL_DIR": base / "oauth-journal",
            "EMAIL_RAG_AUDIT_SPOOL_PATH": base / "audit-spool.jsonl"}


def test_files_inside_a_mounted_disk_volume_are_persistent(tmp_path: Path):
    volume = tmp_path / "volume"
    volume.mkdir()
    assert problems(volume, files_in(volume), {str(volume.resolve()): "ext4"}) == []


def test_a_journal_outside_the_volume_is_named_with_its_setting(tmp_path: Path):
    """The compose file's old default: the relative var/send-journal under /app."""
    volume = tmp_path / "volume"
    volume.mkdir()
    files = {**files_in(volume), "EMAIL_RAG_SEND_JOURNAL_DIR": tmp_path / "app/var/send-journal"}
    found = problems(volume, files, {str(volume.resolve()): "ext4"})
    assert len(found) == 1 and found[0].startswith("EMAIL_RAG_SEND_JOURNAL_DIR=")
    assert "not inside the volume" in found[0]


def test_a_symlink_in_the_volume_that_points_outside_it_is_not_persistent(tmp_path: Path):
    volume, elsewhere = tmp_path / "volume", tmp_path / "layer"
    volume.mkdir()
    elsewhere.mkdir()
    (volume / "send-journal").symlink_to(elsewhere)
    found = problems(volume, files_in(volume), {str(volume.resolve()): "ext4"})
    assert len(found) == 1 and str(elsewhere) in found[0]


def test_a_volume_directory_that_is_no_mount_point_or_memory_is_refused(tmp_path: Path):
    volume = tmp_path / "volume"
    volume.mkdir()
    unmounted = problems(volume, files_in(volume), {"/": "ext4"})
    assert len(unmounted) == 1 and "not a mount point" in unmounted[0]
    memory = problems(volume, files_in(volume), {str(volume.resolve()): "tmpfs"})
    assert len(memory) == 1 and "tmpfs" in memory[0]
