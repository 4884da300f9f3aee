"""Shared fixtures: real local servers (moto's DynamoDB/S3, the local fake Slack) live in tests/support."""

import os
import sys
from pathlib import Path

import pytest

# A run record that breaks the lifecycle's invariants fails the test (and, inherited, the
# bot processes it starts) instead of being repaired and logged as in production.
os.environ.setdefault("APPROVAL_BOT_STRICT_INVARIANTS", "1")

# Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set (container images
# often set it): without them every bot, CLI, demo and Lambda process the suite starts
# (several hundred) compiles the project's modules again, about 0.15 s of CPU each, and
# each xdist worker rewrites every test module's asserts again at collection. The caches
# go to __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

pytest_plugins = [
    "tests.support.aws",
    "tests.support.faults",
    "tests.support.lambda_",
    "tests.support.meters",
    "tests.support.slack",
]

_TESTS = Path(__file__).resolve().parent
FIRST = ("e2e", "reliability", "demo", "engine/test_interleavings.py", "bot/test_cli.py")
"""Tests that start processes or explore for long (folders, or single files): each xdist
worker runs its share of them first and the short unit tests after."""


def _long(path: Path) -> bool:
    if not path.is_relative_to(_TESTS):
        return False
    name = path.relative_to(_TESTS).as_posix()
    return any(name == first or name.startswith(first + "/") for first in FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the run for ``--dist worksteal`` (pyproject's addopts) so that it ends on short tests.

    worksteal gives the first worker the first half of the items and the second worker the
    rest, each run front to back; a worker that runs out takes the back half of the other's
    queue. In collection order the long tests sat together in one half, and a 30 s test
    could start when the other worker had nothing left. Here each half is its share of the
    long files, then short files: what is stolen, and what runs last, is short. A file stays
    in one half (a module fixture is set up once). Without xdist only the order changes.
    """
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.path, []).append(item)
    long = [group for path, group in files.items() if _long(path)]
    short = [group for path, group in files.items() if not _long(path)]
    halves: tuple[list[list[pytest.Item]], list[list[pytest.Item]]] = ([], [])
    sizes = [0, 0]
    for group in long:  # the long files, spread evenly
        half = 0 if sizes[0] <= sizes[1] else 1
        halves[half].append(group)
        sizes[half] += len(group)
    first_long, second_long = list(halves[0]), list(halves[1])
    first_short, second_short = [], []
    for group in short:  # short files fill the first half up to its size, then the second
        if sizes[0] < len(items) // 2:
            first_short.append(group)
            sizes[0] += len(group)
        else:
            second_short.append(group)
    items[:] = [item for group in first_long + first_short + second_long + second_short for item in group]
