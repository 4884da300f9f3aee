"""Every measured figure in the docs is the one in bench/results/*.json, and none is left unmarked.

A figure is written with a marker right after it, ``29<!-- figure: cost.cycle.write_units -->``;
``tests/docs/figures.py`` computes each from the results. Re-running a benchmark that moves a
figure makes this test list every place that still quotes the old one.
"""

from __future__ import annotations

import re

import pytest

from tests.docs.figures import FIGURES, expected
from tests.docs.pages import name, pages

MARKER = re.compile(r"<!-- figure: ([\w.\-]+) -->")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")

# Phrasings that state a measured figure. Each must carry a marker right after its number,
# or be reworded: a bare one is how a stale figure survives a re-run.
_N = r"\b(\d[\d,.]*\d|\d)(?![\d.,]|<!--)"  # a whole number, not followed by its marker
_WORDS = r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # spelled out
STALE = [
    re.compile(_N + r"[ *]*(?:small )?(?:DynamoDB )?requests\b"),
    re.compile(_N + r"[ *]*(?:\([^)]*\) )?write (?:request )?units\b"),
    re.compile(_N + r"[ *]*read units\b"),
    re.compile(r"\bratio " + _N),
    re.compile(_WORDS + r"(?: small)?(?: DynamoDB)? (?:requests|write units)\b", re.I),
    re.compile(r"\$" + _N + r"[^.]*\b(?:approval|cycle)"),
]


def _marked() -> list[tuple[str, int, str, str]]:
    """(page, line number, key, the number right before the marker)."""
    found = []
    for page in pages():
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            for match in MARKER.finditer(line):
                before = re.sub(r"[*_`$]+$", "", line[: match.start()].rstrip())
                numbers = NUMBER.findall(before)
                shown = numbers[-1] if numbers and before.endswith(numbers[-1]) else ""
                found.append((name(page), number, match.group(1), shown))
    return found


def test_every_marked_figure_is_the_measured_one() -> None:
    wrong = []
    for page, line, key, shown in _marked():
        if key not in FIGURES:
            wrong.append(f"{page}:{line}: unknown figure {key!r} (add it to tests/docs/figures.py)")
        elif shown != expected(key):
            says = shown or "nothing"
            wrong.append(f"{page}:{line}: {key} is {expected(key)} in bench/results, the page says {says}")
    assert not wrong, "\n".join(wrong)


def test_the_headline_figures_are_quoted() -> None:
    """The cycle's cost is quoted where people look for it, so the check above has work to do."""
    keys = {(page, key) for page, _, key, _ in _marked()}
    for page, key in [
        ("README.md", "cost.cycle.requests"),
        ("docs/how-it-works.md", "cost.cycle.requests"),
        ("docs/deploy.md", "cost.cycle.write_units"),
        ("docs/deploy.md", "dollars.per_1000_cycles"),
        ("docs/limits.md", "cost.cycle.requests"),
    ]:
        assert (page, key) in keys, f"{page} no longer quotes {key}"


def test_no_figure_is_left_unmarked() -> None:
    bare = []
    for page in pages():
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            for pattern in STALE:
                bare += [f"{name(page)}:{number}: {m.group(0)!r}" for m in pattern.finditer(line)]
    assert not bare, "figures without a <!-- figure: … --> marker (mark them or reword):\n" + "\n".join(bare)


@pytest.mark.parametrize("key", sorted(FIGURES))
def test_each_figure_can_be_computed(key: str) -> None:
    assert NUMBER.fullmatch(expected(key)), expected(key)
