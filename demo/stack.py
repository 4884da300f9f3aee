"""The pieces the demo runs: a local Slack, the bot's real web app on a local port, a user.

Kept apart from the session so that importing the demo does not import the bot (and
Strands, which takes seconds): the session imports this only once its Ctrl-C handling
is in place.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from bot.server import build_web_app
from bot.services import Services, build_services
from bot.settings import Settings
from demo.commands import CHANNELS, GROUPS, USERS
from localslack import LocalSlack, LocalSlackUser


def demo_slack() -> LocalSlack:
    """The demo's local Slack: its users, its channel, and the user groups the payout example names."""
    slack = LocalSlack(users=USERS, channels=CHANNELS)
    for group, (handle, members) in GROUPS.items():
        slack.set_usergroup(group, members, handle=handle)
    return slack


class Stack:
    """``async with Stack(state=folder)``: everything started, and stopped again on exit.

    ``slack`` and ``settings`` (setting names and values, over the demo's own) let the test
    kit (``bot.testing``) run the same stack in its own channel, on its graphs and store.
    """

    def __init__(
        self, *, state: str, slack: LocalSlack | None = None, settings: Mapping[str, Any] | None = None
    ) -> None:
        self.state = state
        self.slack = slack or demo_slack()
        self._settings = dict(settings or {})
        self.services: Services | None = None
        self._runner: web.AppRunner | None = None
        self._user: LocalSlackUser | None = None
        self.command = "/graph"

    @property
    def user(self) -> LocalSlackUser:
        if self._user is None:
            raise RuntimeError("the demo stack is not started")
        return self._user

    async def __aenter__(self) -> Self:
        secret = secrets.token_hex(16)
        await self.slack.start()
        try:
            settings = Settings.model_validate(
                {
                    "SLACK_BOT_TOKEN": self.slack.bot_token,
                    "SLACK_SIGNING_SECRET": secret,
                    "SLACK_API_URL": self.slack.api_url,
                    "SQLITE_PATH": os.path.join(self.state, "runs.sqlite3"),
                    "GRAPH_MODULES": os.environ.get("GRAPH_MODULES", ""),
                    "EXAMPLE_GRAPHS": True,  # the demo is where the examples are for
                    # The rest is the session's to decide (it also clears the environment).
                    "SLACK_COMMAND": "/graph",
                    "DYNAMODB_TABLE": None,
                    "SNAPSHOT_BUCKET": None,
                    **self._settings,
                }
            )
            self.command = settings.slack_command
            self.services = build_services(settings)
            self._runner = web.AppRunner(build_web_app(services=self.services), access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            port = self._runner.addresses[0][1]
            url = f"http://127.0.0.1:{port}/slack/events"
            self._user = LocalSlackUser(bot_url=url, signing_secret=secret, slack=self.slack)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._user is not None:
            await self._user.aclose()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.slack.stop()
