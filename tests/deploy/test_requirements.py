"""``sam build`` installs the Lambda package's dependencies from requirements.txt alone."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_requirements_txt_lists_exactly_the_runtime_dependencies() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = (REPO / "requirements.txt").read_text().splitlines()
    listed = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert listed == project["dependencies"]
