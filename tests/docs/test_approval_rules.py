"""docs/approval-rules.md's code is real: each block declares its graph, and its rules pick
what the page says they pick.

Every ``python`` block is run as written (our own docs) and must register exactly one graph
with the registry's own checks; then each pattern's claim is checked through the engine's
rule choice (``Policy.rules_for``, what a raised question gets) and its previews. A block
edited into something the registry refuses, or a rule reordered so that the text lies, fails
here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.policy import AskRules, Policy
from engine.previews import compute
from graph_defs.registry import get_graph, list_graphs, unregister
from tests.docs.pages import REPO

PAGE = REPO / "docs" / "approval-rules.md"
NOW = 1_800_000_000.0


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)


@pytest.fixture(scope="module")
def declared() -> Iterator[dict[str, Policy]]:
    """Each block run once: graph name -> its policy, the graphs unregistered afterwards."""
    found: dict[str, Policy] = {}
    try:
        for number, code in enumerate(blocks(), start=1):
            before = {g.name for g in list_graphs()}
            namespace: dict[str, Any] = {}
            exec(compile(code, f"docs/approval-rules.md block {number}", "exec"), namespace)
            new = {g.name for g in list_graphs()} - before
            assert len(new) == 1, f"block {number} declares one graph, not {sorted(new)}"
            (name,) = new
            found[name] = get_graph(name).policy
        yield found
    finally:
        for name in found:
            unregister(name)


def rules(policy: Policy, tool: str, details: Any) -> AskRules:
    return policy.rules_for(name=tool, tool=tool, now=NOW, default_expires_after=3 * 86400, details=details)


def test_every_block_declares_a_graph(declared: dict[str, Policy]) -> None:
    assert len(blocks()) == len(declared) == 7


def test_thresholds_pick_by_amount(declared: dict[str, Policy]) -> None:
    policy = declared["refunds-by-amount"]
    small, large, rest = (rules(policy, "issue_refund", {"amount": a}) for a in (20, 1000, 400))
    assert (small.label, small.auto) == ("small", "approve")
    assert (large.label, large.quorum, large.approvers) == ("large: two approvers", 2, ("U0ALICE", "U0BOB"))
    assert (rest.label, rest.quorum, rest.auto) == ("one approver", 1, None)


def test_the_two_person_rule_needs_both_teams(declared: dict[str, Policy]) -> None:
    terms = rules(declared["vendor-onboarding"], "create_vendor", {"name": "acme"})
    assert terms.all_of == ("S0FINANCE", "S0LEGAL") and terms.quorum == 2
    assert terms.approvers == ("S0FINANCE", "S0LEGAL") and not terms.allow_self


def test_business_hours_read_the_clock_once_and_escalate(
    declared: dict[str, Policy], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = declared["prod-restart"]
    (after_hours, _) = policy.asks["restart_service"]  # type: ignore[misc]
    assert after_hours.when is not None
    terms = rules(policy, "restart_service", {})
    expected = "after hours: on-call" if after_hours.when({}) else "business hours"
    assert terms.label == expected and terms.escalate_to == ("S0SRELEADS",)
    assert terms.escalate_at is not None and terms.escalate_at < (terms.expires_at or 0), "it escalates before expiry"
    saturday_noon, monday_noon = datetime(2026, 11, 28, 12, tzinfo=UTC), datetime(2026, 11, 30, 12, tzinfo=UTC)
    for moment, night in ((saturday_noon, True), (monday_noon, False)):
        monkeypatch.setitem(after_hours.when.__globals__, "datetime", _frozen_at(moment))
        assert after_hours.when({}) is night


def _frozen_at(moment: datetime) -> type[datetime]:
    """``datetime`` whose ``now()`` is ``moment``: the clock a ``when`` reads, stopped."""

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return moment

    return Frozen


def test_read_only_tools_pass_by_rule_and_writes_are_not_listed(declared: dict[str, Policy]) -> None:
    policy = declared["support-agent"]
    reads = {"search_tickets", "get_customer", "list_invoices"}
    assert set(policy.asks) == reads == set(policy.idempotent)
    assert all(rules(policy, tool, {}).auto == "approve" for tool in reads)
    write = rules(policy, "close_ticket", {})  # not listed: a person decides
    assert write.auto is None and write.approvers == ("S0SUPPORTLEADS",)


def test_a_deterministic_preview_is_a_table_and_the_same_twice(declared: dict[str, Policy]) -> None:
    fn = declared["supplier-payment"].previews["send_payment"]
    details = {"amount": 1200, "currency": "EUR", "to": "acme"}
    shown = compute(fn, details, name="send_payment")
    assert shown == {"pays": "1200 EUR", "to": "acme", "from account": "operating account (EUR)"}
    assert compute(fn, details, name="send_payment") == shown, "computed again before the call: the same"


def test_a_diff_preview_changes_when_the_world_does(declared: dict[str, Policy]) -> None:
    fn = declared["config-change"].previews["apply_config"]
    details = {"changes": {"image": "billing:1.2.3"}}
    shown = compute(fn, details, name="apply_config")
    assert isinstance(shown, str) and "-image: billing:1.2.2" in shown and "+image: billing:1.2.3" in shown
    fn.__globals__["DEPLOYED"]["replicas"] = "5"  # someone changed what is deployed meanwhile
    assert compute(fn, details, name="apply_config") != shown, "the approval would be void, and asked again"


def test_failing_closed_ends_at_the_hard_limit(declared: dict[str, Policy]) -> None:
    policy = declared["wire-transfer"]
    assert rules(policy, "send_wire", {"amount": 50}).auto == "approve"
    broken = rules(policy, "send_wire", {"to": "acme"})  # no amount: the first when raises
    assert broken.auto == "reject" and broken.label is not None and broken.label.startswith("over the limit")
    assert "fail-closed" in broken.label
    abroad = rules(policy, "send_wire", {"amount": 5000, "country": "US"})
    assert (abroad.label, abroad.quorum) == ("abroad: two approvers", 2)
