"""``email-rag`` without the benchmarks installed (a wheel install): every other command
still builds its parser, and ``bench`` says where the benchmarks run."""

from __future__ import annotations

import builtins
import json

from email_rag.cli import main


def test_without_bench_the_cli_still_runs_and_bench_says_where_it_runs(monkeypatch, capsys):
    real_import = builtins.__import__

    def no_bench(name, *args, **kwargs):
        if name == "bench" or name.startswith("bench."):
            raise ModuleNotFoundError(f"No module named {name!r}", name="bench")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_bench)
    code = main(["--json", "bench", "worker", "--mails", "5"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["data"]["error"] == "bench_not_installed"
    assert "source checkout" in out["message"]
