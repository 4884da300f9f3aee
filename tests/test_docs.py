"""The docs say what the code does: quick start, configuration and manifest stay in step."""

from __future__ import annotations

import re
from pathlib import Path

from bot.settings import Settings

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def _quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_ci_runs_the_readme_quick_start_verbatim() -> None:
    commands = _quick_start_commands()
    assert len(commands) == 2, commands
    ci = (REPO / ".ci" / "run").read_text()
    for command in commands:
        assert command in ci, f"CI does not run the README's command: {command}"
    assert "pytest" in commands[1] and "approval-bot demo" in commands[0]


def test_every_setting_is_documented() -> None:
    table = (REPO / "docs" / "configuration.md").read_text()
    for field in Settings.model_fields.values():
        assert f"`{field.alias}`" in table, f"{field.alias} is missing from docs/configuration.md"


def test_the_manifest_points_at_the_served_route() -> None:
    manifest = (REPO / "slack-app-manifest.yaml").read_text()
    server = (REPO / "bot" / "server.py").read_text()
    assert '"/slack/events"' in server
    assert manifest.count("/slack/events") == 3  # slash command, interactivity and events
    assert "command: /graph" in manifest and Settings.model_fields["slack_command"].default == "/graph"


def test_the_readme_policy_example_declares_what_it_says() -> None:
    """The policy example in docs/policies.md is valid code whose terms the registry accepts."""
    from graph_defs.registry import get_graph, unregister

    section = (REPO / "docs" / "policies.md").read_text()
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    code = match.group(1).replace('"payout"', '"readme-payout"')
    namespace: dict[str, object] = {"Graph": object}
    try:
        exec(compile(code, "docs/policies.md", "exec"), namespace)  # our own docs
        policy = get_graph("readme-payout").policy
    finally:
        unregister("readme-payout")
    assert policy.quorum == 2 and policy.approvers == ("U0ALICE", "U0BOB", "S0FINANCE")
    assert policy.asks["send_payout"].quorum == 3 and policy.starters == ("S0FINANCE",)
