"""A Lambda cold start's first event is the request alone: the init phase built the rest.

Lambda imports the handler module in its init phase, before the first event; on a cold
start Slack waits for both, but the first event's handling is what issue 23 holds against
a bare Bolt app's (``bench/cold_start.py``). So importing ``bot.lambda_handler`` on Lambda
builds the runtime, the Bolt app and the handoff's Lambda client, and the first
``/graph run`` imports nothing, reads no botocore model and still acks only after its work
was handed to one self-invocation. Nothing heavy that only the work after the ack needs is
loaded at all: no Strands, no boto3 (botocore is enough), no pydantic, no store.

One cold start of the real handler in a fresh interpreter (the bench's child, as Lambda's
bootstrap runs it) against the local Slack and a local Lambda that records the
self-invocation, with either store configured.
"""

from __future__ import annotations

from bench.cold_start import cold_start_rig
from tests.e2e.conftest import Backend

NOT_ON_THE_ACK_PATH = (
    "strands",
    "boto3",
    "s3transfer",
    "pydantic",
    "pydantic_settings",
    "jsonschema",
    "aws_lambda_powertools",
    "opentelemetry",
    "engine.lifecycle",
    "persistence.sqlite",
    "persistence.dynamodb",
    "graph_defs.examples",
)
"""Loaded by the work after the ack (its own invocation), never by the init phase or the ack."""


async def test_a_cold_containers_first_event_imports_nothing_and_the_ack_loads_nothing_heavy(
    backend: Backend,
) -> None:
    async with cold_start_rig(store_env=backend.env) as rig:
        # Raises unless it answered an empty 200 after handing its work to one self-invocation.
        sample, log = await rig.one("ours", heavy=NOT_ON_THE_ACK_PATH)
    assert sample.handle_imports == [], f"the first event imported {len(sample.handle_imports)} modules"
    # The init phase read the Slack secret as deployed (SLACK_SECRET_ARN); its client is gone.
    models = ["lambda", "secretsmanager"]
    assert sample.clients == ["lambda"] and sample.service_models == models, (sample.clients, log[-2000:])
    assert [name for name, loaded in sample.loaded.items() if loaded] == []
    assert rig.invocations["ours"] == 1 and rig.auth_tests["ours"] == 0
