"""The card pictured in the README (docs/card.svg), captured from the real bot.

``python -m tests.docs.card`` runs the offline demo's stack (the real bot's web app, the local
Slack, SQLite, the scripted model), starts the ``payout`` example as the demo's user, takes the
Block Kit of the card the bot posts, and draws it with :mod:`localslack.drawing`. What changes
from run to run (the run id, the expiry time) is replaced by fixed values first, so that
``tests/docs/test_card.py`` can redraw the card and find the picture unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PICTURE = REPO / "docs" / "card.svg"
COMMAND = "run payout 900 EUR to acme"
RUN_ID = "k7m2x9q4w8t3p5zb"
EXPIRES = "2026-11-28 09:30 UTC"  # a day after the run started: the payout policy's expires_after
EXPIRES_AT = 1795858200


async def capture() -> dict[str, Any]:
    """The card message the bot posts for the payout example, as the local Slack stored it."""
    from demo.commands import CHANNEL, YOU
    from demo.stack import Stack

    with tempfile.TemporaryDirectory() as state:
        async with Stack(state=state) as stack:
            await stack.user.slash_command(text=COMMAND, user_id=YOU, channel_id=CHANNEL)

            def card() -> dict[str, Any] | None:
                return next(
                    (
                        m
                        for m in stack.slack.messages(CHANNEL)
                        if any(b["type"] == "actions" for b in m.get("blocks", []))
                    ),
                    None,
                )

            return await stack.slack.wait_for(card, timeout=20, what="the payout card")


def steady(message: dict[str, Any]) -> dict[str, Any]:
    """The card with its run id and expiry time fixed, and without what Slack does not show."""
    text = json.dumps(message["blocks"])
    for run_id in set(re.findall(r"run `(\w+)`", text)):
        text = text.replace(run_id, RUN_ID)
    text = re.sub(r"<!date\^\d+\^([^|>]*)\|[^>]*>", lambda m: f"<!date^{EXPIRES_AT}^{m.group(1)}|{EXPIRES}>", text)
    return {"blocks": json.loads(text)}


def draw(message: dict[str, Any]) -> str:
    from demo.commands import USERS
    from localslack.drawing import message_svg

    return message_svg(steady(message), names=USERS, time="9:30 AM")


def main() -> int:
    os.environ["GRAPH_MODEL"] = "offline"  # the scripted model, as in the demo
    os.environ.pop("GRAPH_MODULES", None)
    PICTURE.write_text(draw(asyncio.run(capture())))
    print(f"wrote {PICTURE.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
