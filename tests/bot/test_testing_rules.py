"""The test kit rehearses approvals that mean something: rules by content, automatic
decisions, the two-person rule across teams and previews, as a graph author checks them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.testing import Refused, Rehearsal

GRAPHS = ["tests.support.graphs"]
REQUESTER = "U0REQUESTER"


def test_a_rule_decides_by_itself_and_another_chooses_who_may(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    with Rehearsal(graph_modules=GRAPHS, env={"APPROVAL_BOT_TEST_MARKERS": str(markers)}) as r:
        small = r.start("payout-rules 5", user=REQUESTER)
        assert small.end().status == "completed", "under 50: approved by the rule, no card to answer"
        big = r.start("payout-rules 5000", user=REQUESTER)
        card = big.card()
        assert "Rule: 1,000 or more: Alice" in card.text, card.text
        with pytest.raises(Refused):
            card.approve(user="U0BOB")
        card.approve(user="U0ALICE")
        assert big.end().status == "completed"
        stats = r.command("stats payout-rules", user="U0ALICE")
    assert markers.read_text().splitlines() == ["send_payout 5", "send_payout 5000"]
    assert "small" in stats and "1,000 or more: Alice" in stats, stats


def test_one_approval_from_each_team(tmp_path: Path) -> None:
    with Rehearsal(
        graph_modules=GRAPHS,
        usergroups={"S0FIN": ["U0FRAN"], "S0LEGAL": ["U0LEO"]},
        env={"APPROVAL_BOT_TEST_MARKERS": str(tmp_path / "markers")},
    ) as r:
        run = r.start("guarded-all-of hello", user=REQUESTER)
        card = run.card()
        counted = card.approve(user="U0FRAN")
        assert counted is not None and "1 of 2" in counted, counted
        assert "S0LEGAL" in card.latest().text, "the card says who is still missing"
        assert card.approve(user="U0LEO") is None
        assert run.end().status == "completed"


def test_a_preview_that_changes_voids_the_approval_and_asks_again(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    rate = Path(str(markers) + ".rate")
    rate.write_text("1.10")
    with Rehearsal(graph_modules=GRAPHS, env={"APPROVAL_BOT_TEST_MARKERS": str(markers)}) as r:
        run = r.start("payout-preview 1000", user=REQUESTER)
        first = run.card()
        assert "What will happen" in first.text and "1100.00 USD" in first.text, first.text
        assert "Edit" not in first.buttons
        rate.write_text("1.30")
        first.approve(user="U0ALICE")
        second = run.card()
        assert "1300.00 USD" in second.text, second.text
        deadline = time.monotonic() + 10
        while "changed before the step ran" not in first.latest().text and time.monotonic() < deadline:
            time.sleep(0.05)  # the old card is updated after the new one is posted
        assert "changed before the step ran" in first.latest().text
        second.approve(user="U0BOB")
        assert run.end().status == "completed"
    assert markers.read_text().splitlines() == ["send_payout 1000"]
