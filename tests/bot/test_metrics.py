"""``METRICS`` and ``LOG_FORMAT``: their one-line errors, and the EMF lines Powertools writes."""

from __future__ import annotations

import json
import logging

import pytest

from bot.logs import ContextFilter, JsonFormatter, format_named
from bot.metrics import EmfMeter, metrics_on
from bot.settings import load_settings
from bot.slack_access import ConfigError
from engine import log_context, metrics
from tests.support.emf import datapoints, values_of

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}


def test_the_defaults_are_on_and_json_on_lambda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert (load_settings(**SECRETS).metrics, load_settings(**SECRETS).log_format) == (False, "text")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "approval-bot")
    assert (load_settings(**SECRETS).metrics, load_settings(**SECRETS).log_format) == (True, "json")
    assert (metrics_on("off", on_lambda=True), format_named("TEXT", on_lambda=True)) == (False, "text")


@pytest.mark.parametrize(("name", "value"), [("METRICS", "maybe"), ("LOG_FORMAT", "xml")])
def test_a_bad_value_is_one_line_naming_the_setting(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as bad:
        load_settings(**SECRETS, **{name: value})
    assert str(bad.value).startswith(f"{name}={value!r} is not ") and "\n" not in str(bad.value)


def test_a_flush_writes_one_emf_line_per_dimension_set_and_nothing_when_empty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    meter = EmfMeter(namespace="Test")
    meter.flush()
    assert capsys.readouterr().out == "", "nothing counted, nothing written"
    meter.add(metrics.DECISIONS, 1, graph="g", outcome="approved")
    meter.add(metrics.ASKS_RAISED, 1, graph="g")
    meter.add(metrics.ASKS_RAISED, 1, graph="g")
    meter.add(metrics.SWEEPER_RUNS, 1)
    meter.flush()
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 3
    points = datapoints(out)
    assert values_of(points, "AsksRaised", graph="g") == [1.0, 1.0]
    assert values_of(points, "Decisions", graph="g", outcome="approved") == [1.0]
    assert values_of(points, "SweeperRuns") == [1.0], "no service dimension: exactly the catalog's"
    meter.flush()
    assert capsys.readouterr().out == "", "a flush forgets what it wrote"


def test_a_json_line_names_what_it_is_about() -> None:
    record = logging.LogRecord("approval_bot.audit", logging.INFO, __file__, 1, "audit %s", ("{}",), None)
    with log_context.about(run_id="r1", graph="g", request_id="q1"):
        ContextFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert (line["message"], line["run_id"], line["graph"], line["request_id"]) == ("audit {}", "r1", "g", "q1")
    assert line["name"] == "approval_bot.audit" and line["level"] == "INFO"
