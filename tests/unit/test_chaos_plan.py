"""The chaos fault plan: seeded, reproducible, validated."""

from __future__ import annotations

import json

import pytest
from email_rag_harness.chaos import plan as chaos_plan
from email_rag_harness.chaos.plan import (
    PlanError,
    decision,
    default_plan,
    delivery_sizes,
    dumps,
    validate,
)


def test_same_seed_and_size_give_the_same_plan_byte_for_byte():
    assert dumps(default_plan(60, 7)) == dumps(default_plan(60, 7))


def test_another_seed_gives_another_plan():
    a, b = default_plan(60, 7), default_plan(60, 8)
    assert [e["at"] for e in a["events"]] != [e["at"] for e in b["events"]]
    assert a["llm"]["seed"] != b["llm"]["seed"]


def test_default_plan_holds_every_fault_the_harness_promises():
    """GIVEN the default plan of a small run THEN it has each kind of fault at least once,
    and the SMTP faults cover 421, 451, 550, a drop, a stall past the timeout (filed in the
    Sent folder, and not: the send ends unknown) and a stall with a kill (between accept
    and marking sent)."""
    plan = default_plan(60, 7)
    faults = {e["fault"] for e in plan["events"] if "fault" in e}
    assert faults == set(chaos_plan.FAULTS)
    assert {e["act"] for e in plan["events"] if "act" in e} == set(chaos_plan.ACTS)
    smtp = {(e["action"][:3], e.get("tag", "")) for e in plan["events"]
            if e.get("fault") == "smtp"}
    assert {("421", ""), ("451", ""), ("550", ""), ("dro", ""), ("sta", "timeout"),
            ("sta", "kill"), ("sta", "unfiled")} <= smtp
    llm = {r["fault"] for r in plan["llm"]["rules"]}
    assert {"timeout_before", "timeout_after", "invalid_json", "schema_violation",
            "status"} <= llm
    assert {r.get("status") for r in plan["llm"]["rules"]} >= {429, 500, 503}
    assert [e["at"] for e in plan["events"]] == sorted(e["at"] for e in plan["events"])


@pytest.mark.parametrize("seed", range(1, 41))
def test_every_seed_holds_real_crashes_a_long_outage_and_every_admin_act(seed):
    """GIVEN any seed THEN its plan crashes MariaDB twice (once down for longer than every
    timeout) and Redis twice, hangs MariaDB, misroutes vector entries, and has every admin
    and staff act; the deadline leaves room for the outages."""
    plan = default_plan(60, seed)
    events = plan["events"]
    db_crashes = [e for e in events if e.get("fault") == "db_crash"]
    assert len(db_crashes) >= 2
    assert max(e["seconds"] for e in db_crashes) >= chaos_plan.LONG_OUTAGE_S
    assert sum(1 for e in events if e.get("fault") == "redis_crash") >= 2
    assert {"db_hang", "misroute", "qdrant_outage"} <= {e.get("fault") for e in events}
    assert {e["act"] for e in events if "act" in e} == set(chaos_plan.ACTS)
    outages = sum(e.get("seconds", 0) for e in events
                  if e.get("fault") in ("db_crash", "redis_crash", "db_hang", "db_down"))
    assert plan["timing"]["deadline_s"] >= 120 + outages


def test_seeds_differ_in_magnitudes_and_faults_not_only_in_times():
    plans = [default_plan(60, seed) for seed in range(1, 21)]
    longest = {max(e["seconds"] for e in p["events"] if e.get("fault") == "db_crash")
               for p in plans}
    rates = {p["llm"]["rules"][0]["probability"] for p in plans}
    kinds = {tuple(sorted(chaos_plan.counts(p).items())) for p in plans}
    assert len(longest) > 10 and len(rates) > 10 and len(kinds) > 3


def test_bigger_runs_repeat_the_fault_cycle():
    small, big = default_plan(60, 1), default_plan(500, 1)
    for fault in ("qdrant_outage", "db_crash", "redis_crash", "misroute"):
        n_small = sum(1 for e in small["events"] if e.get("fault") == fault)
        assert sum(1 for e in big["events"] if e.get("fault") == fault) == 3 * n_small
    assert len(big["events"]) > 2.5 * len(small["events"])
    assert big["timing"]["deadline_s"] > small["timing"]["deadline_s"]


