"""What the Lambda end-to-end tests share: one deployment of the bot as a Lambda function, locally.

``LambdaDeployment`` bundles what AWS and Slack would provide (``tests/support/lambda_/``):
containers that run ``bot.lambda_handler.handler`` in fresh processes, DynamoDB on moto's
server, the local Slack over HTTP, and ``LocalLambda`` recording the bot's self-invocations
so that a test decides when, where and how often each one runs. Each test module makes one
with its own ``deployment`` fixture (``LambdaDeployment(...)`` over the standard fixtures).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import boto3

from engine.records import Run
from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser
from localslack.transport import BotResponse
from persistence.dynamodb import DynamoRunStore
from tests.e2e.conftest import CHANNEL, cards
from tests.support.aws import REGION, CountingMotoServer
from tests.support.lambda_ import (
    ContainerChooser,
    EventFormat,
    Invocation,
    LambdaContainer,
    LambdaPool,
    LambdaTransport,
    LocalLambda,
    replay,
)

BOT_APP_ID: Final = "approval-bot-on-lambda"
"""botocore's user-agent app id in every container, so moto counts the function's own requests apart."""
LIVE: Final = ["Approve", "Reject", "Reply"]
SLACK_ACK_LIMIT: Final = 3.0
"""Slack drops an answer that takes longer than this (its hard limit, not a target)."""
WORK_FIELDS: Final = {
    "start": {"kind", "run_id", "graph", "task", "user", "channel", "response_url"},
    "decide": {"kind", "run_id", "ask_key", "decision", "card", "response_url", "where"},
    "home": {"kind", "user"},
    "pending": {"kind", "user", "response_url"},
    "pick_up": {"kind", "run_id"},
    "sweep_run": {"kind", "run_id"},
}
"""Everything a self-invocation may carry per kind of work: ids and a person's words, never run state."""
STATE_WORDS: Final = ("snapshot", "state", "asks", "messages", "blocks", "output", "conversation", "interrupt")

PoolFactory = Callable[..., LambdaPool]
UserFactory = Callable[..., LocalSlackUser]


