"""The alarms and the dashboard of template.yaml point at metrics that exist.

Every alarm reads either an AWS metric of this stack's own function or queue, or a metric
of the bot's catalog through a Metrics Insights query; every dimension it filters or groups
by is one the catalog emits for that metric; every alarm tells the optional SNS topic, and
nothing when there is none; the dashboard's body is JSON once CloudFormation has substituted
it, and every metric it names is in the catalog. ``sam validate --lint`` and ``cfn-lint``
(tests/deploy/test_template.py, .ci/template-check) check the rest.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bot.metrics import DEFAULT_NAMESPACE as DEFAULT_METRICS_NAMESPACE
from engine import metrics
from tests.deploy.test_template import Template, load_sam, props, render, resources

# The metric catalog (name -> unit, dimensions) and the outcomes, as engine/metrics.py owns them.
CATALOG: dict[str, tuple[str, tuple[str, ...]]] = {m.name: (m.unit, m.dimensions) for m in metrics.CATALOG}
OUTCOMES: dict[str, frozenset[str]] = {
    "Decisions": frozenset(metrics.DECISION_OUTCOMES),
    "RunsEnded": frozenset(metrics.RUN_OUTCOMES),
}
DEFAULT_NAMESPACE = DEFAULT_METRICS_NAMESPACE

FUNCTION, QUEUE = "ApprovalBotFunction", "FailedInvocationsQueue"
# AWS metrics an alarm or a widget may read, with the dimension naming this stack's resource.
AWS_METRICS: dict[tuple[str, str], tuple[str, Any]] = {
    ("AWS/Lambda", "Errors"): ("FunctionName", {"Ref": FUNCTION}),
    ("AWS/Lambda", "Throttles"): ("FunctionName", {"Ref": FUNCTION}),
    ("AWS/Lambda", "Invocations"): ("FunctionName", {"Ref": FUNCTION}),
    ("AWS/Lambda", "ConcurrentExecutions"): ("FunctionName", {"Ref": FUNCTION}),
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"): ("QueueName", {"Fn::GetAtt": [QUEUE, "QueueName"]}),
}

ALARMS = {
    "DeadLetterQueueAlarm": ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
    "FunctionErrorsAlarm": ("AWS/Lambda", "Errors"),
    "FunctionThrottlesAlarm": ("AWS/Lambda", "Throttles"),
    "SweeperNotRunningAlarm": ("catalog", "SweeperRuns"),
    "AsksWaitingAlarm": ("catalog", "OldestAskAge"),
    "RunsFailingAlarm": ("catalog", "RunsEnded"),
}
NAMESPACE_REF = "${MetricsNamespace}"

_QUERY = re.compile(
    r'SELECT (?P<fn>AVG|SUM|MAX|MIN|COUNT)\((?P<metric>\w+)\) FROM "(?P<namespace>[^"]+)"'
    r"(?: WHERE (?P<where>\w+) = '(?P<value>\w+)')?"
    r"(?: GROUP BY (?P<group>\w+(?:, \w+)*))?"
)


@pytest.fixture(scope="module")
def sam() -> Template:
    return load_sam()


@pytest.fixture(scope="module")
def cfn(sam: Template) -> Template:
    return render(sam)


def query_problems(query: str) -> list[str]:
    """What is wrong with a Metrics Insights ``query`` on the catalog (empty: nothing)."""
    match = _QUERY.fullmatch(query)
    if match is None:
        return [f"not a query this test reads: {query}"]
    metric, problems = match["metric"], []
    if match["namespace"] != NAMESPACE_REF:
        problems.append(f"{query}: reads {match['namespace']}, not the MetricsNamespace parameter")
    if metric not in CATALOG:
        return [*problems, f"{query}: {metric} is not in the catalog"]
    dimensions = CATALOG[metric][1]
    if match["where"] is not None:
        if match["where"] not in dimensions:
            problems.append(f"{query}: {metric} has no dimension {match['where']}")
        elif match["where"] == "outcome" and match["value"] not in OUTCOMES[metric]:
            problems.append(f"{query}: {metric} has no outcome {match['value']}")
    for dimension in (match["group"] or "").split(", ") if match["group"] else ():
        if dimension not in dimensions:
            problems.append(f"{query}: {metric} has no dimension {dimension} to group by")
    return problems


def _sub_text(value: Any) -> str:
    assert isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str), value
    text: str = value["Fn::Sub"]
    return text


# -- the alarms --------------------------------------------------------------------------------


def test_every_alarm_the_runbook_names_exists_and_nothing_else(cfn: Template) -> None:
    assert set(resources(cfn, "AWS::CloudWatch::Alarm")) == set(ALARMS)


@pytest.mark.parametrize("name", sorted(ALARMS))
def test_each_alarm_points_at_a_real_metric(cfn: Template, name: str) -> None:
    alarm = props(cfn, name)
    source, metric = ALARMS[name]
    if source == "catalog":
        (query,) = alarm["Metrics"]  # one Metrics Insights query, which the alarm watches
        assert query["ReturnData"] is True
        assert query["Period"] == 300
        text = _sub_text(query["Expression"])
        assert query_problems(text) == []
        match = _QUERY.fullmatch(text)
        assert match is not None and match["metric"] == metric
        assert "MetricName" not in alarm and "Namespace" not in alarm
        # Metrics Insights alarms evaluate the last three hours only.
        assert query["Period"] * alarm["EvaluationPeriods"] <= 3 * 3600
    else:
        dimension, value = AWS_METRICS[(source, metric)]
        assert (alarm["Namespace"], alarm["MetricName"]) == (source, metric)
        assert alarm["Dimensions"] == [{"Name": dimension, "Value": value}]
    assert alarm["AlarmName"] == {"Fn::Sub": "${AWS::StackName}-" + _kebab(name.removesuffix("Alarm"))}
    assert "docs/operations.md" in alarm["AlarmDescription"]


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def test_the_failing_runs_alarm_adds_up_every_graph(cfn: Template) -> None:
    """RunsEnded is per graph; a plain alarm would need to know the graphs, and a SEARCH
    expression cannot be alarmed on. The query sums every graph's failed runs."""
    (query,) = props(cfn, "RunsFailingAlarm")["Metrics"]
    assert _sub_text(query["Expression"]) == (
        f"SELECT SUM(RunsEnded) FROM \"{NAMESPACE_REF}\" WHERE outcome = 'failed'"
    )
    assert "GROUP BY" not in query["Expression"]["Fn::Sub"]  # one time series, as an alarm needs
    alarm = props(cfn, "RunsFailingAlarm")
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_the_sweeper_alarm_goes_off_when_the_heartbeat_stops(cfn: Template, sam: Template) -> None:
    alarm = props(cfn, "SweeperNotRunningAlarm")
    (query,) = alarm["Metrics"]
    assert alarm["TreatMissingData"] == "breaching"  # no heartbeat at all is the failure
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("LessThanThreshold", 1)
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 3
    # The default schedule puts a sweep in every window the alarm looks at.
    rate = re.fullmatch(r"rate\((\d+) minutes?\)", sam["Parameters"]["SweepSchedule"]["Default"])
    assert rate is not None
    assert int(rate[1]) * 60 <= query["Period"] * (alarm["EvaluationPeriods"] - 1)


