"""The four settings every ack needs (token, signing secret, API URL, command), without pydantic.

``bot.settings.Settings`` reads and checks all the configuration, with pydantic; importing
and building it costs ~60 ms, a sixth of a Lambda cold start that Slack is waiting on. So
the ack path runs on this small record, and the full settings are built on first need
(the store, the engine), after the ack. Both read the same variables with the same checks
(the functions below), so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

DEFAULT_API_URL: Final = "https://slack.com/api/"
DEFAULT_COMMAND: Final = "/graph"


class ConfigError(ValueError):
    """A missing or malformed setting; the message is one line and never holds a secret."""


def checked_command(value: str) -> str:
    if not value.startswith("/") or " " in value:
        raise ConfigError("SLACK_COMMAND must look like /graph")
    return value


def with_trailing_slash(url: str) -> str:
    """slack_sdk joins base_url and method names by plain concatenation."""
    return url if url.endswith("/") else url + "/"


@dataclass(frozen=True, kw_only=True)
class SlackAccess:
    bot_token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    command: str = DEFAULT_COMMAND

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], *, secrets: Mapping[str, str] | None = None) -> SlackAccess:
        """From the environment; ``secrets`` (read from Secrets Manager) win for the two secrets."""
        source = {**environ, **(secrets or {})}
        missing = [name for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET") if not source.get(name)]
        if missing:
            raise ConfigError(f"set {' and '.join(missing)}, or SLACK_SECRET_ARN to a secret holding them")
        return cls(
            bot_token=source["SLACK_BOT_TOKEN"],
            signing_secret=source["SLACK_SIGNING_SECRET"],
            api_url=with_trailing_slash(source.get("SLACK_API_URL") or DEFAULT_API_URL),
            command=checked_command(source.get("SLACK_COMMAND") or DEFAULT_COMMAND),
        )
