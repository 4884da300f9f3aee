"""``bot.testing.Rehearsal``, used the way a graph author uses it, and how it fails.

The decisions (approve, reject with a reason, reply, edit, a quorum) run the example graphs
of ``graph_defs.examples`` as a team's own graphs would run: listed in ``graph_modules``,
started with the text typed after ``/graph run``, answered as people in the channel.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bot.testing import Refused, Rehearsal, RehearsalError
from engine.records import RunStatus
from graph_defs.registry import unregister

DEPLOY = "graph_defs.examples.deploy"
PAYOUT = "graph_defs.examples.payout"
TOOL_GATE = "graph_defs.examples.tool_gate"
REQUESTER = "U0REQUESTER"


# -- the decisions -------------------------------------------------------------------------------


def test_approve() -> None:
    with Rehearsal(graph_modules=[DEPLOY]) as r:
        run = r.start("deploy billing 1.2.3 to staging", user=REQUESTER)
        card = run.card()
        assert card.title == "Approve deploy"
        assert card.buttons == ["Approve", "Reject", "Reply"]
        assert "service: billing" in card.text and "environment: staging" in card.text, card.text
        assert f"started by @{REQUESTER}" in card.text

        assert card.approve(user="U0ALICE") is None, "one approval decides it: no notice"
        end = run.end()
    assert end.status == "completed"
    assert "Deployed billing 1.2.3 to staging. Approved by U0ALICE." in end.text, end.text


def test_reject_with_a_reason() -> None:
    with Rehearsal(graph_modules=[DEPLOY]) as r:
        run = r.start("deploy billing 1.2.3", user=REQUESTER)
        run.card().reject(user="U0BOB", reason="not on a friday")
        end = run.end()
    assert end.status == "completed", "the graph carries on with the rejection and reports it"
    assert "Deployment rejected by U0BOB: not on a friday" in end.text, end.text


def test_reply() -> None:
    with Rehearsal(graph_modules=[DEPLOY]) as r:
        run = r.start("deploy billing 1.2.3", user=REQUESTER)
        run.card().reply(user="U0BOB", text="use the canary first")
        end = run.end()
    assert "with operator instructions: use the canary first" in end.text, end.text


def test_answer_and_decline_a_question() -> None:
    """Strands' vended ``handoff_to_user`` (the ``handoff`` test graph) asks; the answer is
    the tool's result, and a Decline tells the agent so."""
    with Rehearsal(graph_modules=["tests.support.graphs"]) as r:
        run = r.start("handoff checkout", user=REQUESTER)
        card = run.card()
        assert (card.title, card.buttons) == ("Question from the agent", ["Answer", "Decline"])
        assert "Which region should checkout go to?" in card.text, card.text
        card.answer(user="U0ALICE", text="eu-west-1")
        answered = run.end()
        declined = r.start("handoff billing", user=REQUESTER)
        declined.card().decline(user="U0BOB", reason="ask ops")
        ended = declined.end()
    assert answered.status == "completed" and "asker got: eu-west-1" in answered.text, answered.text
    assert ended.status == "completed" and "declined to answer this question. Their reason: ask ops" in ended.text


def test_edit_the_input_before_approving() -> None:
    with Rehearsal(graph_modules=[TOOL_GATE]) as r:
        run = r.start("tool-gate pay invoice INV-7 250 EUR to ACME", user=REQUESTER)
        card = run.card()
        assert card.buttons == ["Approve", "Reject", "Reply", "Edit"]
        assert "amount: 250.0" in card.text, card.text
        card.edit(user="U0ALICE", input={"amount": 80, "currency": "EUR", "to": "acme", "invoice": "INV-7"})
        assert card.latest().buttons == [], "the edited call is approved: the card is closed"
        end = run.end()
    assert end.status == "completed"
    assert "Paid 80 EUR to acme for INV-7." in end.text, end.text