class RecordingTransport(LambdaTransport):
    """``LambdaTransport`` that keeps every body it signed and the timestamp it signed it with,
    so a test can deliver the very same signed request again (a Slack retry)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sent: list[tuple[bytes, str]] = []

    async def post(
        self,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        sign: bool = True,
        timestamp: str | None = None,
        signature: str | None = None,
    ) -> BotResponse:
        stamp = timestamp or str(int(time.time()))
        self.sent.append((body, stamp))
        return await super().post(body, headers=headers, sign=sign, timestamp=stamp, signature=signature)


@dataclass
class LambdaDeployment:
    """The bot deployed as one Lambda function: its configuration, its containers, its store, its Slack."""

    local_lambda: LocalLambda
    slack: LocalSlack
    moto: CountingMotoServer
    table: str
    markers: Path
    aws_env: Mapping[str, str]
    make_pool: PoolFactory
    make_user: UserFactory
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.env = {
            **self.aws_env,
            **self.local_lambda.env(),
            "AWS_SDK_UA_APP_ID": BOT_APP_ID,
            "DYNAMODB_TABLE": self.table,
            "SLACK_BOT_TOKEN": self.slack.bot_token,
            "SLACK_API_URL": self.slack.api_url,
            "SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET,
            "GRAPH_MODULES": "tests.support.graphs",
            "EXAMPLE_GRAPHS": "true",  # the tests run the example graphs too; off unless asked for
            "GRAPH_MODEL": "offline",
            "APPROVAL_BOT_TEST_MARKERS": str(self.markers),
            "LOG_LEVEL": "INFO",
        }

    # -- the function --------------------------------------------------------------------------

    def pool(
        self,
        extra_env: Mapping[str, str] | None = None,
        *,
        policy: Literal["warm", "cold"] = "warm",
        drop: tuple[str, ...] = (),
    ) -> LambdaPool:
        """Containers of the function, configured with ``env`` plus ``extra_env`` minus ``drop``."""
        env = {k: v for k, v in {**self.env, **(extra_env or {})}.items() if k not in drop}
        return self.make_pool(env, policy=policy)

    def user(
        self,
        containers: ContainerChooser | LambdaContainer,
        *,
        event_format: EventFormat = "function_url",
        base64: bool | None = None,
        signing_secret: str = LOCAL_SIGNING_SECRET,
        ack_timeout: float | None = SLACK_ACK_LIMIT,
    ) -> tuple[LocalSlackUser, RecordingTransport]:
        """Slack's side, reaching the function through its front door (Function URL or API Gateway)."""
        transport = RecordingTransport(
            containers=containers,
            signing_secret=signing_secret,
            event_format=event_format,
            base64=base64,
            ack_timeout=ack_timeout,
        )
        return self.make_user(transport=transport), transport

    async def replay_in(self, container: LambdaContainer, invocations: list[Invocation]) -> list[Any]:
        """Run recorded invocations in ``container``; their results (a handler error raises)."""
        done = await replay(self.local_lambda, container, invocations=invocations)
        assert [r.container for r in done] == [container.name] * len(invocations)
        return [r.result for r in done]

    # -- what the store holds ------------------------------------------------------------------

    def store(self) -> DynamoRunStore:
        return DynamoRunStore(self.table)

    def run_ids(self) -> list[str]:
        """Every run item in the table (a scan: the test's view, not the bot's)."""
        client = boto3.client("dynamodb", region_name=REGION)
        found: list[str] = []
        for page in client.get_paginator("scan").paginate(TableName=self.table):
            for item in page.get("Items", []):
                if item.get("sk", {}).get("S") == "run":
                    found.append(item["pk"]["S"].removeprefix("run#"))
        return found

    def only_run(self) -> Run:
        (run_id,) = self.run_ids()
        run = self.store().load(run_id, snapshot=False)
        assert run is not None
        return run

    def bot_requests(self) -> dict[str, int]:
        """DynamoDB requests the function made since the last ``moto.reset_counts()``."""
        return {k: n for k, n in self.moto.counts(app_id=BOT_APP_ID).items() if k.startswith("dynamodb.")}

    # -- side effects and Slack ----------------------------------------------------------------

    def marker_lines(self) -> list[str]:
        return self.markers.read_text().splitlines() if self.markers.exists() else []

    def posts(self, what: str) -> list[dict[str, Any]]:
        """Every chat.postMessage the bot made for ``what`` (an ask key, "announcement", "final"),
        by the metadata that names it: a message posted twice shows twice here even if deleted."""
        return [
            params
            for method, params in self.slack.calls
            if method == "chat.postMessage"
            and ((params.get("metadata") or {}).get("event_payload") or {}).get("what") == what
        ]

    def slack_methods(self) -> list[str]:
        return [method for method, _ in self.slack.calls]

    def responses_to(self, user: str) -> list[str]:
        """Texts sent to ``user`` through response URLs (ephemeral notes), oldest first."""
        return [str(r["body"].get("text", "")) for r in self.slack.responses if r["user"] == user]

    async def card(self, timeout: float = 30.0) -> dict[str, Any]:
        (card,) = await self.slack.wait_for(lambda: cards(self.slack), timeout=timeout, what="a card")
        return card

    async def start_run(
        self, user: LocalSlackUser, container: LambdaContainer, *, text: str = "run guarded-write hello"
    ) -> dict[str, Any]:
        """``/graph <text>`` by U0ALICE, its start replayed in ``container``: the run's one card."""
        ack = await user.slash_command(text=text, user_id="U0ALICE", channel_id=CHANNEL)
        assert ack.status == 200, ack
        (start,) = self.local_lambda.take()
        assert await self.replay_in(container, [start]) == [{"ok": True}]
        return await self.card()


def walk(value: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair of a JSON document, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key), item
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


def assert_small_envelope(invocation: Invocation, kind: str) -> dict[str, Any]:
    """An ``Event`` invocation under 1 KB whose work is ``kind``, made of ids and words only; its work."""
    assert invocation.invocation_type == "Event", invocation
    assert invocation.accepted and invocation.status == 202, invocation
    assert len(invocation.payload) < 1024, f"{len(invocation.payload)} bytes: {invocation.payload[:300]!r}"
    event = invocation.event()
    assert set(event) == {"approval_bot", "sig"}, event
    work = event["approval_bot"]["work"]
    assert work["kind"] == kind, work
    assert set(work) == WORK_FIELDS[kind], f"unexpected fields in {work}"
    keys = {key.lower() for key, _ in walk(event)}
    assert not {k for k in keys if any(word in k for word in STATE_WORDS)}, f"state-like content in {event}"
    texts = [v for _, v in walk(event) if isinstance(v, str)]
    assert all(len(t) < 300 for t in texts), f"a long text in {event}"
    return dict(work)


def forged_copy(invocation: Invocation, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    event = json.loads(invocation.payload)
    change(event)
    return dict(event)
