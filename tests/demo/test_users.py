"""``as <user>``: the person at the prompt acts as you, alice or bob, and sees what each is told."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from demo.commands import CHANNEL, USERS, YOU, DemoSession
from demo.console import Console
from demo.session import _step
from localslack import LocalSlack


class RecordingUser:
    """Slack's side of the person: remembers as whom each command was sent."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, str]] = []

    async def slash_command(self, *, text: str, user_id: str, **_: Any) -> Any:
        self.commands.append((user_id, text))
        return type("Response", (), {"status": 200})()


def _session() -> tuple[DemoSession, io.StringIO, RecordingUser]:
    stream, user = io.StringIO(), RecordingUser()
    slack = LocalSlack(users=USERS, channels={CHANNEL: "demo"})
    return DemoSession(slack=slack, user=user, console=Console(stream=stream)), stream, user  # type: ignore[arg-type]


async def test_as_switches_who_types_the_next_commands_and_the_prompt_says_so() -> None:
    session, stream, user = _session()
    assert session.prompt == "@you in #demo> "
    await session.handle("/graph run payout 900 EUR to acme")
    for line, prompt in (("as alice", "@alice"), ("as @BOB", "@bob"), ("as U0ALICE", "@alice"), ("as me", "@you")):
        stream.seek(0), stream.truncate()
        await session.handle(line)
        assert stream.getvalue() == f"  now acting as {prompt}\n"
        assert session.prompt == f"{prompt} in #demo> "
        await session.handle("/graph list")
    assert [who for who, _ in user.commands] == [YOU, "U0ALICE", "U0BOB", "U0ALICE", YOU]


async def test_as_alone_lists_the_users_and_an_unknown_one_is_one_line() -> None:
    session, stream, _ = _session()
    await session.handle("as bob")
    stream.seek(0), stream.truncate()
    await session.handle("as")
    assert " ".join(stream.getvalue().split()) == (
        "users here: @you, @alice, @bob (now), @dana; switch with as you, as alice, as bob, as dana"
    )
    for who in ("carol", "@nobody", "U0CAROL"):
        stream.seek(0), stream.truncate()
        await session.handle(f"as {who}")
        assert stream.getvalue().count("\n") == 1 and f"there is no user {who!r} here" in stream.getvalue()
        assert session.acting == "U0BOB", "a wrong name changes nothing"


async def test_a_notice_names_whom_it_was_for_even_after_a_switch() -> None:
    session, stream, _ = _session()
    await session.slack.start()
    try:
        url = session.slack.new_response_url(channel=CHANNEL, message_ts=None, user="U0ALICE")
        await session.handle("as bob")  # the person switched before the refusal arrived
        stream.seek(0), stream.truncate()
        body = {"text": "Only <@U0ALICE> or <@U0BOB> may decide this; nothing was recorded."}
        effect = session.slack.respond(url.rsplit("/", 1)[-1], body)
        await session.slack.changed("response_url", {"url": url, "body": body, "effect": effect})
    finally:
        await session.slack.stop()
    shown = " ".join(stream.getvalue().split())
    assert "only @alice sees this" in shown and "Only @alice or @bob may decide this" in shown
    assert session.notices == 1


def test_the_payout_approvers_are_demo_users_and_you_are_not_one() -> None:
    from graph_defs.examples import payout
    from graph_defs.registry import get_graph

    policy = get_graph("payout").policy
    assert policy.approvers == payout.APPROVERS and policy.quorum == 2 and not policy.allow_self_approval
    assert set(payout.APPROVERS) <= set(USERS) and YOU not in payout.APPROVERS


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[str]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    monkeypatch.delenv("GRAPH_MODULES", raising=False)
    yield str(tmp_path)


async def test_the_requester_may_reject_a_payout_half_approved_and_nothing_is_paid(offline: str) -> None:
    from demo.stack import Stack
    from graph_defs.examples.payout import PAYOUTS

    paid = len(PAYOUTS)
    stream = io.StringIO()
    async with Stack(state=offline) as stack:
        session = DemoSession(slack=stack.slack, user=stack.user, console=Console(stream=stream))
        for line in ("/graph run payout 300 EUR to acme", "approve 1", "as alice", "approve 1", "as you"):
            await _step(session, line)
        stream.seek(0), stream.truncate()
        await _step(session, "reject 1 wrong payee")
        await stack.slack.wait_for(lambda: session.ended, timeout=30, what="the payout to finish")
    said = " ".join(stream.getvalue().split())
    assert "Rejected by @you" in said and "after 1 of 2 approvals (@alice)" in said
    # The graph's own words name the decider by id (its output pings nobody); the bot's name @you.
    assert "Payout not sent. Payout rejected by U0YOU: wrong payee" in said
    assert len(PAYOUTS) == paid


def test_the_payout_rules_name_groups_the_demo_slack_has() -> None:
    """The payout example's rules by amount, and the teams its large rule needs, are the demo's."""
    from demo.stack import demo_slack
    from graph_defs.examples import payout
    from graph_defs.registry import get_graph

    policy = get_graph("payout").policy

    def rule(amount: float) -> Any:
        details = {"amount": amount, "currency": "EUR", "to": "acme"}
        return policy.rules_for(
            name="approve_payout", tool="send_payout", now=0.0, default_expires_after=60, details=details
        )

    small, middle, large = rule(20), rule(900), rule(1200)
    assert (small.label, small.auto) == ("small", "approve")
    assert (middle.label, middle.approvers, middle.quorum, middle.auto) == ("two approvers", payout.APPROVERS, 2, None)
    assert large.all_of == (payout.FINANCE, payout.LEGAL) and large.quorum == 2 and not large.allow_self
    broken = policy.rules_for(name="approve_payout", tool="send_payout", now=0.0, default_expires_after=60, details={})
    assert broken.all_of == large.all_of and broken.auto is None, "a when that raises fails closed, never small"
    slack = demo_slack()
    finance, legal = slack.usergroup_members(payout.FINANCE), slack.usergroup_members(payout.LEGAL)
    assert finance is not None and legal is not None and YOU not in {*finance, *legal}
    assert set(finance) == set(payout.APPROVERS) and set(legal) <= set(USERS) and not set(finance) & set(legal)
    # What will happen: the same table every time it is computed (the approval binds to it).
    shown = payout.preview({"amount": 1200.0, "currency": "EUR", "to": "acme"})
    assert shown == payout.preview({"amount": 1200.0, "currency": "EUR", "to": "acme"})
    assert shown == {
        "pays": "1200 EUR",
        "to": "acme",
        "from account": "operating account (EUR)",
        "payee gets": "1200 EUR (no fee)",
    }
