"""The one Bolt ``AsyncApp`` that the HTTP server, Socket Mode and Lambda all wrap.

It authorizes with the configured bot token directly instead of Bolt's default
``auth.test`` round trip on the first request: that call would sit on the ack path.
Requests reach it only through ``bot.edge``, which verifies Slack's signature, answers
``ssl_check`` and ``url_verification`` and checks the payload's shape; so Bolt's own
middleware for those is off, and it is given the payload the edge checked.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult

from bot.ack_first import AckFirst
from bot.edge import SlackEdge
from bot.handoff import Handoff
from bot.listeners import actions, commands, edits, events, fallback, views
from bot.services import Services
from bot.slack_client import web_client

logger = logging.getLogger(__name__)


class _IgnoreEnvToken(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN from the environment and warns that the client wins;
    here that is the design (authorize supplies the token), not a mistake to report."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


_bolt_logger = logging.getLogger("bot.bolt")
_bolt_logger.addFilter(_IgnoreEnvToken())


def build_app(services: Services, *, handoff: Handoff, process_before_response: bool = False) -> AsyncApp:
    token = services.slack.bot_token

    async def authorize(enterprise_id: str | None, team_id: str | None, **_: Any) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

    app = AsyncApp(
        name="approval-bot",  # else Bolt walks inspect.stack() to name itself: ~30 ms of a cold start
        signing_secret=services.slack.signing_secret,
        # Token-less: Bolt gives each request a client with the token from ``authorize``.
        client=web_client(token=None, base_url=services.slack.api_url),
        authorize=authorize,
        process_before_response=process_before_response,
        raise_error_for_unhandled_request=False,
        request_verification_enabled=False,  # done by bot.edge, before the body is parsed
        ssl_check_enabled=False,
        url_verification_enabled=False,
        logger=_bolt_logger,
    )

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        # Never echo payloads: they may carry user text. The type is enough to find it.
        logger.error("listener failed on a %s request: %r", body.get("type") or "command", error, exc_info=error)

    commands.register(app, services=services, handoff=handoff)
    actions.register(app, services=services, handoff=handoff)
    views.register(app, services=services, handoff=handoff)
    edits.register(app, services=services, handoff=handoff)
    events.register(app, handoff=handoff)
    fallback.register(app)  # last: Bolt runs the first listener that matches
    return app


def build_edge(
    services: Services, *, handoff: Handoff, process_before_response: bool = False, ack_first: AckFirst | None = None
) -> SlackEdge:
    """The app behind the edge every entry point (server, Socket Mode, Lambda) talks to.

    ``ack_first``: the one the in-process handoff waits on, so that its work starts after
    the acks in flight (``bot.ack_first``); Lambda, whose work runs elsewhere, needs none.
    """
    app = build_app(services, handoff=handoff, process_before_response=process_before_response)
    return SlackEdge(
        app=app, signing_secret=services.slack.signing_secret, command=services.slack.command, ack_first=ack_first
    )