def test_the_asks_waiting_alarm_warns_before_asks_expire(cfn: Template, sam: Template) -> None:
    alarm = props(cfn, "AsksWaitingAlarm")
    assert alarm["Threshold"] == {"Ref": "OldestAskAlarmSeconds"}
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    parameters = sam["Parameters"]
    assert parameters["OldestAskAlarmSeconds"]["Default"] < parameters["AskExpiresAfter"]["Default"]
    # Each ask gets a reminder just past the threshold (engine.policy.with_alarm_reminder):
    # the sweep that posts it reports the ask's age, which the alarm then sees.
    environment = props(sam, "ApprovalBotFunction")["Environment"]["Variables"]
    assert environment["ASK_ALARM_AFTER"] == {"Ref": "OldestAskAlarmSeconds"}


def test_every_alarm_tells_the_topic_and_none_without_one(cfn: Template, sam: Template) -> None:
    wired = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    for name in ALARMS:
        alarm = props(cfn, name)
        assert alarm["AlarmActions"] == wired, name
        assert alarm["OKActions"] == wired, name
        assert alarm.get("ActionsEnabled", True) is True, name
    assert cfn["Conditions"]["HasAlarmTopic"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]}
    parameter = sam["Parameters"]["AlarmTopicArn"]
    assert parameter["Default"] == ""
    pattern = re.compile(parameter["AllowedPattern"])
    for good in ("", "arn:aws:sns:eu-west-1:123456789012:oncall", "arn:aws-us-gov:sns:us-gov-west-1:123456789012:a_b"):
        assert pattern.fullmatch(good), good
    for bad in ("oncall", "arn:aws:sqs:eu-west-1:123456789012:q", "arn:aws:sns:eu-west-1:123:oncall"):
        assert not pattern.fullmatch(bad), bad


def test_the_namespace_is_the_one_the_metrics_are_written_to(cfn: Template, sam: Template) -> None:
    parameter = sam["Parameters"]["MetricsNamespace"]
    assert parameter["Default"] == DEFAULT_NAMESPACE
    env = props(cfn, FUNCTION)["Environment"]["Variables"]
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == {"Ref": "MetricsNamespace"}
    assert env["POWERTOOLS_SERVICE_NAME"] == "approval-bot"
    pattern = re.compile(parameter["AllowedPattern"])
    for good in ("ApprovalBot", "ApprovalBot/staging", "team.approvals-1"):
        assert pattern.fullmatch(good), good
    for bad in ("AWS/Lambda", 'a"b', "two words", ""):  # a quote would break the queries
        assert not pattern.fullmatch(bad), bad


