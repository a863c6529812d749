"""Importing a folder (recursively) or one file of the team's knowledge, resumable.

``Importer(db, embedder).run(path, mailbox_id, actor)``: one ``knowledge_imports`` row per
root and scope is the checkpoint, with a row per file (``pending``, ``done``, ``failed``).
Each file is read (``documents.read_file``), split and embedded outside a transaction, then
stored in one transaction that also marks its file row ``done`` and updates the counts: a
file is imported whole or not at all, and counted once. A file whose bytes are the same as
at its last import (``file_hash``) is left as it is (so an article edited in the web stays
edited until its file changes). When every file had its turn, the articles imported from
files under the root that are no longer there are deleted (not for a single file).

| situation | retry? | state known? | resume? |
|---|---|---|---|
| a bad file (unknown type, empty, too large, encrypted PDF, broken) | no: the file is ``failed`` with the reason (its name, never its text) | yes | fix it; the same command tries failed files again |
| the embedder is down | no: the file is ``failed`` ("embedder unreachable") | yes: nothing of the file written | the same command again |
| SIGTERM / SIGINT | - | yes: stops after the current file, status ``interrupted`` | the same command again |
| killed (SIGKILL, power) midway | - | yes: the files before are committed, the current one not at all; the row stays ``running`` | the same command again takes over (the lock died with the connection) |
| the same import already running | no: refused | yes: nothing done | wait for it |
| MariaDB down | no: the error goes to the caller | yes: each file is one transaction | the same command again |
| the path does not exist | no | yes: nothing done | - |
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..core.errors import BadInputError, EmbeddingRejectedError, EmbeddingUnavailableError
from ..core.index_ports import Embedder
from ..db import Database, slot_params, sql
from ..db.audit import AuditEvent, write_events
from .articles import ArticleStore, Origin
from .documents import DocumentError, read_file


class ImportStatus(StrEnum):
    RUNNING = "running"  # a process works on it (or died doing so: the next run takes over)
    COMPLETED = "completed"  # every file imported; terminal
    FAILED = "failed"  # every file had its turn, some failed (listed); the next run retries them
    INTERRUPTED = "interrupted"  # stopped by SIGTERM/SIGINT between two files


class FileStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"  # imported, updated or unchanged (``outcome``)
    FAILED = "failed"  # with ``error``


@dataclass
class ImportResult:
    import_id: int
    status: ImportStatus
    processed: int
    failed: int
    remaining: int
    removed: int = 0
    resumed: bool = False
    outcomes: dict[str, int] = field(default_factory=dict)  # created/updated/unchanged
    failures: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    @property
    def resume_available(self) -> bool:
        return self.status != ImportStatus.COMPLETED

    def as_dict(self, next_command: str | None) -> dict[str, Any]:
        """The ``--json`` data (keys as the other run results of the CLI)."""
        return {"status": str(self.status), "processed": self.processed, "failed": self.failed,
                "remaining": self.remaining, "resumeAvailable": self.resume_available,
                "next": next_command if self.resume_available else None,
                "importId": self.import_id, "removed": self.removed, "resumed": self.resumed,
                "outcomes": self.outcomes,
                "failures": [{"path": p, "error": e} for p, e in self.failures]}


def files_of(root: Path) -> list[Path]:
    """The files to import: ``root`` itself, or every regular file under it (recursively,
    hidden files and folders left out), sorted."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and not any(part.startswith(".")
                                             for part in p.relative_to(root).parts))


