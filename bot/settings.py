"""Configuration from the environment (the names are a fixed contract, listed in the README), validated once.

Secrets are ``SecretStr`` so that a logged settings object never shows them. An empty
variable counts as unset (``env_ignore_empty``), as in ``bot.slack_access``: a template
or compose file that passes ``""`` for "no value" gets the default, not an error.

``load_settings`` turns pydantic's multi-line validation report into one ``ConfigError``
line that names the setting and says what to set, for ``approval-bot`` to print.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Final, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.slack_access import (
    DEFAULT_API_URL,
    DEFAULT_COMMAND,
    ConfigError,
    SlackAccess,
    bad_value,
    checked_command,
    with_trailing_slash,
)
from engine.policy import DEFAULT_EXPIRES_AFTER
from engine.start_limits import DEFAULT_PER_MINUTE, DEFAULT_WAITING, LOOKBACK


def on_lambda() -> bool:
    """Whether this process is a Lambda function's (the runtime sets the function's name)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


_MAX_STARTS_PER_MINUTE: Final = 1000  # a guard against typos: the count is one number in the person's item


class Settings(BaseSettings):
    # hide_input_in_errors: a validation error would otherwise quote the values it read,
    # secrets included, into the log.
    model_config = SettingsConfigDict(
        env_file=None, extra="ignore", populate_by_name=True, hide_input_in_errors=True, env_ignore_empty=True
    )

    slack_bot_token: SecretStr = Field(alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr = Field(alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_api_url: str = Field(default=DEFAULT_API_URL, alias="SLACK_API_URL")
    slack_command: str = Field(default=DEFAULT_COMMAND, alias="SLACK_COMMAND")
    dynamodb_table: str | None = Field(default=None, alias="DYNAMODB_TABLE")
    snapshot_bucket: str | None = Field(default=None, alias="SNAPSHOT_BUCKET")
    graph_modules: Annotated[list[str], NoDecode] = Field(default_factory=list, alias="GRAPH_MODULES")
    # Off outside the demo: a deployment runs the graphs its team wrote, not sample ones
    # that a colleague could start from Slack by accident.
    example_graphs: bool = Field(default=False, alias="EXAMPLE_GRAPHS")
    sqlite_path: str = Field(default=".approval-bot/runs.sqlite3", alias="SQLITE_PATH")
    port: int = Field(default=3000, alias="PORT", ge=1, le=65535)
    # Worker processes of `approval-bot serve` (bot.workers) when --workers is not given.
    workers: int = Field(default=0, alias="WORKERS", ge=0, le=64)
    lease_seconds: float = Field(default=120.0, alias="LEASE_SECONDS", ge=5, allow_inf_nan=False)
    # Read where they are used (graph_defs.models when a graph is built, engine.records at
    # import); checked here too, so that a typo stops the bot at start with one line instead
    # of failing every run, or the first sweep, later.
    graph_model: Literal["bedrock", "offline"] = Field(default="bedrock", alias="GRAPH_MODEL")
    delivery_grace_seconds: float = Field(default=60.0, alias="DELIVERY_GRACE_SECONDS", gt=0, allow_inf_nan=False)
    # Read by engine.brake and bot.directory at import; bounded here so that a typo, or a TTL
    # that would let a removed group member keep deciding for hours, stops the bot at start.
    cancel_check_seconds: float = Field(default=1.0, alias="CANCEL_CHECK_SECONDS", ge=0, le=60, allow_inf_nan=False)
    directory_ttl_seconds: float = Field(
        default=60.0, alias="DIRECTORY_TTL_SECONDS", gt=0, le=3600, allow_inf_nan=False
    )
    # How long an ask waits for a decision when its graph's policy names no expires_after.
    ask_expires_after: float = Field(
        default=DEFAULT_EXPIRES_AFTER, alias="ASK_EXPIRES_AFTER", gt=0, allow_inf_nan=False
    )
    # The asks-waiting alarm's threshold (template.yaml's OldestAskAlarmSeconds): every ask
    # raised gets a reminder at that age, so that the sweeper reads its run and reports
    # OldestAskAge then (engine.policy.with_alarm_reminder). Unset: no such reminder.
    ask_alarm_after: float | None = Field(default=None, alias="ASK_ALARM_AFTER", gt=0, allow_inf_nan=False)
    # How long a finished run is kept (DynamoDB: its TTL; SQLite: the sweeper purges it).
    run_retention_days: float = Field(default=30.0, alias="RUN_RETENTION_DAYS", gt=0, allow_inf_nan=False)
    # A run's status message: streamed where Slack can (else edited in place), edited in
    # place only, or none at all.
    live_progress: Literal["stream", "update", "off"] = Field(default="stream", alias="LIVE_PROGRESS")
    # A fair share of the channel, per person (engine.start_limits); 0 for no limit.
    max_starts_per_minute: int = Field(
        default=DEFAULT_PER_MINUTE, alias="MAX_STARTS_PER_MINUTE", ge=0, le=_MAX_STARTS_PER_MINUTE
    )
    max_waiting_runs: int = Field(default=DEFAULT_WAITING, alias="MAX_WAITING_RUNS", ge=0, le=LOOKBACK)
    # CloudWatch metrics as EMF lines on stdout (bot.metrics); unset: on Lambda only. Read
    # from the environment on Lambda before the settings are (they load after the ack).
    metrics: bool = Field(default_factory=on_lambda, alias="METRICS")
    # text or json (bot.logs); read by the CLI and the Lambda handler before the settings,
    # with the same check, and declared here so that a typo fails `approval-bot` at start.
    log_format: str = Field(default_factory=lambda: "json" if on_lambda() else "text", alias="LOG_FORMAT")

    @field_validator("graph_model", "live_progress", mode="before")
    @classmethod
    def _model_choice(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("metrics", mode="before")
    @classmethod
    def _metrics_on(cls, value: object) -> object:
        from bot.metrics import metrics_on

        return metrics_on(value, on_lambda=on_lambda()) if isinstance(value, str) else value

    @field_validator("log_format", mode="before")
    @classmethod
    def _log_format(cls, value: object) -> object:
        from bot.logs import format_named

        return format_named(value, on_lambda=on_lambda()) if isinstance(value, str) else value

    @field_validator("graph_modules", mode="before")
    @classmethod
    def _split_modules(cls, value: object) -> object:
        if isinstance(value, str):
            return [m.strip() for m in value.split(",") if m.strip()]
        return value

    @field_validator("slack_command")
    @classmethod
    def _command_shape(cls, value: str) -> str:
        return checked_command(value)

    @field_validator("slack_api_url")
    @classmethod
    def _trailing_slash(cls, value: str) -> str:
        return with_trailing_slash(value)

    @field_validator("dynamodb_table", "snapshot_bucket", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return value or None

    def slack_access(self) -> SlackAccess:
        return SlackAccess(
            bot_token=self.slack_bot_token.get_secret_value(),
            signing_secret=self.slack_signing_secret.get_secret_value(),
            api_url=self.slack_api_url,
            command=self.slack_command,
        )


# What a value must be, an example and the default, for the settings pydantic checks by type
# or bound; SLACK_COMMAND's own check (bot.slack_access) words its message itself.
_SHAPES: Final[dict[str, tuple[str, str, str]]] = {
    "PORT": ("a port number (an integer from 1 to 65535)", "8080", "3000"),
    "WORKERS": ("a number of worker processes from 0 (none) to 64", "2", "0"),
    "LEASE_SECONDS": ("a number of seconds, 5 or more", "120", "120"),
    "EXAMPLE_GRAPHS": ("true or false", "true", "false"),
    "GRAPH_MODEL": ("bedrock or offline", "bedrock", "bedrock"),
    "DELIVERY_GRACE_SECONDS": ("a number of seconds, more than 0", "60", "60"),
    "CANCEL_CHECK_SECONDS": ("a number of seconds from 0 to 60", "1", "1"),
    "DIRECTORY_TTL_SECONDS": ("a number of seconds, more than 0 and at most 3600", "60", "60"),
    "ASK_EXPIRES_AFTER": ("a number of seconds, more than 0", "86400", f"{DEFAULT_EXPIRES_AFTER:g}"),
    "ASK_ALARM_AFTER": ("a number of seconds, more than 0", "86400", "no alarm reminder"),
    "RUN_RETENTION_DAYS": ("a number of days, more than 0", "30", "30"),
    "LIVE_PROGRESS": ("stream, update or off", "update", "stream"),
    "MAX_STARTS_PER_MINUTE": (
        f"a whole number from 0 (no limit) to {_MAX_STARTS_PER_MINUTE}",
        "10",
        f"{DEFAULT_PER_MINUTE}",
    ),
    "MAX_WAITING_RUNS": (f"a whole number from 0 (no limit) to {LOOKBACK}", "20", f"{DEFAULT_WAITING}"),
}
_MISSING: Final[dict[str, str]] = {
    "SLACK_BOT_TOKEN": "the app's bot token, xoxb-…, from OAuth & Permissions",
    "SLACK_SIGNING_SECRET": "the app's signing secret, from Basic Information",
}
_SECRETS: Final = frozenset(str(f.alias) for f in Settings.model_fields.values() if "SecretStr" in str(f.annotation))


def load_settings(**values: Any) -> Settings:
    """``Settings`` from the environment (``values`` win); a bad setting is one ``ConfigError`` line.

    Raises:
        ConfigError: a required setting is missing or a value is malformed; the message
            names the first such setting (and how many more there are) and never a secret.
    """
    try:
        return Settings(**values)
    except ValidationError as error:
        raise ConfigError(describe(error)) from None


def describe(error: ValidationError) -> str:
    """One line for pydantic's report on ``Settings``: the first problem, and what to set."""
    problems = error.errors(include_url=False)
    names = [str(p["loc"][0]) if p["loc"] else "?" for p in problems]
    missing = [n for n, p in zip(names, problems, strict=True) if p["type"] == "missing"]
    if missing and missing == names:
        wanted = "; ".join(f"{n} to {_MISSING.get(n, 'a value')}" for n in missing)
        return f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: set {wanted}"
    first, name = problems[0], names[0]
    others = sorted(set(names[1:]) - {name})
    more = f" (also check {', '.join(others)})" if others else ""
    return _problem(name, first) + more


def _problem(name: str, problem: ErrorDetails) -> str:
    if problem["type"] == "missing":
        return f"{name} is not set: set it to {_MISSING.get(name, 'a value')}"
    cause = (problem.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigError):
        return str(cause)
    value = problem.get("input")
    if name in _SECRETS or not isinstance(value, str):
        return f"{name} is not valid ({problem['msg']}); check its value"
    if name in _SHAPES:
        expected, example, default = _SHAPES[name]
        return bad_value(name, value, expected=expected, example=example, default=default)
    shown = value if len(value) <= 60 else value[:57] + "..."
    return f"{name}={shown!r} is not valid ({problem['msg']}); check its value"
