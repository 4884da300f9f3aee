"""The folder tree is the architecture: imports between top-level packages go one way.

The README draws these arrows; this test reads every import (lazy ones included) from
the source, so a drawing that drifts from the code fails here, not in a reader's head.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "demo", "engine", "graph_defs", "localslack", "persistence")

ALLOWED = {
    "engine": set(),
    "persistence": {"engine"},
    "graph_defs": {"engine"},
    "bot": {"engine", "graph_defs", "persistence", "demo"},
    "demo": {"bot", "localslack"},
    "localslack": set(),
}
"""What the README's "Imports between the top-level packages" list says, package by package."""

SLACK_FREE = ("slack_bolt", "slack_sdk", "aiohttp", "boto3", "botocore")
KIT = REPO / "bot" / "testing"
"""The graph authors' test kit (``bot.testing``): it drives the bot from Slack's side, on the
demo's stack and the local Slack, so it is no part of the served bot and its arrows are its own."""


def _imports(package: str) -> dict[str, set[str]]:
    """Top-level module names imported anywhere in ``package`` (the kit aside), mapped to the files that do."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        if path.is_relative_to(KIT):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(REPO)))
    return found


def test_packages_import_each_other_only_as_drawn() -> None:
    for package in PACKAGES:
        imported = _imports(package)
        actual = {name for name in imported if name in PACKAGES and name != package}
        unexpected = actual - ALLOWED[package]
        assert not unexpected, {name: sorted(imported[name]) for name in unexpected}
        assert actual == ALLOWED[package], f"{package} no longer imports {ALLOWED[package] - actual}: redraw"


def test_only_the_console_script_reaches_into_the_demo() -> None:
    """``bot`` → ``demo`` closes a loop (``demo`` drives ``bot``): one entry point, no more."""
    assert _imports("bot")["demo"] == {"bot/cli.py"}


def test_the_test_kit_imports_localslack_and_the_demo_only_when_a_rehearsal_starts() -> None:
    """Where the kit is installed without them (a Lambda package), ``import bot.testing`` still works."""
    for path in sorted(KIT.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:  # module level; TYPE_CHECKING blocks and functions are not run at import
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            eager = {n.split(".")[0] for n in names} & {"localslack", "demo"}
            assert not eager, f"{path.relative_to(REPO)} imports {eager} at module level"


def test_the_readme_lists_the_same_arrows() -> None:
    readme = (REPO / "docs" / "architecture.md").read_text()
    section = readme.split("Imports between the top-level packages, exactly:", 1)[1].split("\n\n", 2)[1]
    for package, allowed in ALLOWED.items():
        line = next(line for line in section.splitlines() if line.startswith(f"- `{package}` imports"))
        named = {p for p in PACKAGES if f"`{p}`" in line.split("imports", 1)[1]}
        assert named == allowed, (package, line)


def test_the_engine_knows_neither_slack_nor_aws() -> None:
    imported = _imports("engine")
    assert not {name: imported[name] for name in SLACK_FREE if name in imported}
