"""The chaos report's counter-check columns (issue 43, seed 003): hardened except one
safeguard each, built from the harness's public seams, printed beside hardened and naive."""

from __future__ import annotations

import pytest
from email_rag_harness.chaos import counter
from email_rag_harness.chaos.command import build_parser
from email_rag_harness.chaos.harness import COUNTER_CHECKS, ENTRY, MODES, ModeResult
from email_rag_harness.chaos.naive import NaiveJobStore, NaivePoller
from email_rag_harness.chaos.report import COLUMNS, prevented_by, render

from email_rag.core.settings import Settings
from email_rag.db.stores import SendStore
from email_rag.sending.sender import Unconfirmed
from email_rag.wiring.services import Services


def test_there_is_one_counter_check_per_safeguard_the_issue_names():
    assert COUNTER_CHECKS == ("no_idempotency_keys", "no_claim_fence", "no_reconciliation",
                              "no_dedup")
    assert set(COUNTER_CHECKS) <= set(MODES)
    assert all(ENTRY[m] == "email_rag_harness.chaos.counter_cli" for m in COUNTER_CHECKS)
    assert [COLUMNS[m] for m in COUNTER_CHECKS] == [
        "Without idempotency keys", "Without claim fence",
        "Without reconciliation before resend", "Without dedup"]
    assert list(COLUMNS)[0] == "hardened" and list(COLUMNS)[-1] == "naive"


def _seams(svc: Services) -> dict[str, object]:
    """The class of each part a column may change, and the send service's policy for a try
    whose outcome it did not see."""
    return {"sends": type(svc.stores.sends), "mails": type(svc.stores.mails),
            "drafts": type(svc.stores.drafts), "job_states": type(svc.stores.jobs),
            "jobs": type(svc.jobs), "unconfirmed_sends": svc.send_service().unconfirmed,
            "poller": type(svc.poller())}


@pytest.mark.parametrize(("column", "changed"), [
    ("no_idempotency_keys", {"sends": counter.KeylessSendStore}),
    ("no_claim_fence", {"jobs": NaiveJobStore}),
    ("no_reconciliation", {"sends": counter.UnreconciledSendStore,
                           "unconfirmed_sends": Unconfirmed.RESEND}),
    ("no_dedup", {"poller": NaivePoller}),
])
def test_each_counter_check_is_hardened_except_its_one_safeguard(column, changed):
    settings = Settings()
    hardened, variant = Services(settings), counter.services_class(column)(settings)
    try:
        base, seams = _seams(hardened), _seams(variant)
    finally:
        hardened.close()
        variant.close()
    assert {k: v for k, v in seams.items() if v is not base[k]} == changed
    assert issubclass(seams["sends"], SendStore)
    assert base["unconfirmed_sends"] is Unconfirmed.RECONCILE


def test_an_unknown_column_name_is_refused_with_the_known_ones():
    with pytest.raises(SystemExit, match="no_dedup"):
        counter.services_class("no_everything")


def _result(mode: str, **figures: int) -> ModeResult:
    return ModeResult(mode, figures, {}, True, 1.0)


def test_the_report_prints_the_counter_check_columns_and_what_each_safeguard_prevented():
    results = {"hardened": _result("hardened"),
               "no_idempotency_keys": _result("no_idempotency_keys", duplicate_sends=2),
               "no_claim_fence": _result("no_claim_fence", duplicate_drafts=1),
               "no_reconciliation": _result("no_reconciliation", duplicate_sends=1),
               "no_dedup": _result("no_dedup"),
               "naive": _result("naive", duplicate_mails=3, duplicate_drafts=2,
                                duplicate_sends=4)}
    plan = {"seed": 1, "mails": 4, "events": []}
    text, data, _, _ = render(plan, results, 4, 0)
    head = next(ln for ln in text.splitlines() if ln.startswith("| Figure"))
    assert head == ("| Figure | Hardened | Without idempotency keys | Without claim fence | "
                    "Without reconciliation before resend | Without dedup | Naive (safeguards "
                    "off) |")
    sends = next(ln for ln in text.splitlines() if ln.startswith("| Duplicate sends"))
    assert sends.endswith("| 0 | 2 | 0 | 1 | 0 | 4 |")
    assert "Without idempotency keys: duplicate_sends." in text
    assert "Without dedup: no defect class appeared in this run." in text
    assert data["prevented_by"] == prevented_by(results) == {
        "no_idempotency_keys": ["duplicate_sends"], "no_claim_fence": ["duplicate_drafts"],
        "no_reconciliation": ["duplicate_sends"], "no_dedup": []}
    assert set(data["columns"]) == set(results)


def test_the_chaos_command_takes_counter_checks():
    assert build_parser().parse_args(["--counter-checks"]).counter_checks is True
    assert build_parser().parse_args([]).counter_checks is False


def test_the_harness_removes_safeguards_only_through_public_seams():
    """GIVEN the naive and counter-check classes, each a product class with one guarantee
    removed, THEN none overrides a private method of the product class it derives from
    (the product keeps no hook for the harness)."""
    from email_rag_harness.chaos import naive

    reached = []
    for module in (naive, counter):
        for cls in vars(module).values():
            if not isinstance(cls, type) or cls.__module__ != module.__name__:
                continue
            product = [b for b in cls.__mro__[1:] if b.__module__.startswith("email_rag.")]
            reached += [f"{cls.__name__}.{name}" for name in vars(cls)
                        if name.startswith("_") and not name.startswith("__")
                        and any(name in vars(b) for b in product)]
    assert reached == []