def test_the_plan_survives_a_round_trip_through_a_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(dumps(default_plan(80, 3)))
    assert chaos_plan.load(path) == default_plan(80, 3)


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(version=2), "version"),
    (lambda p: p["events"].append({"at": 1, "fault": "meteor"}), "fault must be one of"),
    (lambda p: p["events"].append({"at": 1, "fault": "smtp", "stage": "rcpt",
                                   "action": "stall"}), "data stage only"),
    (lambda p: p["events"].append({"at": -1, "fault": "redis_flush"}), "'at'"),
    (lambda p: p["env"].update(EMAIL_RAG_SAFEGUARDS="false"), "must not set"),
    (lambda p: p.update(deliveries=[[0, 0.5]]), "add up to 1"),
    (lambda p: p["llm"]["rules"].append({"fault": "nonsense"}), "plan.llm"),
    (lambda p: p["events"].append({"at": 1, "act": "burn_it_down"}), "act must be one of"),
    (lambda p: p["events"].append({"at": 1, "fault": "oauth_token", "mode": "slow"}),
     "oauth_token mode"),
])
def test_a_broken_plan_is_refused_with_what_is_wrong(change, message):
    plan = json.loads(dumps(default_plan(60, 7)))
    change(plan)
    with pytest.raises(PlanError, match=message):
        validate(plan)


def test_staff_decisions_are_seeded_per_mail_and_follow_the_rates():
    plan = default_plan(60, 7)
    keys = [f"m{i:05d}" for i in range(2000)]
    first = [decision(plan, k) for k in keys]
    assert first == [decision(plan, k) for k in keys]
    share = {d: first.count(d) / len(keys) for d in chaos_plan.DECISIONS}
    assert 0.07 < share["reject"] < 0.13 and 0.21 < share["double_approve"] < 0.29


def test_delivery_waves_carry_every_delivery_once():
    plan = default_plan(60, 7)
    assert sum(delivery_sizes(plan, 63)) == 63
    assert len(delivery_sizes(plan, 63)) == len(plan["deliveries"])


def test_seeds_draw_the_oauth_token_fault_in_both_modes():
    drawn = {e["mode"]: e for seed in range(1, 20) for e in default_plan(60, seed)["events"]
             if e.get("fault") == "oauth_token"}
    assert set(drawn) == {"down", "invalid_grant"}
    for e in drawn.values():  # longer than an access token lives in a run (8 s)
        assert 9.0 <= e["seconds"] <= 16.0 and e["max_seconds"] > 0


@pytest.mark.parametrize("seed", range(1, 21))
def test_every_seed_blackholes_one_workers_mariadb_longer_than_every_timeout(seed):
    plan = default_plan(60, seed)
    [hole] = [e for e in plan["events"] if e.get("fault") == "db_blackhole_worker"]
    read_timeout = float(plan["env"]["EMAIL_RAG_WORKER_DB_TIMEOUT_SECONDS"])
    assert hole["seconds"] >= chaos_plan.LONG_OUTAGE_S > read_timeout
    assert plan["timing"]["deadline_s"] >= 120 + hole["seconds"]
    # it waits for a worker holding a mail entry until well after the last delivery wave:
    # on a loaded machine the first mails were stored 60-150 s into the run (2026-12-01),
    # and a fault that gave up after 30 s was skipped in every run
    last_wave = max(at for at, _ in plan["deliveries"])
    assert hole["at"] + hole["wait_s"] >= last_wave + 100


def test_a_qdrant_outage_after_the_last_delivery_wave_is_a_valid_plan():
    """A harsher plan: the store goes away after the last wave (retries and the sync
    meet it); the harness runs it instead of refusing it."""
    plan = json.loads(dumps(default_plan(60, 7)))
    last_wave = max(at for at, _ in plan["deliveries"])
    plan["events"].append({"at": last_wave + 5, "fault": "qdrant_outage", "seconds": 16.0,
                           "max_seconds": 40.0})
    checked = validate(plan)
    assert [e["at"] for e in checked["events"] if e.get("fault") == "qdrant_outage"][-1] \
        == last_wave + 5
