"""The four settings every ack needs (token, signing secret, API URL, command), without pydantic.

``bot.settings.Settings`` reads and checks all the configuration, with pydantic; importing
and building it costs ~60 ms, a sixth of a Lambda cold start that Slack is waiting on. So
the ack path runs on this small record, and the full settings are built on first need
(the store, the engine), after the ack. Both read the same variables with the same checks
(the functions below), so they cannot disagree: an empty variable counts as unset, and a
bad value is refused with the same one-line message (``bad_value``) on either path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

DEFAULT_API_URL: Final = "https://slack.com/api/"
DEFAULT_COMMAND: Final = "/graph"


class ConfigError(ValueError):
    """A missing or malformed setting; the message is one line and never holds a secret.

    The message names the setting, says what is wrong with it and what to set instead,
    so that ``approval-bot`` can print it as is (exit status 2) and Lambda's log shows the
    same line.
    """


def bad_value(name: str, value: str, *, expected: str, example: str, default: str | None) -> str:
    """The one-line message for a setting whose value is malformed.

    ``expected`` completes "is not ..."; the value is quoted (cut short), so never pass a secret.
    """
    shown = value if len(value) <= 60 else value[:57] + "..."
    unset = f", or unset it for the default ({default})" if default is not None else ""
    return f"{name}={shown!r} is not {expected}; set {name} to one, e.g. {name}={example}{unset}"


def checked_command(value: str) -> str:
    if not value.startswith("/") or len(value) < 2 or any(c.isspace() for c in value):
        raise ConfigError(
            bad_value(
                "SLACK_COMMAND",
                value,
                expected="a slash command ('/' then a name without spaces, as in the Slack app)",
                example=DEFAULT_COMMAND,
                default=DEFAULT_COMMAND,
            )
        )
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
