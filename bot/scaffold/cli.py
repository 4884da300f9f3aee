"""What ``approval-bot init`` prints: the files it wrote and the next steps."""

from __future__ import annotations

from pathlib import Path

from bot.scaffold import init_project


def run_init(directory: str, *, bot_source: str | None) -> int:
    """Write the project (errors are ``ConfigError``s: one line and exit 2, via ``bot.cli``)."""
    written = init_project(Path(directory), bot_source=bot_source)
    print(f"Wrote a project to {written.root}/ (the bot: {written.requirement}):")
    for name in written.files:
        print(f"  {name}")
    print(
        f"Next: cd {written.root} && python3 -m venv .venv && .venv/bin/pip install -r requirements.txt pytest "
        "&& .venv/bin/python -m pytest\nthen: sam build && sam deploy --guided (README.md says more)"
    )
    return 0
