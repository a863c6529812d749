"""The health and metrics records (email_rag/ops, pure): what `status` and /metrics show."""

from datetime import datetime, timedelta

from email_rag.ops.health import MailboxHealth, Tally, tally
from email_rag.ops.metrics import (
    LLM_BUCKETS_MS,
    EventTally,
    Exposition,
    JobTally,
    LlmAttempts,
    MailboxGauge,
    Snapshot,
    _database,
    histograms,
)

AT = datetime(2026, 1, 2, 3, 4, 5)


def test_tally_maps_labels_to_counts():
    assert tally([{"label": "queued", "n": 2}, {"label": None, "n": "1"}]) == {"queued": 2,
                                                                               None: 1}


def test_mailbox_health_shows_the_lease_owner_only_while_the_lease_holds():
    row = {"name": "support", "consecutive_failures": 2, "needs_attention": 0, "alarm": 1,
           "lease_owner": "h:1:a", "lease_until": AT + timedelta(seconds=9),
           "lease_expired": 0, "failing_since": AT, "address": "not shown"}
    held = MailboxHealth.from_row(row)
    assert held.held_by == "h:1:a" and held.alarm is True
    assert held.as_dict() == {"name": "support", "last_success_at": None,
                              "failing_since": AT.isoformat(), "consecutive_failures": 2,
                              "backoff_until": None, "needs_attention": False,
                              "last_error": None, "alarm": True, "lease_owner": "h:1:a"}
    assert MailboxHealth.from_row({**row, "lease_expired": 1}).held_by is None
    assert MailboxHealth.from_row({**row, "lease_until": None}).held_by is None


def _llm(task: str, outcome: str, timed: int, le: int) -> LlmAttempts:
    return LlmAttempts.from_row({"task": task, "outcome": outcome, "n": timed, "timed": timed,
                                 "sum_ms": 100.0 * timed,
                                 **{f"le_{b}": le for b in LLM_BUCKETS_MS}})


def test_llm_histogram_sums_the_outcomes_of_a_task():
    h = histograms([_llm("draft", "ok", 3, 2), _llm("draft", "timeout", 1, 0),
                    _llm("classify", "ok", 2, 2)])
    assert (h["draft"].n, h["draft"].sum_ms, h["draft"].buckets[0]) == (4, 400.0, 2)
    assert h["classify"].n == 2


def test_exposition_of_a_snapshot():
    snap = Snapshot(
        mails=[Tally("received", 3)], index=[Tally(None, 1)],
        jobs=[JobTally("process_email", "dead", 2), JobTally("process_email", "done", 5)],
        sends=[], drafts=[], events=[EventTally("retry_scheduled", 4)],
        llm=[_llm("draft", "ok", 1, 1)],
        mailboxes=[MailboxGauge("support", 0, 0, None)], oldest_pending_draft_age_s=12.0)
    out = Exposition()
    _database(snap, out)
    text = out.text()
    assert 'email_rag_mails{status="received"} 3' in text
    assert 'email_rag_mails_index{index_status=""} 1' in text
    assert "email_rag_dead_letters 2" in text and "email_rag_retries_total 4" in text
    assert 'email_rag_llm_attempt_duration_seconds_bucket{task="draft",le="+Inf"} 1' in text
    assert "email_rag_oldest_pending_draft_age_seconds 12" in text
    assert 'email_rag_mailbox_consecutive_failures{mailbox="support"} 0' in text
    assert "email_rag_mailbox_last_success_timestamp_seconds{" not in text


def test_status_is_ok_only_with_every_required_dependency_and_the_counts():
    from email_rag.ops.health import Check, Counts, Status

    up = [Check("mariadb", True, True), Check("redis", True, True), Check("smtp", False, False)]
    counts = Counts({}, {"received": 1}, {}, {}, [])
    ok = Status(up, counts, queues={"email_rag": 0})
    assert ok.ok and ok.down == [] and ok.degraded == ["smtp"]
    assert ok.as_dict()["counts"]["mails"] == {"received": 1} and "counts_error" not in ok.as_dict()
    no_schema = Status(up, None, counts_error="no table")
    assert not no_schema.ok and no_schema.down == []
    assert no_schema.as_dict()["counts_error"] == "no table"
    db_down = Status([Check("mariadb", True, False), *up[1:]])
    assert not db_down.ok and db_down.down == ["mariadb"]


def test_vector_owner_judgement():
    from email_rag.indexing.owner_beacon import MAX_STARTS, OwnerBeat, OwnerStart, judge

    beat = OwnerBeat(41, "host-a", 0.0)
    ok, text = judge(beat, [OwnerStart(1.0, 41, "host-a")], [], waiting=3)
    assert ok and text.startswith("worker pid 41 on host-a since ")
    ok, text = judge(None, [], [], waiting=1)
    assert not ok and "no vector owner running while 1 entry waits" in text
    assert judge(None, [], [], waiting=0) == (True, "no vector owner running")
    starts = [OwnerStart(float(i), i) for i in range(MAX_STARTS + 1)]
    failed = [OwnerStart(9.0, 7, error="folder held by pid 5"), OwnerStart(8.0, 6, error="x")]
    ok, text = judge(beat, starts, failed, waiting=0)
    assert not ok and "2 failed start(s)" in text and "last: folder held by pid 5" in text
    assert f"restarted {MAX_STARTS + 1} times" in text
    assert OwnerStart(1.0, 2, error="e").as_json() == '{"at": 1.0, "pid": 2, "error": "e"}'