def test_a_quorum_of_two() -> None:
    """payout: alice and bob must both approve, never the requester; one approval each."""
    with Rehearsal(graph_modules=[PAYOUT]) as r:
        run = r.start("payout 900 EUR to acme", user=REQUESTER)
        card = run.card()
        assert "Approvals: 0 of 2" in card.text, card.text

        with pytest.raises(Refused, match="Only @U0ALICE or @U0BOB may decide this"):
            card.approve(user="U0MALLORY")
        counted = card.approve(user="U0ALICE")
        assert counted is not None and counted.startswith("Your approval counts: 1 of 2"), counted
        assert "Approvals: 1 of 2 — @U0ALICE" in card.latest().text
        with pytest.raises(Refused, match="You already approved this"):
            card.approve(user="U0ALICE")
        assert card.approve(user="U0BOB") is None
        end = run.end()
    assert end.status == "completed"
    assert "Payout sent. Paid 900 EUR to acme." in end.text, end.text


def test_approvers_named_by_a_user_group_and_settings_for_the_graph(tmp_path: Path) -> None:
    """A policy may name a group (``S…``); ``env`` reaches graph code (here, its markers file)."""
    markers = tmp_path / "markers"
    with Rehearsal(
        graph_modules=["tests.support.graphs"],
        usergroups={"S0OPS": ["U0CAROL"]},
        env={"APPROVAL_BOT_TEST_MARKERS": str(markers)},
    ) as r:
        run = r.start("guarded-approvers hello", user=REQUESTER)
        card = run.card()
        assert "Who may decide: @U0ALICE or @S0OPS" in card.text, card.text
        with pytest.raises(Refused, match="may decide this; nothing was recorded"):
            card.approve(user="U0DAVE")
        card.approve(user="U0CAROL")
        assert run.end().status == "completed"
    assert markers.read_text().splitlines() == ["writer:hello"]


# -- how it fails --------------------------------------------------------------------------------


def test_a_refused_approval_raises_with_the_bots_words_and_leaves_the_card_open() -> None:
    with Rehearsal(graph_modules=[DEPLOY]) as r:
        run = r.start("deploy billing 1.2.3", user=REQUESTER)
        card = run.card()
        with pytest.raises(Refused) as refused:
            card.approve(user=REQUESTER)
        assert refused.value.notice.startswith("You started this run, so you may reject its asks but not approve them")
        assert card.latest().buttons == ["Approve", "Reject", "Reply"]
        card.reject(user=REQUESTER, reason="changed my mind")  # a requester may stop their own run
        assert "rejected by U0REQUESTER: changed my mind" in run.end().text
        with pytest.raises(RehearsalError, match=r"has no Approve button \(its buttons: none: it was answered\)"):
            card.approve(user="U0ALICE")


def test_waiting_in_vain_says_in_one_line_what_happened_instead() -> None:
    with Rehearsal(graph_modules=[DEPLOY]) as r:
        run = r.start("deploy billing 1.2.3", user=REQUESTER)
        run.card()
        with pytest.raises(RehearsalError) as no_card:
            run.card(timeout=0.3)
        assert (
            str(no_card.value)
            == "no card within 0.3 s; the run waits on card 'Approve deploy' (Approve, Reject, Reply)"
        )
        with pytest.raises(RehearsalError, match=r"^the run did not end within 0.3 s; the run waits on card"):
            run.end(timeout=0.3)

        ended = r.start("deploy billing 1.2.4", user=REQUESTER)
        ended.card().approve(user="U0ALICE")
        ended.end()
        began = time.monotonic()
        with pytest.raises(RehearsalError, match=r"^no card: the run ended: completed: ✅ deploy finished"):
            ended.card()
        assert time.monotonic() - began < 2, "a run that ended has no card coming: no waiting out the timeout"


def test_an_unknown_graph_is_refused_at_start() -> None:
    with (
        Rehearsal(graph_modules=[DEPLOY]) as r,
        pytest.raises(Refused, match=r"^⚠ There is no graph called refunds\. "),
    ):
        r.start("refunds A-1001", user=REQUESTER)


