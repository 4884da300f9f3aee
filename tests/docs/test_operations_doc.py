"""docs/operations.md, the runbook, covers what template.yaml alarms on, both ways: every alarm
has its section under the heading its description names, and no section is left for an alarm
that is gone; its table of metrics is the catalog."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy.test_alarms import ALARMS, CATALOG
from tests.deploy.test_template import load_sam
from tests.docs.pages import REPO

RUNBOOK = (REPO / "docs" / "operations.md").read_text()


@pytest.fixture(scope="module")
def sam() -> dict[str, Any]:
    return load_sam()


def _section(heading: str) -> str:
    return RUNBOOK.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_every_alarm_has_the_section_its_description_names(sam: dict[str, Any]) -> None:
    sections = set(re.findall(r"^### (.+)$", _section("The alarms"), re.MULTILINE))
    named = set()
    for name in ALARMS:
        properties = sam["Resources"][name]["Properties"]
        match = re.search(
            r'Runbook: "([^"]+)" in the approval bot\'s docs/operations\.md', properties["AlarmDescription"]
        )
        assert match is not None, f"{name}'s description names no runbook section"
        named.add(match[1])
        assert match[1] in sections, f"{name}: docs/operations.md has no section ### {match[1]}"
        section = _section("The alarms").split(f"\n### {match[1]}\n", 1)[1].split("\n### ", 1)[0]
        suffix = properties["AlarmName"]["Fn::Sub"].removeprefix("${AWS::StackName}")
        assert f"`<stack>{suffix}`" in section, f"the section does not name the alarm <stack>{suffix}"
        for word in ("**What it means.**", "**Look at.**", "**What to do.**"):
            assert word in section, (match[1], word)
    assert sections == named, "one section per alarm, and none for an alarm that is gone"


def test_the_metrics_table_is_the_catalog() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([\w, ]+) \|", _section("The metrics"), re.MULTILINE)
    table = {name: (unit, () if dims == "none" else tuple(dims.split(", "))) for name, unit, dims in rows}
    assert table == CATALOG
