"""Pytest plugin: the local fake Slack (real HTTP on 127.0.0.1) and Slack's side towards a bot.

``local_slack`` is a started ``LocalSlack``; point the bot's ``SLACK_API_URL`` at
``local_slack.api_url`` and its token at ``local_slack.bot_token``. ``slack_user`` makes a
``LocalSlackUser`` that sends signed requests to a bot URL (or, given a ``transport``, delivers
over it, e.g. Socket Mode) and is closed after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser, Transport

SlackUserFactory = Callable[..., LocalSlackUser]


@pytest.fixture
async def local_slack() -> AsyncIterator[LocalSlack]:
    slack = LocalSlack()
    await slack.start()
    try:
        yield slack
    finally:
        await slack.stop()


@pytest.fixture
async def slack_user(local_slack: LocalSlack) -> AsyncIterator[SlackUserFactory]:
    """Factory: ``slack_user(bot_url=..., signing_secret=LOCAL_SIGNING_SECRET)`` or ``slack_user(transport=...)``."""
    made: list[LocalSlackUser] = []

    def make(
        *, bot_url: str | None = None, signing_secret: str = LOCAL_SIGNING_SECRET, transport: Transport | None = None
    ) -> LocalSlackUser:
        user = LocalSlackUser(bot_url=bot_url, signing_secret=signing_secret, slack=local_slack, transport=transport)
        made.append(user)
        return user

    yield make
    for user in made:
        await user.aclose()