def test_exit_puts_everything_back_even_when_the_test_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNAMODB_TABLE", "the-real-one")  # must not reach the rehearsal
    before = dict(os.environ)
    with pytest.raises(ZeroDivisionError), Rehearsal(graph_modules=[DEPLOY]) as r:
        assert "DYNAMODB_TABLE" not in os.environ and os.environ["GRAPH_MODEL"] == "offline"
        assert os.environ["GRAPH_MODULES"] == DEPLOY
        stack = r._stack
        assert stack is not None and r._state is not None
        state, ports = Path(r._state), [_port(stack.user.bot_url or ""), _port(stack.slack.base_url)]
        assert state.is_dir()
        r.start("deploy billing 1.2.3", user=REQUESTER).card().approve(user="U0ALICE")  # a run mid-resume
        _ = 1 / 0
    assert dict(os.environ) == before
    assert not state.exists()
    assert not [t for t in threading.enumerate() if t.name == "rehearsal-loop"]
    for port in ports:
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
    with Rehearsal(graph_modules=[DEPLOY]), pytest.raises(RuntimeError, match="one at a time"):  # released
        Rehearsal(graph_modules=[DEPLOY]).__enter__()


@pytest.mark.parametrize("name", ["GRAPH_MODEL", "SLACK_API_URL"])
def test_env_cannot_send_a_rehearsal_to_a_model_provider_or_another_slack(name: str) -> None:
    with pytest.raises(ValueError, match=f"runs offline; leave {name} out of env"):
        Rehearsal(graph_modules=[DEPLOY], env={name: "bedrock", "AWS_ACCESS_KEY_ID": "AKIA…"})


def test_a_graph_module_that_cannot_be_imported_fails_the_start_and_leaves_nothing_behind() -> None:
    from graph_defs.registry import GraphModuleError

    before = dict(os.environ)
    with pytest.raises(GraphModuleError, match=r"could not import graph module 'graphs\.nowhere'"):
        Rehearsal(graph_modules=["graphs.nowhere"]).__enter__()
    assert dict(os.environ) == before
    assert not [t for t in threading.enumerate() if t.name == "rehearsal-loop"]


def test_a_call_real_slack_would_refuse_fails_the_rehearsal() -> None:
    """What the local Slack refuses (a message too long, a block malformed), real Slack would too."""
    refused = pytest.raises(RehearsalError, match=r"^Slack would have refused 1 of the bot's calls, first chat\.update")
    with refused, Rehearsal(graph_modules=[DEPLOY]) as r:
        assert r._stack is not None
        r._stack.slack.rejected.append({"method": "chat.update", "error": "invalid_blocks", "errors": []})


# -- on DynamoDB -----------------------------------------------------------------------------------


def test_rehearses_on_dynamodb(aws_env: dict[str, str], dynamodb_table: str) -> None:
    from persistence.dynamodb import DynamoRunStore

    with Rehearsal(graph_modules=[DEPLOY], env={**aws_env, "DYNAMODB_TABLE": dynamodb_table}) as r:
        run = r.start("deploy billing 1.2.3", user=REQUESTER)
        run.card().approve(user="U0ALICE")
        assert run.end().status == "completed"
    stored = DynamoRunStore(dynamodb_table).load(run.id, snapshot=False)
    assert stored is not None and stored.status is RunStatus.COMPLETED


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None, url
    return port


# -- the guide -------------------------------------------------------------------------------------


def test_the_guides_examples_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/testing.md: its ``graphs/refunds.py`` in a team's own folder, and its tests, as they stand."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    first, graph, decisions, edit, quorum, *_ = re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
    assert graph.startswith("# graphs/refunds.py\n")
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "__init__.py").write_text("")
    (tmp_path / "graphs" / "refunds.py").write_text(graph)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, object] = {}
    try:
        for example in (first, decisions, edit, quorum):
            exec(compile(example, "docs/testing.md", "exec"), namespace)  # our own guide
        tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
        assert len(tests) == 6
        for test in tests:
            test()
    finally:
        unregister("refunds")
        for name in ("graphs.refunds", "graphs"):
            sys.modules.pop(name, None)
