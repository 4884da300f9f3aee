"""Previews (``graph_def(previews=...)``): how one is computed and bounded, when an approval
no longer holds, and what ``settle`` makes of a preview (digest, buttons, a void answer)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from engine.execution import Raised, Step, StepStatus
from engine.policy import PolicyError
from engine.previews import FAILED, MAX_PREVIEW_CHARS, MAX_ROWS, bounded, changed, check_previews, compute
from engine.records import Ask, AskStatus, Closed, Decision, Run, RunStatus, ToolCall, Verdict, ask_digest
from engine.settle import settle
from engine.sources import details_of
from graph_defs import GraphDefinitionError, graph_def


def test_a_preview_is_text_or_a_flat_table_and_is_bounded() -> None:
    assert bounded("pay 5 EUR\nto ACME") == "pay 5 EUR\nto ACME"
    assert bounded({"amount": 5, "to": {"iban": "X"}}) == {"amount": "5", "to": '{"iban": "X"}'}
    long = bounded("x" * 10_000)
    assert isinstance(long, str) and len(long) == MAX_PREVIEW_CHARS and long.endswith("…")
    rows = bounded({f"k{i}": i for i in range(50)})
    assert isinstance(rows, dict) and len(rows) == MAX_ROWS + 1 and rows["…"] == "30 more rows"
    assert bounded(["a", 1]) == '["a", 1]'
    assert bounded({"": "x", 1.5: None}) == {"(blank)": "x", "1.5": "null"}, "keys DynamoDB takes"


def test_a_preview_that_raises_says_so_and_gets_a_copy(caplog: pytest.LogCaptureFixture) -> None:
    details = {"amount": 5}

    def meddle(d: dict[str, Any]) -> str:
        d["amount"] = 10**9
        return "ok"

    assert compute(meddle, details, name="pay") == "ok" and details == {"amount": 5}
    with caplog.at_level(logging.WARNING, logger="engine.previews"):
        assert compute(lambda d: d["nope"], details, name="pay") == FAILED.format(error="KeyError")
    assert "previews['pay'] raised KeyError" in caplog.text


@pytest.mark.parametrize(
    ("previews", "says"),
    [([1], "must map"), ({"": len}, "keys are"), ({"pay": "text"}, "must be a function")],
)
def test_bad_previews_are_refused_when_the_graph_is_defined(previews: Any, says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        check_previews(previews)
    with pytest.raises(GraphDefinitionError, match=says):
        graph_def("bad-previews", previews=previews)


def _ask(*, preview: Any, verdict: Verdict | None = Verdict.APPROVE, amount: int = 5) -> Ask:
    decision = Decision(verdict=verdict, user="U0A", at=1.0) if verdict is not None else None
    return Ask(
        key="k1",
        interrupt_id="i1",
        name="approve_pay",
        reason={"amount": amount},
        node_id="n",
        status=AskStatus.DECIDED if decision else AskStatus.PENDING,
        created_at=0.0,
        decision=decision,
        tool=ToolCall(name="pay", input={"amount": amount}),
        preview=preview,
    )


def test_only_an_approval_whose_preview_changed_is_void() -> None:
    rate = {"now": 2}
    previews = {"pay": lambda d: f"{d['amount'] * rate['now']} USD"}
    held = _ask(preview="10 USD")
    assert changed([held], previews, details=details_of) == []
    rate["now"] = 3
    assert changed([held], previews, details=details_of) == ["k1"]
    assert changed([_ask(preview="10 USD", verdict=Verdict.REJECT)], previews, details=details_of) == []
    assert changed([_ask(preview="10 USD", verdict=Verdict.REPLY)], previews, details=details_of) == []
    assert changed([_ask(preview=None)], previews, details=details_of) == [], "no preview shown, nothing bound"
    assert changed([held], {}, details=details_of) == ["k1"], "a preview gone from the definition binds nothing"


def _run(*asks: Ask) -> Run:
    return Run(
        run_id="r1",
        graph="g",
        task="t",
        started_by="U0S",
        channel="C0",
        status=RunStatus.RESUMING,
        version=3,
        created_at=0.0,
        updated_at=0.0,
        lease_owner="me",
        lease_until=100.0,
        asks={a.key: a for a in asks},
    )


def _raised(amount: int = 5) -> Raised:
    return Raised(
        interrupt_id="i1",
        name="approve_pay",
        reason={"amount": amount},
        node_id="n",
        verdicts=(Verdict.APPROVE, Verdict.REJECT, Verdict.EDIT, Verdict.REPLY),
        tool=ToolCall(name="pay", input={"amount": amount}),
    )


def test_settle_shows_the_preview_binds_its_digest_and_offers_no_edit() -> None:
    step = Step(status=StepStatus.INTERRUPTED, snapshot=b"s", raised=(_raised(),))
    outcome = settle(_run(), step, sent=[], now=5.0, previews={("i1", "n"): "10 USD"})
    (ask,) = outcome.new_asks
    assert ask.preview == "10 USD" and Verdict.EDIT not in ask.verdicts and Verdict.APPROVE in ask.verdicts
    plain = ask_digest(name=ask.name, reason=ask.reason, tool=ask.tool)
    assert ask.digest != plain and ask.digest == ask_digest(
        name=ask.name, reason=ask.reason, tool=ask.tool, preview="10 USD"
    )
    unbound = settle(_run(), step, sent=[], now=5.0).new_asks[0]
    assert unbound.digest == plain and Verdict.EDIT in unbound.verdicts, "without a preview: as it always was"


def test_settle_closes_a_void_approval_as_changed_and_asks_again() -> None:
    held = _ask(preview="10 USD")
    step = Step(status=StepStatus.INTERRUPTED, snapshot=b"s", raised=(_raised(),))
    outcome = settle(_run(held), step, sent=[], now=5.0, voided=["k1"], previews={("i1", "n"): "15 USD"})
    old = outcome.run.asks["k1"]
    assert (old.status, old.closed, old.decision) == (AskStatus.OBSOLETE, Closed.CHANGED, None)
    (new,) = outcome.new_asks
    assert new.key != "k1" and new.preview == "15 USD" and new.status is AskStatus.PENDING
    assert [e.kind for e in outcome.run.audit] == ["preview_changed", "asked"]


def test_the_preview_round_trips_through_the_record() -> None:
    for preview in ("a\nb", {"pays": "5 EUR"}, None):
        ask = _ask(preview=preview)
        assert Ask.from_dict(ask.to_dict()).preview == preview
