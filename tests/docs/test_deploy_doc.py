"""docs/deploy.md says what template.yaml holds: the role's actions, the table's indexes, the
parameters and the settings they become, both ways (nothing listed that the template lacks,
nothing in the template left unlisted)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy.test_template import load_sam
from tests.docs.pages import REPO

DEPLOY = (REPO / "docs" / "deploy.md").read_text()
HOW = (REPO / "docs" / "how-it-works.md").read_text()


def _section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]


def _row(table: str, first_cell: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(f"| {first_cell} |"))


@pytest.fixture(scope="module")
def sam() -> dict[str, Any]:
    return load_sam()


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_roles_actions_are_the_ones_listed(sam: dict[str, Any]) -> None:
    role = sam["Resources"]["FunctionRole"]["Properties"]
    actions = {
        action
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        for action in _as_list(statement["Action"])
    }
    conditions = {
        key
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        for test in statement.get("Condition", {}).values()
        for key in test
    }
    table = _section(DEPLOY, "## What the template sets, and why")
    named = set(re.findall(r"`([a-z0-9]+:[A-Za-z]+)`", _row(table, "IAM") + _row(table, "Bedrock")))
    listed = named - conditions
    assert listed - actions == set(), f"docs/deploy.md lists actions the role does not have: {listed - actions}"
    assert actions - listed == set(), f"docs/deploy.md does not list: {actions - listed}"


def test_the_tables_indexes_are_the_ones_listed(sam: dict[str, Any]) -> None:
    table = sam["Resources"]["RunsTable"]["Properties"]
    indexes = {gsi["IndexName"] for gsi in table["GlobalSecondaryIndexes"]}
    queried = {
        resource["Fn::Sub"].rsplit("/index/", 1)[1]
        for policy in sam["Resources"]["FunctionRole"]["Properties"]["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        for resource in _as_list(statement["Resource"])
        if isinstance(resource, dict) and "/index/" in str(resource.get("Fn::Sub", ""))
    }
    assert queried == indexes, "the role queries exactly the table's indexes"
    settings = _section(DEPLOY, "## What the template sets, and why")
    for row in ("table", "IAM"):
        match = re.search(r"indexes:? \(?((?:`\w+`(?:, )?)+)", _row(settings, row))
        assert match is not None, f"the {row} row of docs/deploy.md names no indexes"
        assert set(re.findall(r"`(\w+)`", match.group(1))) == indexes, _row(settings, row)
    layout = _section(HOW, "## DynamoDB item layout")
    assert set(re.findall(r"GSI `(\w+)`", layout)) == indexes, "docs/how-it-works.md's item layout"


def test_the_parameters_and_the_settings_they_become(sam: dict[str, Any]) -> None:
    section = _section(DEPLOY, "### Parameters, and the settings they become")
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    parameters = sam["Parameters"]
    assert {name for name, _, _ in rows} == set(parameters), "every parameter, and only those"
    environment = sam["Resources"]["ApprovalBotFunction"]["Properties"]["Environment"]["Variables"]
    by_parameter = {
        value["Ref"]: name
        for name, value in environment.items()
        if isinstance(value, dict) and value.get("Ref") in parameters  # not a fixed value
    }
    for name, default, sets in rows:
        declared = parameters[name].get("Default")
        shown = "required" if declared is None else ("empty" if declared == "" else f"`{declared}`")
        assert default == shown, (name, default, shown)
        variables = re.findall(r"`([A-Z][A-Z0-9_]+)`", sets)
        assert variables[:1] == ([by_parameter[name]] if name in by_parameter else []), (name, sets)
    after = section.split("\n\n")[-1]  # the sentence after the table names the other variables
    named = {v for _, _, sets in rows for v in re.findall(r"`([A-Z][A-Z0-9_]+)`", sets)}
    named |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", after))
    variables = set(environment)
    assert named == variables, f"variables: listed {named - variables}, unlisted {variables - named}"
