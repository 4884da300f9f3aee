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
    table = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    for field in Settings.model_fields.values():
        assert f"`{field.alias}`" in table, f"{field.alias} is missing from the README's configuration table"


def test_the_manifest_points_at_the_served_route() -> None:
    manifest = (REPO / "slack-app-manifest.yaml").read_text()
    server = (REPO / "bot" / "server.py").read_text()
    assert '"/slack/events"' in server
    assert manifest.count("/slack/events") == 2  # slash command and interactivity
    assert "command: /graph" in manifest and Settings.model_fields["slack_command"].default == "/graph"