class Importer:
    def __init__(self, db: Database, embedder: Embedder,
                 stop: Callable[[], bool] = lambda: False) -> None:
        self.db = db
        self.store = ArticleStore(db, embedder)
        self.stop = stop

    def run(self, path: str | Path, mailbox_id: int | None, actor: str) -> ImportResult:
        root = Path(path).expanduser().absolute()
        if not root.exists():
            raise BadInputError(f"{path}: no such file or folder. Nothing was imported.")
        root = root.resolve()
        key = mailbox_id or 0
        lock = "erag_kn:" + hashlib.sha1(f"{root}|{key}".encode()).hexdigest()
        if not self.db.fetchone(sql("knowledge_import_lock"), {"name": lock})["got"]:
            raise BadInputError(f"An import of {root} is running already; nothing was done. "
                                "Wait for it to finish.")
        try:
            return self._run(root, mailbox_id, actor)
        finally:
            self.db.fetchone(sql("knowledge_import_unlock"), {"name": lock})

    def _run(self, root: Path, mailbox_id: int | None, actor: str) -> ImportResult:
        files = [str(p) for p in files_of(root)]
        import_id, resumed = self._plan(root, mailbox_id, files, actor)
        outcomes: dict[str, int] = {}
        interrupted = False
        for row in self.db.fetchall(sql("knowledge_import_files_pending"),
                                    {"import_id": import_id}):
            if self.stop():
                interrupted = True
                break
            outcome = self._file(import_id, Path(str(row["path"])), root, mailbox_id, actor)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        removed = 0 if interrupted or not root.is_dir() else self._remove_gone(
            root, mailbox_id, set(files), actor)
        return self._finish(import_id, interrupted, removed, resumed, outcomes, actor)

    def _plan(self, root: Path, mailbox_id: int | None, files: list[str],
              actor: str) -> tuple[int, bool]:
        """The import row (an unfinished one of this root and scope is resumed) with a row
        per file."""
        key = mailbox_id or 0
        with self.db.transaction() as cur:
            row = cur.fetchone(sql("knowledge_import_open"), {"root": str(root),
                                                              "mailbox_key": key})
            resumed = row is not None
            if resumed:
                import_id = int(row["id"])
                cur.execute(sql("knowledge_import_files_retry"), {"import_id": import_id})
                if files:
                    cur.execute(sql("knowledge_import_files_gone", paths=len(files)),
                                {"import_id": import_id, **slot_params(paths=files)})
                else:
                    cur.execute(sql("knowledge_import_files_clear_pending"),
                                {"import_id": import_id})
            else:
                cur.execute(sql("knowledge_import_insert"),
                            {"root": str(root), "mailbox_key": key, "by": actor})
                import_id = cur.lastrowid
            cur.executemany(sql("knowledge_import_file_add"),
                            [{"import_id": import_id, "path": p} for p in files])
            self._count(cur, import_id, ImportStatus.RUNNING, None)
            write_events(cur, [AuditEvent(
                actor, "knowledge_import", import_id,
                "knowledge_import_resumed" if resumed else "knowledge_import_started",
                to_state=str(ImportStatus.RUNNING),
                detail={"root": str(root), "mailbox_id": mailbox_id, "files": len(files)})])
        return import_id, resumed

    def _file(self, import_id: int, path: Path, root: Path, mailbox_id: int | None,
              actor: str) -> str:
        """Import one file; its outcome (created, updated, unchanged, failed)."""
        try:
            doc = read_file(path)
            with self.db.transaction() as cur:
                existing = self.store.by_source(cur, mailbox_id, str(path))
            unchanged = existing is not None and existing.file_hash == doc.file_hash
            prepared = None if unchanged else self.store.prepare(doc.title, doc.text,
                                                                 doc.language)
        except DocumentError as e:
            return self._failed(import_id, path, str(e), actor)
        except BadInputError as e:
            return self._failed(import_id, path, f"{path.name}: {e}", actor)
        except (EmbeddingUnavailableError, EmbeddingRejectedError) as e:
            return self._failed(import_id, path, f"{path.name}: the embedder failed "
                                f"({type(e).__name__}); run the same command again", actor)
        with self.db.transaction() as cur:
            existing = self.store.by_source(cur, mailbox_id, str(path))
            if existing is None:
                assert prepared is not None
                article_id = self.store.create_in(
                    cur, prepared, mailbox_id=mailbox_id, origin=Origin.FILE, actor=actor,
                    source_key=str(path), source_root=str(root), file_hash=doc.file_hash)
                outcome = "created"
            elif existing.file_hash == doc.file_hash:
                article_id, outcome = existing.id, "unchanged"
            else:
                if prepared is None:
                    prepared = self.store.prepare(doc.title, doc.text, doc.language)
                article_id = existing.id
                changed = self.store.update_in(cur, existing, prepared, actor=actor,
                                               file_hash=doc.file_hash, source_root=str(root))
                outcome = "updated" if changed else "unchanged"
            cur.execute(sql("knowledge_import_file_done"), {
                "import_id": import_id, "path": str(path), "status": str(FileStatus.DONE),
                "outcome": outcome, "article_id": article_id, "error": None})
            self._count(cur, import_id, ImportStatus.RUNNING, None)
        return outcome

    def _failed(self, import_id: int, path: Path, why: str, actor: str) -> str:
        with self.db.transaction() as cur:
            cur.execute(sql("knowledge_import_file_done"), {
                "import_id": import_id, "path": str(path), "status": str(FileStatus.FAILED),
                "outcome": "failed", "article_id": None, "error": why[:1000]})
            self._count(cur, import_id, ImportStatus.RUNNING, None)
            write_events(cur, [AuditEvent(actor, "knowledge_import", import_id,
                                          "knowledge_file_failed",
                                          detail={"file": path.name, "error": why[:300]})])
        return "failed"

    def _remove_gone(self, root: Path, mailbox_id: int | None, files: set[str],
                     actor: str) -> int:
        """Delete the articles imported from files under ``root`` that are gone."""
        removed = 0
        for row in self.db.fetchall(sql("knowledge_articles_of_files"),
                                    {"mailbox_key": mailbox_id or 0}):
            source = str(row["source_key"] or "")
            if source in files or not Path(source).is_relative_to(root):
                continue
            with self.db.transaction() as cur:
                self.store.delete_in(cur, self.store.lock(cur, int(row["id"])), actor)
            removed += 1
        return removed

    def _count(self, cur: Any, import_id: int, status: ImportStatus, removed: int | None
               ) -> dict[str, int]:
        counts = cur.fetchone(sql("knowledge_import_counts"), {"import_id": import_id}) or {}
        values = {k: int(counts.get(k) or 0) for k in ("processed", "failed", "remaining")}
        if removed is None:
            row = cur.fetchone(sql("knowledge_import_get"), {"id": import_id})
            removed = int(row["removed"]) if row else 0
        cur.execute(sql("knowledge_import_set_status"),
                    {"id": import_id, "status": str(status), "removed": removed, **values})
        return values

    def _finish(self, import_id: int, interrupted: bool, removed: int, resumed: bool,
                outcomes: dict[str, int], actor: str) -> ImportResult:
        with self.db.transaction() as cur:
            counts = cur.fetchone(sql("knowledge_import_counts"), {"import_id": import_id}) or {}
            status = (ImportStatus.INTERRUPTED if interrupted
                      else ImportStatus.FAILED if int(counts.get("failed") or 0)
                      else ImportStatus.COMPLETED)
            values = self._count(cur, import_id, status, removed)
            failures = [(str(r["path"]), str(r["error"])) for r in cur.fetchall(
                sql("knowledge_import_failures"), {"import_id": import_id})]
            write_events(cur, [AuditEvent(actor, "knowledge_import", import_id,
                                          f"knowledge_import_{status}", to_state=str(status),
                                          detail={**values, "removed": removed})])
        return ImportResult(import_id, status, values["processed"], values["failed"],
                            values["remaining"], removed, resumed, outcomes, failures)
