"""What ``serve``, ``socket`` and ``sweep`` check before they start working.

A process that starts with a setting it cannot work with looks healthy and fails later,
once a minute, in a log nobody reads. So the cheap checks run first and a failure ends
the command with one line naming what to set (``bot.cli_errors`` words it, as for every
other command): the Slack tokens' shapes (no network), then one read of the store
(``bot.health.probe_store``: credentials, region and table in one ``GetItem``), one
query of the sweep index (``RunEngine.due``), and one ``HeadBucket`` when
``SNAPSHOT_BUCKET`` is set. Graph modules are imported after these,
so a bad token or table fails before Strands is imported.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from bot.health import probe_store, store_reason
from bot.slack_access import ConfigError

if TYPE_CHECKING:
    from bot.services import Services
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


def check_tokens(settings: Settings, *, socket: bool) -> None:
    """``SLACK_BOT_TOKEN`` is a bot token, and for ``socket`` ``SLACK_APP_TOKEN`` an app-level one.

    Slack's prefixes say what a token is (``xoxb-`` bot, ``xapp-`` app-level, ``xoxp-``
    user, ``xoxe-`` refresh); a swapped or truncated paste is the usual mistake and Slack
    would only say ``invalid_auth`` or ``not_allowed_token_type`` at the first call. The
    message names the kind of token found, never the token.

    Raises:
        ConfigError: one line naming the variable and what to set it to.
    """
    _check("SLACK_BOT_TOKEN", settings.slack_bot_token.get_secret_value(), BOT_TOKEN_PREFIXES, _WHERE_BOT)
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


async def check_store(services: Services) -> None:
    """One read of the store, one look at the sweep index, and ``HeadBucket`` when ``SNAPSHOT_BUCKET`` is set.

    Raises:
        ConfigError, StoreError, botocore's errors: what ``bot.cli_errors.explain`` words as
            one line (no credentials, a region that does not exist, a missing table or bucket).
    """
    store = services.store
    try:
        await asyncio.to_thread(probe_store, store)
    except Exception as error:
        if store_reason(error).startswith("the store did not answer"):  # nothing more precise to say
            raise ConfigError(_where(services) + store_reason(error)) from error
        raise
    await services.engine.due(limit=1)  # the sweep index (one Query): the sweeper's first round would need it
    bucket = services.settings.snapshot_bucket
    if services.settings.dynamodb_table and bucket:
        await asyncio.to_thread(_head_bucket, bucket)


def _where(services: Services) -> str:
    table = services.settings.dynamodb_table
    return f"DYNAMODB_TABLE={table!r}: " if table else f"SQLITE_PATH={services.settings.sqlite_path!r}: "


def _head_bucket(bucket: str) -> None:
    from persistence.aws import s3_client

    s3_client().head_bucket(Bucket=bucket)
