"""On Lambda only, importing ``bot.lambda_handler`` builds the container; a failed build is the first event's to report.

Each case is a fresh interpreter: the build happens once per process, at import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

_PROBE = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
import bot.lambda_handler as h
print("built" if h._runtime is not None else "not built")
print("bolt" if "slack_bolt" in sys.modules else "no bolt")
if h._runtime is None and sys.argv[1:] == ["event"]:
    try:
        h.handler({"source": "aws.events", "detail-type": "Scheduled Event"}, None)
    except Exception as error:
        print(type(error).__name__, error)
"""


def _probe(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ} | {"PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args], env=base | env, capture_output=True, text=True, timeout=60, check=True
    )


def test_off_lambda_importing_the_handler_builds_nothing() -> None:
    done = _probe({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s" * 32})
    assert done.stdout.split("\n")[:2] == ["not built", "no bolt"], done.stderr


def test_on_lambda_the_import_builds_the_container() -> None:
    env = {
        "AWS_LAMBDA_FUNCTION_NAME": "approvals",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "s" * 32,
    }
    done = _probe(env)
    assert done.stdout.split("\n")[:2] == ["built", "bolt"], done.stderr


def test_a_build_that_fails_at_import_is_tried_again_and_reported_by_the_first_event() -> None:
    env = {"AWS_LAMBDA_FUNCTION_NAME": "approvals", "SLACK_BOT_TOKEN": "xoxb-test"}  # no signing secret
    done = _probe(env, "event")
    lines = done.stdout.split("\n")
    assert lines[0] == "not built", done.stderr
    assert lines[2].startswith("ConfigError") and "SLACK_SIGNING_SECRET" in lines[2], done.stdout
    init_lines = [line for line in done.stderr.splitlines() if "init phase" in line]
    assert len(init_lines) == 1 and "ConfigError" in init_lines[0] and "s" * 32 not in done.stderr
