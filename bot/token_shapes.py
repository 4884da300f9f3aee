"""Which Slack token is which, by its prefix: the start checks of ``serve``, ``socket`` and
a Lambda cold start share these rules.

Slack's prefixes say what a token is (``xoxb-`` bot, ``xapp-`` app-level, ``xoxp-``
user, ``xoxe-`` refresh); a swapped or truncated paste is the usual mistake, and Slack
would only say ``invalid_auth`` or ``not_allowed_token_type`` at the first call. Kept
apart and import-free because a Lambda cold start runs it before it acks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from bot.slack_access import ConfigError

if TYPE_CHECKING:
    from bot.settings import Settings

BOT_TOKEN_PREFIXES: Final = ("xoxb-",)
"""A bot token. A rotating one (``xoxe.xoxb-``) is refused: it expires after 12 hours and the
bot does not refresh it, so a bot started with one would fail every Slack call by evening."""
APP_TOKEN_PREFIX: Final = "xapp-"

_WHERE_BOT: Final = "the Bot User OAuth Token (xoxb-…) from OAuth & Permissions"
_WHERE_APP: Final = "the app-level token (xapp-…, with connections:write) from Basic Information"
_KINDS: Final = (
    ("xoxb-", "a bot token"),
    ("xoxe.xoxb-", "a rotating bot token, which expires in 12 hours and this bot does not refresh"),
    ("xapp-", "an app-level token"),
    ("xoxp-", "a user token"),
    ("xoxe.xoxp-", "a user or configuration token"),
    ("xoxe-", "a refresh token"),
    ("xoxa-", "a workspace token"),
)


def check_bot_token(token: str) -> None:
    """``check_tokens``' rule for the bot token alone, for Lambda, which has no settings
    object at its cold start (a string check: nothing on the ack path)."""
    _check("SLACK_BOT_TOKEN", token, BOT_TOKEN_PREFIXES, _WHERE_BOT)


def check_tokens(settings: Settings, *, socket: bool) -> None:
    """``SLACK_BOT_TOKEN`` is a bot token, and for ``socket`` ``SLACK_APP_TOKEN`` an app-level one.

    Slack's prefixes say what a token is (``xoxb-`` bot, ``xapp-`` app-level, ``xoxp-``
    user, ``xoxe-`` refresh); a swapped or truncated paste is the usual mistake and Slack
    would only say ``invalid_auth`` or ``not_allowed_token_type`` at the first call. The
    message names the kind of token found, never the token.

    Raises:
        ConfigError: one line naming the variable and what to set it to.
    """
    check_bot_token(settings.slack_bot_token.get_secret_value())
    if socket and settings.slack_app_token is not None:
        _check("SLACK_APP_TOKEN", settings.slack_app_token.get_secret_value(), (APP_TOKEN_PREFIX,), _WHERE_APP)


def _check(variable: str, token: str, prefixes: tuple[str, ...], wanted: str) -> None:
    if token != token.strip() or any(c.isspace() for c in token):
        raise ConfigError(f"{variable} has a space or line break in it; set it to {wanted}, nothing around it")
    if token.startswith(prefixes):
        return
    kind = next((k for p, k in _KINDS if token.startswith(p)), None)
    found = f"is {kind}" if kind else "does not look like a Slack token of that kind"
    swapped = {"an app-level token": "SLACK_APP_TOKEN", "a bot token": "SLACK_BOT_TOKEN"}.get(kind or "")
    hint = f" (that one belongs in {swapped})" if swapped and swapped != variable else ""
    if token.startswith("xoxe.xoxb-"):
        hint = " (turn token rotation off under OAuth & Permissions, then reinstall the app)"
    raise ConfigError(f"{variable} {found}; set it to {wanted}{hint}")
