"""Configuration from the environment (the names are a fixed contract, listed in the README), validated once.

Secrets are ``SecretStr`` so that a logged settings object never shows them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.slack_access import DEFAULT_API_URL, DEFAULT_COMMAND, SlackAccess, checked_command, with_trailing_slash


class Settings(BaseSettings):
    # hide_input_in_errors: a validation error would otherwise quote the values it read,
    # secrets included, into the log.
    model_config = SettingsConfigDict(env_file=None, extra="ignore", populate_by_name=True, hide_input_in_errors=True)

    slack_bot_token: SecretStr = Field(alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr = Field(alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_api_url: str = Field(default=DEFAULT_API_URL, alias="SLACK_API_URL")
    slack_command: str = Field(default=DEFAULT_COMMAND, alias="SLACK_COMMAND")
    dynamodb_table: str | None = Field(default=None, alias="DYNAMODB_TABLE")
    snapshot_bucket: str | None = Field(default=None, alias="SNAPSHOT_BUCKET")
    graph_modules: Annotated[list[str], NoDecode] = Field(default_factory=list, alias="GRAPH_MODULES")
    sqlite_path: str = Field(default=".approval-bot/runs.sqlite3", alias="SQLITE_PATH")
    port: int = Field(default=3000, alias="PORT", ge=1, le=65535)
    lease_seconds: float = Field(default=120.0, alias="LEASE_SECONDS", ge=5)

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
