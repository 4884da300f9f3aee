"""Fixtures for the tests of the test infrastructure itself."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import boto3
import pytest

from tests.support.aws import REGION, CountingMotoServer


@pytest.fixture
def table(moto_server: CountingMotoServer) -> Iterator[str]:
    """A bare pk/sk table made here, so these tests depend on moto alone, not on the store's code."""
    client = boto3.client("dynamodb", region_name=REGION)
    name = f"support-{uuid.uuid4().hex[:12]}"
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    yield name
    client.delete_table(TableName=name)
