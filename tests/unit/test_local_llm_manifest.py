"""The local model is used only when it is complete: a partial file or a missing server is
refused with the install command, never started (the probe with processes:
tests/integration/test_local_llm_probe.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from email_rag.core.errors import LocalLLMMissingError
from email_rag.llm.local_server import LocalModel


def _manifest(tmp_path: Path, size: int, written: int) -> Path:
    server = tmp_path / "llama-server"
    server.write_text("#!/bin/sh\n")
    server.chmod(server.stat().st_mode | stat.S_IEXEC)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"x" * written)
    path = tmp_path / "local-llm.json"
    path.write_text(json.dumps({"server": str(server), "model": str(model), "model_id": "m",
                                "model_bytes": size, "runtime": "test"}))
    return path


def test_a_complete_install_is_found(tmp_path):
    local = LocalModel.installed(_manifest(tmp_path, 10, 10))
    assert local.model_id == "m" and local.model.stat().st_size == 10


def test_a_partial_model_file_is_refused(tmp_path):
    with pytest.raises(LocalLLMMissingError, match="incomplete .*scripts/local-llm/install.sh"):
        LocalModel.installed(_manifest(tmp_path, 10, 7))


def test_no_install_says_how_to_install(tmp_path):
    with pytest.raises(LocalLLMMissingError, match="run: bash scripts/local-llm/install.sh"):
        LocalModel.installed(tmp_path / "missing.json")
