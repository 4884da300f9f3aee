"""``MAX_STARTS_PER_MINUTE`` and ``MAX_WAITING_RUNS``: defaults, 0 for none, one line for a bad value,
and the engine the bot builds applies them."""

from __future__ import annotations

import pytest

from bot.services import build_services
from bot.settings import Settings, load_settings
from bot.slack_access import ConfigError
from engine.start_limits import StartLimits

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-secret-token", "SLACK_SIGNING_SECRET": "signing-secret"}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for field in Settings.model_fields.values():
        monkeypatch.delenv(str(field.alias), raising=False)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def test_defaults_give_every_person_a_share(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = load_settings()
    assert (settings.max_starts_per_minute, settings.max_waiting_runs) == (10, 20)
    monkeypatch.setenv("MAX_STARTS_PER_MINUTE", "0")
    monkeypatch.setenv("MAX_WAITING_RUNS", "")  # empty is unset: the default
    settings = load_settings(SQLITE_PATH=str(tmp_path / "runs.sqlite3"))
    assert (settings.max_starts_per_minute, settings.max_waiting_runs) == (0, 20)
    engine = build_services(settings).engine
    assert engine._start_limits == StartLimits(per_minute=0, waiting=20)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("MAX_STARTS_PER_MINUTE", "-1", "MAX_STARTS_PER_MINUTE='-1' is not a whole number from 0 (no limit) to 1000"),
        ("MAX_STARTS_PER_MINUTE", "ten", "MAX_STARTS_PER_MINUTE='ten' is not a whole number from 0 (no limit) to 1000"),
        ("MAX_STARTS_PER_MINUTE", "2.5", "MAX_STARTS_PER_MINUTE='2.5' is not a whole number"),
        ("MAX_WAITING_RUNS", "101", "MAX_WAITING_RUNS='101' is not a whole number from 0 (no limit) to 100"),
    ],
)
def test_a_bad_value_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    line = str(info.value)
    assert line.startswith(expected), line
    assert f"e.g. {name}=" in line and "or unset it for the default" in line
    assert "\n" not in line and "xoxb-secret-token" not in line
