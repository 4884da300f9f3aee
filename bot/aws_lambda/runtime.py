"""One Lambda container: its event loop, services and edge, and what each event asks.

A container handles one event at a time and is frozen between them, so it keeps one
event loop for its life (clients and thread pools made in one invocation are reused by
the next) and leaves nothing running when an invocation returns: Bolt runs with
``process_before_response`` so a listener finishes before its answer goes back, and work
past the ack travels in its own invocation (``bot.aws_lambda.invoke``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any, Final

from bot import metrics
from bot.app import build_edge
from bot.aws_lambda.events import BadHttpEvent, http_request, http_response, is_http, is_scheduled
from bot.aws_lambda.invoke import Forged, LambdaHandoff, envelope_key, is_envelope, unseal
from bot.aws_lambda.sdk import check_runtime_sdk
from bot.aws_lambda.secrets import SECRET_ENV, slack_secrets
from bot.edge import EdgeReply
from bot.handoff import HandoffFailed
from bot.perform import perform
from bot.services import Services
from bot.slack_access import ConfigError, SlackAccess
from bot.token_shapes import check_bot_token
from bot.work import SweepRun
from engine import log_context
from engine import metrics as engine_metrics

if TYPE_CHECKING:
    from bot.settings import Settings

logger = logging.getLogger(__name__)

SWEEP_FAN_OUT: Final = 100  # runs handed out per scheduled sweep; the next tick takes the rest


class LambdaRuntime:
    def __init__(self, services: Services, *, function: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.services = services
        self._function = function
        self._key = envelope_key(services.slack.signing_secret)
        self.handoff = LambdaHandoff(function=function, key=self._key)
        self.edge = build_edge(self.services, handoff=self.handoff, process_before_response=True)

    @classmethod
    def from_environment(cls) -> LambdaRuntime:
        """Slack access from the environment (or Secrets Manager); the full settings, and
        pydantic with them, on first need after the ack (``bot.slack_access`` says why)."""
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        if not function:
            raise ConfigError("AWS_LAMBDA_FUNCTION_NAME is not set: the bot hands work to its own function")
        secret = os.environ.get(SECRET_ENV)
        slack = SlackAccess.from_environ(os.environ, secrets=slack_secrets(secret) if secret else None)
        check_bot_token(slack.bot_token)  # a rotating token would fail every Slack call by evening
        check_runtime_sdk()  # after the secret's read, which imported botocore: free

        def settings() -> Settings:
            from pydantic import SecretStr

            from bot.settings import load_settings

            # Init values win over the environment: the secrets as read above. A bad setting
            # is one ConfigError line in the log, as `approval-bot` prints it.
            return load_settings(
                SLACK_BOT_TOKEN=SecretStr(slack.bot_token), SLACK_SIGNING_SECRET=SecretStr(slack.signing_secret)
            )

        return cls(Services(slack=slack, settings=settings), function=function)

    def prepare(self) -> None:
        """What the init phase can do ahead of any event, so that the first one waits for none of it:
        the handoff's Lambda client, and the codec that a first connection's host name goes
        through (``socket.getaddrinfo`` encodes a ``str`` host with ``idna``)."""
        import encodings.idna  # noqa: F401

        self.handoff.prepare()

    def handle(self, event: object, context: object = None) -> dict[str, Any]:
        """Answer one event; its log lines name its request, its metrics are written at its end."""
        with log_context.about(request_id=getattr(context, "aws_request_id", None)):
            try:
                return self._handle(event)
            finally:
                metrics.flush()  # frozen once it returns: nothing counted may wait for a later event

    def _handle(self, event: object) -> dict[str, Any]:
        if not isinstance(event, dict):
            logger.warning("ignored an event that is not an object")
            return {"ok": False, "error": "unrecognised event"}
        if is_http(event):
            return self.loop.run_until_complete(self._http(event))
        if is_envelope(event):
            return self.loop.run_until_complete(self._work(event))
        if is_scheduled(event):
            return self.loop.run_until_complete(self._sweep())
        logger.warning("ignored an event that is neither a Slack request, a sweep nor work of this function")
        return {"ok": False, "error": "unrecognised event"}

    async def _http(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            request = http_request(event)
        except BadHttpEvent as bad:
            return http_response(EdgeReply.json(400, {"error": str(bad)}))
        if request.method != "POST":
            return http_response(EdgeReply.json(405, {"error": "Slack requests are POSTs"}))
        return http_response(await self.edge.http(body=request.body, headers=request.headers))

    async def _work(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            work = unseal(event, key=self._key, function=self._function, now=time.time())
        except Forged as forged:
            logger.warning("refused an event posing as this function's own work: %s", forged)
            return {"ok": False, "error": "refused"}
        await perform(work, services=self.services)
        return {"ok": True}

    async def _sweep(self) -> dict[str, Any]:
        """List the runs due and hand each to an invocation of its own: one slow run (a
        long graph pass) never holds up the others, and each gets a full timeout."""
        due = await self.services.engine.due(limit=SWEEP_FAN_OUT)
        handed = 0
        for run_id in due:
            try:
                await self.handoff.submit(SweepRun(run_id=run_id))
            except HandoffFailed:
                break  # logged by the handoff; the next scheduled sweep finds them again
            handed += 1
        if due:
            logger.info("sweep: %d run(s) due, %d handed out", len(due), handed)
        engine_metrics.swept()
        return {"ok": handed == len(due), "due": len(due), "handed": handed}
