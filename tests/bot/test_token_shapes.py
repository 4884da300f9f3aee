"""Token shapes: what ``serve`` and ``socket`` accept and refuse before anything else."""

from __future__ import annotations

import pytest

from bot.settings import Settings, load_settings
from bot.slack_access import ConfigError
from bot.token_shapes import check_tokens
from localslack import LocalSlack


def _settings(bot: str, app: str | None = None) -> Settings:
    values = {"SLACK_BOT_TOKEN": bot, "SLACK_SIGNING_SECRET": "s"}
    return load_settings(**values, **({"SLACK_APP_TOKEN": app} if app else {}))


@pytest.mark.parametrize("token", ["xoxb-1-2-abc"])
def test_bot_tokens_pass(token: str) -> None:
    check_tokens(_settings(token, "xapp-1-A1-2-abc"), socket=True)


def test_the_local_slacks_tokens_pass() -> None:
    slack = LocalSlack()
    check_tokens(_settings(slack.bot_token, slack.socket_mode.app_token), socket=True)


@pytest.mark.parametrize(
    ("bot", "app", "socket", "said"),
    [
        ("xoxe-1-refresh", None, False, "SLACK_BOT_TOKEN is a refresh token"),
        ("xoxe.xoxb-1-MS0yLTEx", None, False, "SLACK_BOT_TOKEN is a rotating bot token, which expires in 12 hours"),
        ("xoxb-1", "xoxp-1", True, "SLACK_APP_TOKEN is a user token"),
        ("xoxb-1 ", None, False, "SLACK_BOT_TOKEN has a space or line break"),
    ],
)
def test_wrong_kinds_are_named_without_the_token(bot: str, app: str | None, socket: bool, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check_tokens(_settings(bot, app), socket=socket)
    assert str(refused.value).startswith(said)
    assert "xoxb-1" not in str(refused.value).replace("xoxb-…", "")


def test_serve_does_not_look_at_the_app_token() -> None:
    check_tokens(_settings("xoxb-1", "not-an-app-token"), socket=False)
