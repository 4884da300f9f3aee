"""The two readers of the configuration agree: ``Settings`` (pydantic) and ``SlackAccess``
(the cold Lambda ack's, without pydantic) treat empty and malformed values the same way."""

from __future__ import annotations

import os

import pytest

from bot.logs import level_named
from bot.settings import Settings, load_settings
from bot.slack_access import ConfigError, SlackAccess

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-secret-token", "SLACK_SIGNING_SECRET": "signing-secret"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for field in Settings.model_fields.values():
        monkeypatch.delenv(str(field.alias), raising=False)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def test_a_bad_command_is_the_same_line_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_COMMAND", "graph run")
    with pytest.raises(ConfigError) as lambda_path:
        SlackAccess.from_environ(os.environ)
    with pytest.raises(ConfigError) as settings_path:
        load_settings()
    assert str(lambda_path.value) == str(settings_path.value)
    assert str(settings_path.value).startswith("SLACK_COMMAND='graph run' is not a slash command")


def test_empty_variables_are_unset_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLACK_COMMAND", "SLACK_API_URL", "PORT", "LEASE_SECONDS", "EXAMPLE_GRAPHS", "GRAPH_MODULES"):
        monkeypatch.setenv(name, "")
    settings = load_settings()
    access = SlackAccess.from_environ(os.environ)
    assert (
        (settings.slack_command, settings.slack_api_url)
        == (access.command, access.api_url)
        == (
            "/graph",
            "https://slack.com/api/",
        )
    )
    assert (settings.port, settings.lease_seconds, settings.example_graphs, settings.graph_modules) == (
        3000,
        120.0,
        False,
        [],
    )
    monkeypatch.setenv("SLACK_BOT_TOKEN", "")
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN is not set"):
        load_settings()
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN"):
        SlackAccess.from_environ(os.environ)


def test_the_first_problem_is_explained_and_the_others_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "abc")
    monkeypatch.setenv("LEASE_SECONDS", "inf")
    with pytest.raises(ConfigError) as info:
        load_settings()
    line = str(info.value)
    assert line.startswith("PORT='abc' is not a port number (an integer from 1 to 65535); set PORT to one")
    assert line.endswith("(also check LEASE_SECONDS)")
    assert "\n" not in line and "xoxb-secret-token" not in line


def test_example_graphs_is_a_boolean_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().example_graphs is False
    monkeypatch.setenv("EXAMPLE_GRAPHS", "true")
    assert load_settings().example_graphs is True


@pytest.mark.parametrize(("name", "level"), [("debug", 10), (" Warning ", 30), ("", 20), (None, 20)])
def test_log_levels_by_name(name: str | None, level: int) -> None:
    assert level_named(name) == level


def test_a_bad_log_level_names_the_choices() -> None:
    with pytest.raises(ConfigError) as info:
        level_named("LOUD", default="WARNING")
    assert str(info.value) == (
        "LOG_LEVEL='LOUD' is not a logging level (DEBUG, INFO, WARNING, ERROR, CRITICAL); "
        "set LOG_LEVEL to one, e.g. LOG_LEVEL=INFO, or unset it for the default (WARNING)"
    )


def test_ask_expiry_and_run_retention_have_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert (settings.ask_expires_after, settings.run_retention_days) == (3 * 86400.0, 30.0)
    monkeypatch.setenv("ASK_EXPIRES_AFTER", "3600")
    monkeypatch.setenv("RUN_RETENTION_DAYS", "0.5")
    settings = load_settings()
    assert (settings.ask_expires_after, settings.run_retention_days) == (3600.0, 0.5)
    monkeypatch.setenv("ASK_EXPIRES_AFTER", "")
    monkeypatch.setenv("RUN_RETENTION_DAYS", "")
    assert (load_settings().ask_expires_after, load_settings().run_retention_days) == (259200.0, 30.0)


@pytest.mark.parametrize("value", ["0", "-5", "inf", "nan", "soon"])
def test_a_bad_ask_expiry_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ASK_EXPIRES_AFTER", value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(info.value) == (
        f"ASK_EXPIRES_AFTER={value!r} is not a number of seconds, more than 0; set ASK_EXPIRES_AFTER to one, "
        "e.g. ASK_EXPIRES_AFTER=86400, or unset it for the default (259200)"
    )


@pytest.mark.parametrize("value", ["0", "-1", "inf", "30d"])
def test_a_bad_run_retention_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("RUN_RETENTION_DAYS", value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(info.value) == (
        f"RUN_RETENTION_DAYS={value!r} is not a number of days, more than 0; set RUN_RETENTION_DAYS to one, "
        "e.g. RUN_RETENTION_DAYS=30, or unset it for the default (30)"
    )


def test_the_ask_alarm_reminder_is_off_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().ask_alarm_after is None
    monkeypatch.setenv("ASK_ALARM_AFTER", "")  # the template's way of saying "unset"
    assert load_settings().ask_alarm_after is None
    monkeypatch.setenv("ASK_ALARM_AFTER", "86400")
    assert load_settings().ask_alarm_after == 86400.0
    monkeypatch.setenv("ASK_ALARM_AFTER", "a day")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert str(info.value) == (
        "ASK_ALARM_AFTER='a day' is not a number of seconds, more than 0; set ASK_ALARM_AFTER to one, "
        "e.g. ASK_ALARM_AFTER=86400, or unset it for the default (no alarm reminder)"
    )