def test_the_query_check_catches_what_it_is_there_for() -> None:
    """The check above fails on the mistakes it is there for (so it cannot pass vacuously)."""
    assert query_problems(f'SELECT SUM(RunsFailed) FROM "{NAMESPACE_REF}"') != []
    assert query_problems(f"SELECT SUM(RunsEnded) FROM \"{NAMESPACE_REF}\" WHERE outcome = 'broken'") != []
    assert query_problems(f'SELECT MAX(OldestAskAge) FROM "{NAMESPACE_REF}" GROUP BY graph') != []
    assert query_problems('SELECT SUM(SweeperRuns) FROM "ApprovalBot"') != []  # not the parameter
    assert query_problems(f'SELECT SUM(SweeperRuns) FROM "{NAMESPACE_REF}"') == []


# -- the dashboard -----------------------------------------------------------------------------


def dashboard_body(cfn: Template) -> dict[str, Any]:
    """The dashboard's JSON with each ``${…}`` CloudFormation substitutes left as its name."""
    (dashboard,) = resources(cfn, "AWS::CloudWatch::Dashboard").values()
    text = _sub_text(dashboard["Properties"]["DashboardBody"])
    names = set(re.findall(r"\$\{([^}]+)\}", text))
    own = set(cfn["Resources"]) | set(cfn["Parameters"])
    for name in names:
        assert name.startswith("AWS::") or name.split(".", 1)[0] in own, f"${{{name}}} names nothing"
    body: dict[str, Any] = json.loads(text)
    return body


def test_the_dashboard_body_parses_and_reads_only_catalog_and_own_metrics(cfn: Template) -> None:
    widgets = dashboard_body(cfn)["widgets"]
    seen: set[str] = set()
    problems: list[str] = []
    for widget in widgets:
        properties = widget["properties"]
        if widget["type"] == "alarm":
            assert properties["alarms"] == [f"${{{name}.Arn}}" for name in ALARMS]
            continue
        if widget["type"] != "metric":
            continue
        assert properties["region"] == "${AWS::Region}"
        queries = [m[0]["expression"] for m in properties["metrics"] if isinstance(m[0], dict)]
        assert len(queries) <= 1, "CloudWatch runs one Metrics Insights query per widget"
        for query in queries:
            problems += query_problems(query)
            match = _QUERY.fullmatch(query)
            seen |= {match["metric"]} if match else set()
        for line in properties["metrics"]:
            if isinstance(line[0], dict):
                continue
            namespace, metric, dimension, value = line[:4]
            expected = AWS_METRICS.get((namespace, metric))
            assert expected is not None, f"{namespace} {metric} is not this stack's metric"
            assert (dimension, value) == (expected[0], _as_sub(expected[1])), line
    assert problems == []
    assert seen == set(CATALOG), f"the dashboard leaves out {set(CATALOG) - seen}"


def _as_sub(value: Any) -> str:
    """How Fn::Sub names the value of ``{"Ref": X}`` or ``{"Fn::GetAtt": [X, A]}``."""
    if "Ref" in value:
        return f"${{{value['Ref']}}}"
    resource, attribute = value["Fn::GetAtt"]
    return f"${{{resource}.{attribute}}}"


def test_the_dashboard_widgets_do_not_overlap(cfn: Template) -> None:
    cells: set[tuple[int, int]] = set()
    for widget in dashboard_body(cfn)["widgets"]:
        x, y, w, h = widget["x"], widget["y"], widget["width"], widget["height"]
        assert x + w <= 24
        mine = {(i, j) for i in range(x, x + w) for j in range(y, y + h)}
        assert not mine & cells, widget
        cells |= mine


_STATISTIC = {"SUM": "Sum", "MAX": "Maximum", "AVG": "Average", "MIN": "Minimum"}


def test_every_query_reads_its_metric_as_the_docs_say(cfn: Template) -> None:
    """Each alarm and widget aggregates a metric the way docs/metrics.md says to read it:
    a sweep's ``DeliveriesOwed`` is 1 per run it saw (a Maximum of those is always 1)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    read_as = {
        cells[0].strip(" `"): cells[-1]
        for line in doc.splitlines()
        if line.startswith("| `") and (cells := [c.strip() for c in line.split("|")[1:-1]])
    }
    widgets = [w for w in dashboard_body(cfn)["widgets"] if w["type"] == "metric"]
    queries = [m[0]["expression"] for w in widgets for m in w["properties"]["metrics"] if isinstance(m[0], dict)]
    for alarm in resources(cfn, "AWS::CloudWatch::Alarm").values():
        queries += [_sub_text(m["Expression"]) for m in alarm["Properties"].get("Metrics", []) if "Expression" in m]
    wrong = []
    for query in (q.replace("${MetricsNamespace}", NAMESPACE_REF) for q in queries if isinstance(q, str)):
        match = _QUERY.fullmatch(query)
        if match is not None and _STATISTIC[match["fn"]] not in read_as[match["metric"]]:
            wrong.append(f"{query}: read as {read_as[match['metric']]}")
    assert wrong == []
