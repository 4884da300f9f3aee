"""The SDK of a Lambda container (``bot.aws_lambda.sdk``): the check of Lambda's own boto3, and its one session."""

from __future__ import annotations

import logging
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import botocore
import pytest

from bot.aws_lambda import invoke, sdk
from bot.aws_lambda.runtime import LambdaRuntime
from bot.aws_lambda.sdk import MIN_BOTO3, sdk_too_old
from bot.aws_lambda.secrets import slack_secrets
from bot.slack_access import ConfigError

REPO = Path(__file__).resolve().parents[3]


def test_the_minimum_is_pyprojects_pin() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if re.match(r"boto3\b", d)]
    match = re.fullmatch(r"boto3>=(\d+)\.(\d+)", pin)
    assert match, pin
    assert (int(match[1]), int(match[2])) == MIN_BOTO3


@pytest.mark.parametrize("version", ["1.35.0", "1.44.8", "2.0.0", "not-a-version"])
def test_a_new_enough_or_unreadable_sdk_says_nothing(version: str, caplog: pytest.LogCaptureFixture) -> None:
    assert not sdk_too_old(version)
    assert not caplog.records


def test_an_old_sdk_is_one_error_line_with_the_fix(caplog: pytest.LogCaptureFixture) -> None:
    assert sdk_too_old("1.34.162")
    (record,) = caplog.records
    line = record.getMessage()
    assert record.levelno == logging.ERROR and "\n" not in line
    assert "1.34.162" in line and "boto3>=1.35" in line and "Makefile" in line, line


@pytest.mark.parametrize(("version", "errors"), [("1.34.0", 1), (botocore.__version__, 0)])
def test_a_cold_start_checks_the_runtimes_sdk(
    version: str, errors: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What ``bot.lambda_handler`` makes on a container's first event, with a fake old botocore."""
    monkeypatch.setattr(botocore, "__version__", version)
    for name, value in {
        "AWS_LAMBDA_FUNCTION_NAME": "approvals",
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "s" * 32,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SLACK_SECRET_ARN", raising=False)
    runtime = LambdaRuntime.from_environment()
    runtime.loop.close()
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR and "botocore" in r.getMessage()]) == errors


def test_a_cold_start_refuses_a_rotating_bot_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """As `serve` and `socket` do at start: the bot never refreshes it, so it would fail in 12 hours."""
    for name, value in {
        "AWS_LAMBDA_FUNCTION_NAME": "approvals",
        "SLACK_BOT_TOKEN": "xoxe.xoxb-1-MS0yLTEx",
        "SLACK_SIGNING_SECRET": "s" * 32,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SLACK_SECRET_ARN", raising=False)
    with pytest.raises(ConfigError, match=r"^SLACK_BOT_TOKEN is a rotating bot token") as refused:
        LambdaRuntime.from_environment()
    assert "MS0yLTEx" not in str(refused.value)


class _Session:
    """A botocore session that records which clients it made (each answers what the code reads)."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def create_client(self, service: str, **_: Any) -> Any:
        self.made.append(service)
        secret = '{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "' + "s" * 32 + '"}'
        return SimpleNamespace(get_secret_value=lambda **_: {"SecretString": secret})


def test_the_secrets_client_and_the_lambda_client_come_from_one_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second session would read botocore's endpoint data and models again: ~50 ms of a cold start."""
    assert sdk.session() is sdk.session()
    session = _Session()
    monkeypatch.setattr(sdk, "session", lambda: session)
    assert slack_secrets("arn:aws:secretsmanager:eu-west-1:123456789012:secret:slack")["SLACK_BOT_TOKEN"] == "xoxb-1"
    invoke._lambda_client()
    assert session.made == ["secretsmanager", "lambda"]
