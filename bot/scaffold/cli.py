"""What ``approval-bot init`` prints: the files it wrote and the next steps."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from bot.scaffold import init_project, is_local_path
from bot.scaffold.source import DISTRIBUTION


def run_init(directory: str, *, bot_source: str | None) -> int:
    """Write the project (errors are ``ConfigError``s: one line and exit 2, via ``bot.cli``)."""
    written = init_project(Path(directory), bot_source=bot_source)
    print(f"Wrote a project to {written.root}/ (the bot: {written.requirement}):")
    for name in written.files:
        print(f"  {name}")
    print(
        f"Next: cd {shlex.quote(str(written.root))} && python3 -m venv .venv "
        "&& .venv/bin/pip install -r requirements.txt pytest "
        "&& .venv/bin/python -m pytest\nthen: sam build && sam deploy --guided (README.md says more)"
    )
    if is_local_path(written.requirement):
        print(
            f"Note: requirements.txt names {written.requirement}, a path on this machine only: teammates and CI "
            f"cannot build from it. Before you commit, pin a version ({DISTRIBUTION}==0.1.0) or a git URL "
            f"({DISTRIBUTION} @ git+https://github.com/OWNER/REPO@TAG) there, or pass it as --bot-source.",
            file=sys.stderr,
        )
    return 0
