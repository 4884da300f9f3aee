"""Shared fixtures: real local servers (moto's DynamoDB/S3, the local fake Slack) live in tests/support."""

import os

# A run record that breaks the lifecycle's invariants fails the test (and, inherited, the
# bot processes it starts) instead of being repaired and logged as in production.
os.environ.setdefault("APPROVAL_BOT_STRICT_INVARIANTS", "1")

pytest_plugins = ["tests.support.aws", "tests.support.faults", "tests.support.lambda_", "tests.support.slack"]
