"""The new project's ``template.yaml``, derived from the repository's own.

The project's stack must stay the bot's stack: the same roles, table, bucket, queue and
settings, with every fix made to one made to the other. So the project's template is not
written by hand: ``derive`` turns the repository's ``template.yaml`` into it with a few
exact edits (each must match once, or deriving fails), and a test checks that the copy
shipped in ``bot/scaffold/project/`` is what ``derive`` makes today. After a change to
``template.yaml``, regenerate it with ``python -m bot.scaffold.template``.

``render`` then sets what only ``approval-bot init`` knows: Lambda's Python version.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SHIPPED: Final = Path(__file__).with_name("project") / "template.yaml.template"
EXAMPLE_MODULE: Final = "graphs.refunds"
REPOSITORY_RUNTIME: Final = "      Runtime: python3.12\n"


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` (which must occur exactly once) with ``new``; ``why`` says what differs."""

    why: str
    old: str
    new: str


EDITS: Final = (
    Edit(
        why="the project has no docs/ of its own",
        old="  background invocations. See docs/deploy.md.\n",
        new="  background invocations. See README.md.\n",
    ),
    Edit(
        why="the same, for the comment",
        old='# Every choice below is explained in docs/deploy.md ("What the template sets, and why").\n',
        new='# Every choice below is explained in the bot\'s docs/deploy.md ("What the template sets, and why").\n',
    ),
    Edit(
        why="the team's graphs are the default",
        old=(
            '    Default: ""\n'
            "    Description: >-\n"
            "      Comma-separated importable modules with graph definitions (GRAPH_MODULES), besides\n"
            "      those in graph_defs/. Empty: only graph_defs/ (and the examples, if ExampleGraphs).\n"
        ),
        new=(
            f"    Default: {EXAMPLE_MODULE}\n"
            "    Description: >-\n"
            "      Comma-separated importable modules with graph definitions (GRAPH_MODULES): this\n"
            "      project's graphs/ modules, which the Makefile puts at the package's root.\n"
        ),
    ),
    Edit(
        why="the lean package: the Makefile builds it (no copy of the project folder)",
        old="    Type: AWS::Serverless::Function\n    Properties:\n",
        new=(
            "    Type: AWS::Serverless::Function\n"
            "    # The Makefile's build-ApprovalBotFunction makes the package: the bot and its\n"
            "    # dependencies as Lambda wheels, less what the runtime has, plus graphs/.\n"
            "    Metadata:\n"
            "      BuildMethod: makefile\n"
            "    Properties:\n"
        ),
    ),
    Edit(
        why="the same, for the comment on CodeUri",
        old=(
            "      # sam build copies this directory (less a fixed list: .git, .venv, __pycache__, …)\n"
            "      # and installs requirements.txt into the package. See docs/deploy.md.\n"
        ),
        new="      # The folder the Makefile runs in (a copy of it); see README.md for what the package holds.\n",
    ),
)


class TemplateDrift(ValueError):
    """The repository's template no longer has a text an edit replaces: update ``EDITS``."""


def derive(repository_template: str) -> str:
    """The project's template from the repository's, by ``EDITS``."""
    text = repository_template
    for edit in EDITS:
        if text.count(edit.old) != 1:
            raise TemplateDrift(f"template.yaml has {text.count(edit.old)} copies of the text to change ({edit.why})")
        text = text.replace(edit.old, edit.new)
    if text.count(REPOSITORY_RUNTIME) != 1:
        raise TemplateDrift("template.yaml has no single `Runtime: python3.12` line to set")
    return text


def render(shipped: str, *, python: tuple[int, int]) -> str:
    """The shipped template with Lambda's runtime set to ``python``.

    The project's Makefile installs wheels for that version with ``pip --python-version``,
    so ``sam build`` does not need that interpreter on PATH."""
    major, minor = python
    return shipped.replace(REPOSITORY_RUNTIME, f"      Runtime: python{major}.{minor}\n")


def main() -> int:
    """Regenerate the shipped copy from the repository's template.yaml (run from a checkout)."""
    repository = Path(__file__).resolve().parents[2] / "template.yaml"
    SHIPPED.write_text(derive(repository.read_text()))
    print(f"wrote {SHIPPED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
