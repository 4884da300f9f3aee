"""``approval-bot init DIR``: a deployable project of a team's own, outside this repository.

A team should not fork the bot to deploy its graphs. ``init`` writes a small project that
depends on the bot (``requirements.txt``) and holds only what is the team's: ``graphs/``
with one gated example graph, ``tests/`` rehearsing it offline with ``bot.testing``, the
stack (``template.yaml``, derived from the repository's: ``bot.scaffold.template``) and
a ``Makefile`` with which ``sam build`` makes a lean Lambda package (the bot's runtime
packages and ``graphs/``, nothing Lambda's runtime already has).

The files are package data under ``bot/scaffold/project/``, named ``*.template`` so that
neither the repository's linters nor pytest take them for its own code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final

from bot.scaffold.source import BotSourceError, installed_requirement, requirement_from_spec
from bot.scaffold.template import render
from bot.slack_access import ConfigError

__all__ = ["BotSourceError", "InitError", "Written", "init_project", "is_local_path", "lambda_python"]

SUFFIX: Final = ".template"
RENAMED: Final = {"gitignore": ".gitignore"}
"""Files a wheel would not carry under their real name (setuptools' globs skip dot files)."""


class InitError(ConfigError):
    """The folder cannot take a new project (one line for ``approval-bot init``)."""


@dataclass(frozen=True)
class Written:
    """What ``init_project`` made: the folder, its files (relative) and the bot requirement it pinned."""

    root: Path
    files: tuple[str, ...]
    requirement: str


def init_project(target: Path, *, bot_source: str | None = None) -> Written:
    """Write a new project into ``target`` (made if missing; refused unless empty or only ``.git``).

    ``bot_source`` is what ``requirements.txt`` names for the bot: a path or a pip
    requirement; by default where the running bot was installed from. A folder that cannot
    be made or written (its parent a file, no permission) is one ``InitError`` line.
    """
    requirement = requirement_from_spec(bot_source) if bot_source is not None else installed_requirement()
    python = lambda_python(sys.version_info[:2])
    files: dict[str, str] = {}
    for relative, source in _project_files(resources.files(__package__) / "project", ""):
        text = source.read_text(encoding="utf-8")
        files[relative] = render(text, python=python) if relative == "template.yaml" else text
    files["requirements.txt"] = _requirements(requirement)
    try:
        _check_target(target)
        target.mkdir(parents=True, exist_ok=True)
        for relative, text in sorted(files.items()):
            path = target / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as error:
        where = f" ({error.filename})" if error.filename and str(error.filename) != str(target) else ""
        raise InitError(f"cannot write the project to {target}{where}: {error.strerror or error}") from None
    return Written(root=target, files=tuple(sorted(files)), requirement=requirement)


OLDEST_LAMBDA_PYTHON: Final = (3, 12)
"""The oldest Lambda Python a new project gets: AWS ends python3.11's support in 2026."""
NEWEST_LAMBDA_PYTHON: Final = (3, 14)
"""The newest Lambda Python this bot knows of: a newer one running init gets this one."""


def lambda_python(running: tuple[int, ...]) -> tuple[int, int]:
    """Lambda's Python for a new project: the one running init, within what Lambda offers.

    The running one, so the team's tests and Lambda agree; never one AWS is retiring, nor
    one Lambda does not have yet (``sam deploy`` would refuse the runtime).
    """
    return min(max((running[0], running[1]), OLDEST_LAMBDA_PYTHON), NEWEST_LAMBDA_PYTHON)


def is_local_path(requirement: str) -> bool:
    """A requirement that is one machine's path (teammates and CI cannot build from it)."""
    return Path(requirement).is_absolute()


KEPT: Final = frozenset({".git"})
"""What a folder may already hold: ``git init`` first is a fine way to start."""


def _check_target(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise InitError(f"{target} is a file; give a new or empty folder for the project")
    if target.is_dir() and any(item.name not in KEPT for item in target.iterdir()):
        raise InitError(f"{target} is not empty; give a new or empty folder for the project")


def _project_files(folder: Traversable, prefix: str) -> list[tuple[str, Traversable]]:
    found: list[tuple[str, Traversable]] = []
    for item in folder.iterdir():
        if item.is_dir():
            if item.name != "__pycache__":
                found.extend(_project_files(item, f"{prefix}{item.name}/"))
        elif item.name.endswith(SUFFIX):
            name = item.name.removesuffix(SUFFIX)
            found.append((prefix + RENAMED.get(name, name), item))
    return found


def _requirements(requirement: str) -> str:
    return (
        "# What runs on Lambda (the Makefile installs it) and in the tests. The bot first: a path\n"
        '# or a git URL is built into a wheel by `sam build`; see README.md ("Pinning the bot").\n'
        f"{requirement}\n"
        "# Your graphs' own dependencies below, one a line (they need wheels for Lambda's platform).\n"
    )
