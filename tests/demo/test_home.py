"""``home``: a person's App Home tab in the terminal, each ask under its card's number, clickable.

The unit tests put a stand-in bot behind the local Slack's real ``views.publish`` (it
publishes when the tab is opened and after each click, as the bot does); the last test
runs the real bot.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from demo import home as home_module
from demo.commands import CHANNELS, HELP, USERS, DemoSession
from demo.console import Console
from demo.home import ask_values, labels_for
from demo.session import _step
from localslack import LocalSlack

ALICE = "U0ALICE"


def _value(run: str) -> str:
    return json.dumps({"r": run, "a": "deployer"}, separators=(",", ":"))


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def _ask(run: str, title: str, buttons: tuple[str, ...]) -> list[dict[str, Any]]:
    """An ask as the bot's Home tab draws it: the card's blocks and buttons, a link, a divider."""
    elements = [
        {"type": "button", "action_id": f"ask:{b.lower()}", "text": _plain(b), "value": _value(run)} for b in buttons
    ]
    return [
        {"type": "header", "block_id": f"home:{run}:h", "text": {"type": "plain_text", "text": title}},
        {"type": "section", "block_id": f"home:{run}:f", "fields": [{"type": "mrkdwn", "text": "*service*\nbilling"}]},
        {"type": "actions", "block_id": f"home:{run}:a", "elements": elements},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "The card is in <#C0DEMO>."}]},
        {"type": "divider"},
    ]


def _view(asks: list[tuple[str, str, tuple[str, ...]]], note: str | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if note:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f":information_source: {note}"}})
    blocks.append({"type": "header", "text": {"type": "plain_text", "text": "Waiting for you"}})
    for run, title, buttons in asks:
        blocks += _ask(run, title, buttons)
    if not asks:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "Nothing waits for you."}]})
    blocks.append({"type": "header", "text": {"type": "plain_text", "text": "Your runs"}})
    blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": ":gear: *deploy* billing 1.2.3 · running"}})
    return {"type": "home", "blocks": blocks}


@dataclass
class HomeBot:
    """Slack's side of the person, with a bot that publishes the Home tab when opened or clicked in."""

    slack: LocalSlack
    asks: list[tuple[str, str, tuple[str, ...]]]
    publish: bool = True
    clicks: list[tuple[str, str, str | None]] = field(default_factory=list)

    @property
    def client(self) -> AsyncWebClient:
        return AsyncWebClient(token=self.slack.bot_token, base_url=self.slack.api_url)

    async def republish(self, user_id: str, note: str | None = None) -> None:
        await self.client.views_publish(user_id=user_id, view=_view(self.asks, note))

    async def open_home(self, *, user_id: str) -> Any:
        if self.publish:
            await self.republish(user_id)
        return type("Response", (), {"status": 200})()

    async def click_home(self, *, user_id: str, label: str, value: str | None = None) -> Any:
        self.clicks.append((user_id, label, value))
        self.asks = [a for a in self.asks if _value(a[0]) != value]
        await self.republish(user_id, note=f"Your {label} was recorded.")
        return type("Response", (), {"status": 200})()


@dataclass
class Desk:
    session: DemoSession
    bot: HomeBot
    out: io.StringIO

    def said(self) -> str:
        text = self.out.getvalue()
        self.out.seek(0), self.out.truncate()
        return text


@pytest.fixture
async def desk(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Desk]:
    monkeypatch.setenv("COLUMNS", "80")
    slack = LocalSlack(users=USERS, channels=CHANNELS)
    await slack.start()
    out = io.StringIO()
    asks = [("r1", "Approve deploy", ("Approve", "Reject", "Reply")), ("r2", "Qa signoff", ("Approve", "Reject"))]
    bot = HomeBot(slack=slack, asks=asks)
    session = DemoSession(slack=slack, user=bot, console=Console(stream=out))  # type: ignore[arg-type]
    # The channel showed r1's question as card 4 and r2's as card 7: the Home tab says so.
    session.numbers.add_card(4, {"blocks": _ask("r1", "Approve deploy", ("Approve",))})
    session.numbers.add_card(7, {"blocks": _ask("r2", "Qa signoff", ("Approve",))})
    await session.handle("as alice")
    out.seek(0), out.truncate()
    try:
        yield Desk(session, bot, out)
    finally:
        await slack.stop()


async def test_home_shows_the_tab_the_bot_publishes_with_each_ask_under_its_card_number(desk: Desk) -> None:
    await desk.session.handle("home")
    lines = desk.said().splitlines()
    assert lines[0].startswith("┌─ @alice's Home tab ─") and lines[-1].startswith("└─")
    assert lines[1:4] == ["│ Waiting for you", "│ Approve deploy", "│ service: billing"]
    assert "│ card 4: [Approve] [Reject] [Reply]" in lines and "│ card 7: [Approve] [Reject]" in lines
    assert "│ The card is in #demo." in lines  # the channel by name, as Slack shows it
    assert lines[-3:-1] == ["│ Your runs", "│ ⚙ deploy billing 1.2.3 · running"]
    assert desk.session.homes.shown == 1


