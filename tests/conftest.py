"""Shared fixtures: real local servers (moto's DynamoDB/S3, the local fake Slack) live in tests/support."""

pytest_plugins = ["tests.support.aws", "tests.support.faults", "tests.support.lambda_", "tests.support.slack"]
