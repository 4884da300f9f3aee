"""The cold-start baseline: the bare Bolt app of Bolt's own AWS Lambda guide, answering ``/graph``.

As Bolt's guide writes it (``examples/aws_lambda/lazy_aws_lambda.py`` in slackapi/bolt-python):
a module-level ``App(process_before_response=True)``, a command listener that acks and
has a lazy listener, and a ``handler`` wrapping the app in ``SlackRequestHandler``. The
lazy listener never runs here: acking the command, Bolt's ``LambdaLazyListenerRunner``
hands it to another invocation of this function through boto3's Lambda client (which
honours ``AWS_ENDPOINT_URL_LAMBDA``), as our handler hands its work off.

Two departures from the guide:

* Bolt reads no Slack API URL from the environment, so the app gets a ``WebClient`` for
  ``SLACK_API_URL`` (the local Slack in the bench) with ``SLACK_BOT_TOKEN``, so that it
  runs in the same environment as ours;
* the guide's debug logging (``logging.basicConfig(level=logging.DEBUG)`` and a middleware
  logging every body) is left out: it would only slow the baseline down. Its ack is
  empty, as ours is for ``/graph run``.

``BARE_BOLT_AUTH`` chooses how it authorizes (``bench/cold_start.py`` sets it):

``guide`` (default)
    the guide's single-workspace app: a token, and Bolt's ``auth.test`` when the app is
    built (``token_verification_enabled=True``, the default). ``False`` would not spare
    the call, only move it: Bolt's ``SingleTeamAuthorization`` then makes it on the first
    request, inside the ack.
``authorize``
    an ``authorize`` function returning the fixed token, like ours: no ``auth.test`` at all.
"""

from __future__ import annotations

import os
from typing import Any

from slack_bolt import Ack, App
from slack_bolt.adapter.aws_lambda import SlackRequestHandler
from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient

AUTH_ENV = "BARE_BOLT_AUTH"


def _app() -> App:
    token = os.environ["SLACK_BOT_TOKEN"]
    client = WebClient(token=token, base_url=os.environ.get("SLACK_API_URL", "https://slack.com/api/"))
    if os.environ.get(AUTH_ENV, "guide") == "authorize":

        def authorize(enterprise_id: str | None, team_id: str | None, **_: Any) -> AuthorizeResult:
            return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

        return App(process_before_response=True, client=WebClient(base_url=client.base_url), authorize=authorize)
    return App(process_before_response=True, client=client)


app = _app()


def respond_to_slack_within_3_seconds(ack: Ack) -> None:
    ack()


def run_after_the_ack(body: dict[str, Any]) -> None:
    """Runs in the invocation Bolt hands it to (never in the bench, which only records that one)."""


app.command("/graph")(ack=respond_to_slack_within_3_seconds, lazy=[run_after_the_ack])


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    slack_handler = SlackRequestHandler(app=app)
    result: dict[str, Any] = slack_handler.handle(event, context)  # type: ignore[no-untyped-call]
    return result