async def test_home_approve_clicks_that_cards_ask_and_shows_the_tab_the_bot_publishes_after(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    await desk.session.handle("home")
    desk.said()
    await desk.session.handle("home approve 7")
    assert desk.bot.clicks == [(ALICE, "Approve", _value("r2"))]
    shown = desk.said().splitlines()
    assert shown[0].startswith("┌─ @alice's Home tab") and shown[1] == "│ \u2139 Your Approve was recorded."
    assert "│ card 4: [Approve] [Reject] [Reply]" in shown and not [line for line in shown if "card 7" in line]
    # Card 4 keeps its number in the tab shown after the click; Reject then waits for its form.
    monkeypatch.setattr("demo.forms.MODAL_TIMEOUT", 0.2)
    await desk.session.handle("home reject 4 not today")
    assert desk.bot.clicks[-1] == (ALICE, "Reject", _value("r1"))
    assert "the bot opened no Reject form for card 4 within 0 s" in desk.said()


async def test_numbers_stay_those_the_person_saw_when_the_tab_changes_meanwhile(desk: Desk) -> None:
    await desk.session.handle("home")
    desk.bot.asks = desk.bot.asks[1:]  # r1 was answered elsewhere: the bot refreshes the tab
    await desk.bot.republish(ALICE)
    assert " ".join(desk.said().split()).endswith("@alice's Home tab was refreshed: card 7 waits there (home shows it)")
    await desk.session.handle("home approve 4")
    assert "card 4 is gone from @alice's Home tab (answered); type home to see it now" in desk.said()
    await desk.session.handle("home approve 7")  # still the Qa signoff, now the tab's first ask
    assert desk.bot.clicks == [(ALICE, "Approve", _value("r2"))]


async def test_a_refresh_is_one_line_and_only_when_the_number_of_asks_changed(desk: Desk) -> None:
    await desk.session.handle("home")
    desk.said()
    await desk.bot.republish(ALICE)
    assert desk.said() == ""
    await desk.session.handle("as bob")
    desk.said()
    desk.bot.asks = []
    await desk.bot.republish(ALICE)
    said = " ".join(desk.said().split())
    assert said == "@alice's Home tab was refreshed: nothing waits there (as alice, home shows it)"


async def test_mistakes_are_one_line_and_click_nothing(desk: Desk) -> None:
    for line, says in (
        ("home approve 1", "@alice has not opened the Home tab yet: type home first"),
        ("home", None),
        ("home approve", "which card? e.g. home approve 1"),
        ("home reply", "which card? e.g. home reply 1 <text>"),
        ("home approve 9", "card 9 is not in @alice's Home tab (it shows cards 4 and 7)"),
        ("home approve 0", "card 0 is not in @alice's Home tab (it shows cards 4 and 7)"),
        ("home trust 4", "card 4 has no Trust button there (it has Approve, Reject, Reply)"),
        ("home reply 7 ok", "card 7 has no Reply button there (it has Approve, Reject)"),
        ("home reply 4", "type the reply after the card number: home reply 4 <text>"),
        ("home reply 4 " + "y" * 3001, "a reply can be at most 3,000 characters"),
        ("home open 1", "home alone shows your Home tab; home approve 3 answers card 3 there (not 'open')"),
        ("home approve ²", "which card? e.g. home approve 1"),
    ):
        await desk.session.handle(line)
        said = desk.said()
        if says is not None:
            assert " ".join(said.split()).startswith(says), (line, said)
            assert said.count("\n") <= 2, said
    assert desk.bot.clicks == []


async def test_a_home_tab_that_never_comes_is_one_line(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(home_module, "HOME_TIMEOUT", 0.2)
    desk.bot.publish = False
    await desk.session.handle("home")
    assert desk.said() == "  the bot published no Home tab for @alice within 0 s\n"
    await desk.bot.republish(ALICE)  # a late one is not shown whole: nobody is waiting for it any more
    assert "Home tab was refreshed: cards 4 and 7 wait there" in " ".join(desk.said().split())


async def test_an_ask_whose_card_the_channel_has_not_shown_yet_cannot_be_named(desk: Desk) -> None:
    desk.bot.asks.append(("r3", "Fresh", ("Approve",)))
    await desk.session.handle("home")
    assert "│ (card not posted yet) [Approve]" in desk.said().splitlines()
    await desk.session.handle("home approve 0")
    assert "card 0 is not in @alice's Home tab (it shows cards 4 and 7)" in " ".join(desk.said().split())
    assert desk.bot.clicks == []


def test_the_asks_are_known_by_their_buttons_value() -> None:
    view = _view([("r1", "A", ("Approve", "Reply")), ("r2", "B", ("Reject",))])
    assert ask_values(view) == [_value("r1"), _value("r2")]
    assert labels_for(view, _value("r2")) == ["Reject"] and labels_for(view, _value("r3")) is None


def test_help_names_the_home_commands_and_pending() -> None:
    assert "home approve N | home reject N [reason] | home reply N <text>" in HELP
    assert "/graph pending" in HELP


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[str]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    monkeypatch.delenv("GRAPH_MODULES", raising=False)
    yield str(tmp_path)


async def test_the_payout_is_approved_from_two_home_tabs_with_the_real_bot(offline: str) -> None:
    from demo.stack import Stack

    stream = io.StringIO()
    async with Stack(state=offline) as stack:
        session = DemoSession(slack=stack.slack, user=stack.user, console=Console(stream=stream))
        await _step(session, "/graph run payout 900 EUR to acme")
        await _step(session, "/graph pending")  # nothing waits for the requester
        assert "Nothing waits for you" in stream.getvalue()
        for user in ("alice", "bob"):
            await _step(session, f"as {user}")
            stream.seek(0), stream.truncate()
            await _step(session, "home")
            tab = " ".join(stream.getvalue().split())
            assert f"@{user}'s Home tab" in tab and "card 1: [Approve] [Reject] [Reply]" in tab, tab
            stream.seek(0), stream.truncate()
            await _step(session, "home approve 1")
            said = " ".join(stream.getvalue().split())
            if user == "alice":
                assert "1 of 2" in said and f"@{user}'s Home tab" in said, said
        await stack.slack.wait_for(lambda: session.ended, timeout=30, what="the payout to finish")
    said = " ".join(stream.getvalue().split())
    assert "Approved by @alice and @bob" in said and "Paid 900 EUR to acme" in said
