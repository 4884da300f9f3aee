"""The README's picture of a card is the card the real bot sends, drawn as Slack would.

The first test captures the payout card from the real bot (the demo's stack: the bot's web app,
the local Slack, SQLite, the scripted model) and redraws it: any change to the card's Block
Kit, or to the drawing, that is not also in docs/card.svg fails here. Redraw with
``python -m tests.docs.card``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from localslack.drawing import Run, message_svg, mrkdwn, wrap
from tests.docs.card import PICTURE, capture, draw


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    monkeypatch.delenv("GRAPH_MODULES", raising=False)
    yield


async def test_the_pictured_card_is_the_card_the_bot_sends(offline: None) -> None:
    card = await capture()
    assert card["blocks"][0]["type"] == "header" and card["blocks"][-1]["type"] == "actions"
    assert draw(card) == PICTURE.read_text(), "docs/card.svg is out of date: run python -m tests.docs.card"


def test_mrkdwn_is_read_as_slack_reads_it() -> None:
    when = int(datetime(2026, 11, 28, 9, 30, tzinfo=UTC).timestamp())
    runs = mrkdwn(
        f"*Who:* <@U1> or <!subteam^S1|@finance> · `a &lt;b&gt;` _so_ <https://x.example|docs>\n"
        f"expires <!date^{when}^{{date_short_pretty}} at {{time}}|fallback>",
        names={"U1": "alice"},
    )
    assert runs == [
        Run(text="Who:", bold=True),
        Run(text=" "),
        Run(text="@alice", mention=True),
        Run(text=" or "),
        Run(text="@finance", mention=True),
        Run(text=" · "),
        Run(text="a <b>", code=True),
        Run(text=" "),
        Run(text="so", italic=True),
        Run(text=" "),
        Run(text="docs", link=True),
        Run(text="\n"),
        Run(text="expires "),
        Run(text="Nov 28 at 9:30 AM"),
    ]


def test_long_text_wraps_between_words() -> None:
    placed, lines = wrap([Run(text="word " * 40)], size=15, width=200)
    assert lines > 1 and all(item.x + item.width <= 200 * 1.15 for item in placed)


def test_every_block_kind_is_drawn() -> None:
    svg = message_svg(
        {
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": "Approve <this>"}},
                {"type": "divider"},
                {"type": "section", "fields": [{"type": "mrkdwn", "text": "*a*\n1"}]},
                {"type": "context", "elements": [{"type": "mrkdwn", "text": "small"}, {"type": "image"}]},
                {
                    "type": "actions",
                    "elements": [
                        {"type": "button", "text": {"type": "plain_text", "text": "Go"}, "style": "primary"},
                        {"type": "button", "text": {"type": "plain_text", "text": "Stop"}, "style": "danger"},
                    ],
                },
                {
                    "type": "table",
                    "rows": [[{"type": "raw_text", "text": "pays"}, {"type": "raw_text", "text": "9 <EUR>"}]],
                },
                {"type": "video"},
            ]
        }
    )
    assert svg.startswith("<svg") and "Approve &lt;this&gt;" in svg and "[video]" in svg
    assert 'fill="#007a5a"' in svg and 'fill="#e01e5a" text-anchor="middle">Stop' in svg
    assert ">pays<" in svg and "9 &lt;EUR&gt;" in svg and "[table]" not in svg  # a table is drawn as a grid
