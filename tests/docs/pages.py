"""The documentation the tests in this folder hold to the code: README.md and docs/*.md."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def name(page: Path) -> str:
    return str(page.relative_to(REPO))
