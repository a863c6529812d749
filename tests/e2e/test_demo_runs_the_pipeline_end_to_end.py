"""The README's first command: the whole pipeline on sample mail with the local defaults."""

import json

from tests.helpers import run_cli


def test_demo_runs_the_pipeline_and_the_approved_reply_is_received_once(env, db_name):
    """The fast variant (--scripted: the test double); the README's command runs the same
    code against the local model (tests/e2e/test_real_model.py drives that model)."""
    result = run_cli("demo", "--database", db_name, "--scripted", "--json", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data = json.loads(result.stdout)["data"]
    assert data["received"] == 1 and data["filed_in_sent"] == 1
    statuses = [m["status"] for m in data["mails"]]
    assert statuses.count("sent") == 1
    assert "draft_ready" in statuses, statuses
    assert {"no_reply", "no_reply_suggested"} & set(statuses), statuses  # the newsletter
    # every mail rests in a terminal or review state; nothing is left half-done
    assert set(statuses) <= {"sent", "draft_ready", "no_reply", "no_reply_suggested", "manual",
                             "failed"}
    assert "TEST DOUBLE" in data["llm"]
    # the sample team's past came first: history imported, knowledge imported
    assert data["team"]["history"]["indexed_all"] and data["team"]["knowledge"]["status"] == "ok"
    assert len(data["answered"]) == 8 and data["questions"] == 6
