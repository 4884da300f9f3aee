"""``approval-bot demo < /dev/null``: the scripted walk-through CI runs, as a log reads it.

It runs in an environment set up for a real deployment, the way an engineer's shell is:
the demo must take none of it (no table, endpoint, Slack command or lease of the real bot).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from demo.mrkdwn import cols
from tests.demo.pty_demo import SCRIPT

COLUMNS = 40
TYPED = re.compile(r"@[a-z]+ in #demo> ")  # the prompt before each typed line, in words
# A deployment's settings: each one, if the demo read it, sends its runs elsewhere or breaks it.
DEPLOYED = {
    "DYNAMODB_TABLE": "approval-runs",
    "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",  # a closed port: a write there fails the run
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "not-a-secret",
    "SNAPSHOT_BUCKET": "approval-snapshots",
    "SLACK_COMMAND": "/approve",
    "SLACK_API_URL": "http://127.0.0.1:9/api/",
    "LEASE_SECONDS": "1",
    "PORT": "99999",
    "DELIVERY_GRACE_SECONDS": "nonsense",
    "EXAMPLE_GRAPHS": "false",
    "GRAPH_MODEL": "bedrock",
    "BEDROCK_MODEL_ID": "eu.anthropic.claude-haiku-4-5-20251001-v1:0",
}


def test_the_walk_through_ignores_a_deployed_environment_and_fits_40_columns(tmp_path: Path) -> None:
    sqlite = tmp_path / "elsewhere" / "runs.sqlite3"
    (tmp_path / "tmp").mkdir()
    # Deliberately not pty_demo.clean_env: these variables must reach the demo.
    env = {**os.environ, **DEPLOYED, "SQLITE_PATH": str(sqlite), "TMPDIR": str(tmp_path / "tmp")}
    env.update(COLUMNS=str(COLUMNS), LOG_LEVEL="WARNING")
    done = subprocess.run(
        [str(SCRIPT), "demo", "--script"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = " ".join(done.stdout.split())  # wrapped to 40 columns: compare words
    assert said.endswith("Demo finished: 4 runs finished, 5 cards answered.")
    _the_payout_policy_held(said)
    _progress_and_home_shown(said)
    assert done.stderr == ""
    # What the demo prints fits the width; the echoed script lines are what a person typed.
    echoed = re.compile(r"^@[a-z]+ in #demo> ")
    assert not [line for line in done.stdout.splitlines() if cols(line) > COLUMNS and not echoed.match(line)]
    assert "Offline demo: the real bot and a local" in done.stdout  # the banner, wrapped
    assert not re.search(r"\x1b\[|:white_check_mark:|<@U|\*deploy\*", done.stdout)  # not a terminal: no styling
    # Each step's answer is printed before the next step starts, the graph list too.
    assert done.stdout.index("Graphs you can run") < done.stdout.index("> /graph run deploy billing 1.2.3")
    assert list((tmp_path / "tmp").iterdir()) == [] and not sqlite.parent.exists()


def test_importing_the_session_leaves_the_bot_and_engine_for_after_the_environment_is_cleared() -> None:
    # engine.records reads DELIVERY_GRACE_SECONDS when imported: it must not be imported before run_demo.
    check = "import sys, demo.session; print(sorted(m for m in sys.modules if m.split('.')[0] in ('bot', 'engine')))"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_the_demo_owns_its_environment() -> None:
    from demo.session import own_environment

    environ = {**DEPLOYED, "SQLITE_PATH": "x", "GRAPH_MODULES": "refunds", "LOG_LEVEL": "INFO", "HOME": "/h"}
    own_environment(environ)
    assert environ == {
        "GRAPH_MODULES": "refunds",
        "LOG_LEVEL": "INFO",
        "HOME": "/h",
        "GRAPH_MODEL": "offline",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_CONFIG_FILE": os.devnull,
    }


def _progress_and_home_shown(said: str) -> None:
    """Each run's status message, once whole and then a line per change; bob's Home tab."""
    # (Which intermediate states get their own line depends on timing: live edits coalesce.)
    assert "┌─ run 1 status ─" in said and "run 1 status: Waiting for a person" in said
    assert "run 1 status: Completed · 3 nodes" in said and "┌─ run 4 status ─" in said
    steps = TYPED.split(said)
    opened = next(i for i, step in enumerate(steps) if step.startswith("home "))
    assert "@bob's Home tab" in steps[opened] and "ask 1: [Approve] [Reject] [Reply]" in steps[opened]
    assert "ask 2" not in steps[opened]  # alice answered the other sign-off on its card
    clicked = steps[opened + 1]
    assert clicked.startswith("home approve 1") and "Approved by @bob" in clicked
    assert clicked.index("Approved by @bob") < clicked.index("@bob's Home tab")  # then the tab, refreshed
    assert "Nothing waits for you" in clicked and "Release 2.0.0: GO" in clicked


def _the_payout_policy_held(said: str) -> None:
    """The walk-through's last run: two named approvers, one approval each, never the requester."""
    payout = said[said.index("@you in #demo> /graph run payout") :]
    steps = TYPED.split(payout)[1:]  # each typed line with what it brought, in order
    assert [step.split(" ")[:2] for step in steps[1:7]] == [
        ["approve", "5"],
        ["as", "alice"],
        ["approve", "5"],
        ["approve", "5"],
        ["as", "bob"],
        ["approve", "5"],
    ]
    refused_self, _, counted, refused_again, _, finished = steps[1:7]
    assert "Who may decide: @alice or @bob" in steps[0] and "0 of 2" in steps[0]
    assert "only @you sees this" in refused_self and "You started this run" in refused_self
    assert "card 5 updated" not in refused_self  # nothing was recorded
    assert "only @alice sees this" in counted and "1 of 2" in counted
    assert "only @alice sees this" in refused_again and "card 5 updated" not in refused_again
    assert "Approved by @alice and @bob" in finished and "Paid 900 EUR to acme" in finished
