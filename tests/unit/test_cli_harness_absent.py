"""``email-rag`` without the test harness installed (a product install: ``pip install .``):
every product command still builds its parser, and each command of the harness says how to
install it instead of a traceback."""

from __future__ import annotations

import json

import pytest

from email_rag import cli


@pytest.fixture
def harness_absent(monkeypatch):
    """PROGRAMS pointing at a distribution that is not installed (the real lookup runs)."""
    absent = {name: ("email_rag_harness_not_installed." + module.partition(".")[2], text)
              for name, (module, text) in cli.PROGRAMS.items()}
    monkeypatch.setattr(cli, "PROGRAMS", absent)
    return absent


@pytest.mark.parametrize("argv", [["chaos", "--seed", "3", "--json"], ["demo", "--json"],
                                  ["bench", "worker", "--mails", "5", "--json"],
                                  ["sample-mailbox", "--json"]])
def test_a_harness_command_without_the_harness_says_how_to_install_it(harness_absent, argv,
                                                                       capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert code == 1
    assert out["data"]["error"] == "harness_not_installed"
    assert out["data"]["command"] == argv[0]
    assert "pip install ./harness" in out["message"] and "Nothing was done" in out["message"]
    assert "Traceback" not in captured.err


def test_without_the_harness_the_product_commands_still_parse(harness_absent, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    assert stop.value.code == 0
    listing = capsys.readouterr().out
    for name in ("migrate", "worker", "scheduler", "web", "chaos", "demo", "bench"):
        assert name in listing


def test_the_installed_harness_is_found(capsys):
    """In the dev venv (scripts/bootstrap.sh installs ./harness) every program is there."""
    assert all(cli.program_installed(module) for module, _ in cli.PROGRAMS.values())


def test_the_json_flag_before_the_harness_command_is_handed_over_too(harness_absent, capsys):
    """``email-rag --json demo``: the flag every command takes may come first (it gave an
    AttributeError traceback: the command's placeholder parser has no handler)."""
    code = cli.main(["--json", "demo", "--scripted"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["data"]["error"] == "harness_not_installed"
    assert out["data"]["command"] == "demo"


def test_an_installed_harness_program_gets_its_arguments_and_the_json_flag(capfd):
    """The real hand-over (a child ``python -m email_rag_harness.chaos``), flag first."""
    code = cli.main(["--json", "chaos", "--print-plan", "--mails", "10", "--seed", "2"])
    out = json.loads(capfd.readouterr().out)
    assert code == 0 and out["ok"] is True
    assert out["data"]["plan"]["mails"] == 10
